"""The run's Ray actors beside RLlib's: the Go-Explore archive that every env runner shares,
and the curriculum when the run robustifies. The driver reads them after each iteration and
saves or restores them with each checkpoint.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from trainer.config import Deployment
from trainer.ppo.config import TrainConfig
from trainer.ppo.curriculum import start_curriculum


def archive_actor_name(run: str) -> str:
    return f"archive-{run}"


@dataclass(frozen=True)
class RunActors:
    archive: Any
    """the ArchiveActor handle"""
    curriculum: Any
    """the CurriculumActor handle, or None when the run does not robustify"""

    @classmethod
    def start(cls, config: TrainConfig, deployment: Deployment) -> RunActors:
        """Both actors, for a run inside its Ray."""
        from trainer.ppo.envs import ArchiveActor

        # On the driver's node: a cluster's worker nodes may go away mid-run, the driver's not.
        archive = ArchiveActor.options(  # type: ignore[attr-defined]
            name=archive_actor_name(config.run), scheduling_strategy=on_this_node()
        ).remote(deployment.store_url, f"archives/{config.run}")
        return cls(archive=archive, curriculum=start_curriculum(config))

    def archive_cells(self) -> int:
        import ray

        return int(ray.get(self.archive.size.remote()))

    def save_archive(self) -> None:
        import ray

        ray.get(self.archive.save.remote())

    def curriculum_position(self) -> dict[str, Any] | None:
        """Where the curriculum's starts are (for the status), or None without one."""
        import ray

        if self.curriculum is None:
            return None
        return ray.get(self.curriculum.position.remote())  # type: ignore[no-any-return]

    def curriculum_state(self) -> dict[str, Any] | None:
        """The curriculum's state for a checkpoint, or None without one."""
        import ray

        if self.curriculum is None:
            return None
        return ray.get(self.curriculum.state.remote())  # type: ignore[no-any-return]

    def restore_curriculum(self, state: dict[str, Any]) -> None:
        import ray

        if self.curriculum is not None:
            ray.get(self.curriculum.restore.remote(state))


def on_this_node() -> Any:
    """A scheduling strategy that keeps an actor on the driver's node."""
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    return NodeAffinitySchedulingStrategy(ray.get_runtime_context().get_node_id(), soft=False)

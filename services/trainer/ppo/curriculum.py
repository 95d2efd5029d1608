"""The backward curriculum of robustification, shared by a run's envs.

``phase=robustify`` (or ``both``, after phase 1: ``trainer.ppo.phase_one``) trains PPO on
the backward curriculum over the winning trajectory (``koholint.explore.curriculum``): the
run's ``CurriculumActor`` (a named Ray actor, like the Go-Explore archive's) replays it once
into states every 8 steps and holds the ``LocalCurriculum``; each env's
``CurriculumWrapper`` asks it where to start and tells it how each episode ended.
"""

from __future__ import annotations

import hashlib
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

import ray

from koholint.explore.curriculum import SUCCESS_WINDOW, LocalCurriculum, Start, episode_budget
from koholint.explore.trajectory import winning_demo

if TYPE_CHECKING:
    from trainer.ppo.config import Curriculum, TrainConfig

MAX_TRAJECTORY_BYTES = 1_000_000
logger = logging.getLogger(__name__)


DEMO_STATE_EVERY = 8
"""a start state every this many steps of the trajectory"""


def read_trajectory(path: str) -> bytes:
    """The winning actions; refuse a missing, empty, oversized or out-of-range file."""
    file = Path(path)
    if not file.is_file():
        raise ValueError(
            f"curriculum trajectory {path}: no such file; run `koholint explore` first"
        )
    actions = file.read_bytes()
    if not 0 < len(actions) <= MAX_TRAJECTORY_BYTES:
        raise ValueError(
            f"curriculum trajectory {path}: {len(actions)} actions, expected 1..{MAX_TRAJECTORY_BYTES}"
        )
    if max(actions) > 8:
        raise ValueError(f"curriculum trajectory {path}: action {max(actions)} is not in 0..8")
    return actions


def fit_episodes(config: TrainConfig) -> TrainConfig:
    """`config` with episodes as long as its curriculum's first step may take (the
    curriculum's budget from demo step 0: time_factor x the trajectory's length + 64) where
    env.max_episode_steps is shorter and ``curriculum.fit_episodes`` is on. The recipe's
    episode length suits routes of its world; a longer route would leave the policy less
    time from power-on, in training and in every evaluation, than the demo steps it learns."""
    settings = config.curriculum
    if config.phase not in ("robustify", "both") or not settings.fit_episodes:
        return config
    length = len(read_trajectory(settings.trajectory))
    needed = episode_budget(settings.time_factor, length)
    if needed <= config.env.max_episode_steps:
        return config
    logger.info("episodes of up to %d steps (env.max_episode_steps %d): a %d-step trajectory",
                needed, config.env.max_episode_steps, length,
                extra={"event": "episodes_fitted"})  # fmt: skip
    env = config.env.model_copy(update={"max_episode_steps": needed})
    return config.model_copy(update={"env": env})


def build_curriculum(
    settings: Curriculum,
    max_episode_steps: int,
    *,
    window: int = SUCCESS_WINDOW,
    every: int = DEMO_STATE_EVERY,
) -> LocalCurriculum:
    actions = read_trajectory(settings.trajectory)
    demo = winning_demo(actions, every=every, heal=settings.heal_starts)
    return LocalCurriculum(
        demo, len(actions), settings, window=window, max_episode_steps=max_episode_steps
    )


@ray.remote(num_cpus=0)
class CurriculumActor:
    """The run's curriculum, shared by every env runner."""

    def __init__(self, settings: Curriculum, max_episode_steps: int) -> None:
        self.curriculum = build_curriculum(settings, max_episode_steps)
        self.trajectory_sha256 = hashlib.sha256(read_trajectory(settings.trajectory)).hexdigest()

    def state(self) -> dict[str, Any]:
        """For the checkpoint: the position, and which trajectory it is a position on."""
        return {**self.curriculum.state(), "trajectory_sha256": self.trajectory_sha256}

    def restore(self, state: dict[str, Any]) -> bool:
        """Continue where a checkpoint's curriculum was; False (from the end) if it was over
        another trajectory."""
        if state.get("trajectory_sha256") != self.trajectory_sha256:
            logger.warning("the checkpoint's curriculum was over another trajectory: "
                           "starting from its end", extra={"event": "curriculum_not_restored"})  # fmt: skip
            return False
        self.curriculum.restore(state)
        return True

    def start(self, seed: int) -> Start:
        return self.curriculum.start(seed)

    def report(self, step: int, won: bool) -> None:
        self.curriculum.report(step, won)

    def offer(self, level: int, state: bytes) -> None:
        self.curriculum.offer(level, state)

    def swarm_level(self) -> int:
        return self.curriculum.swarm_level()

    def position(self) -> dict[str, Any]:
        """For progress lines: the demo step episodes start from, and the success there."""
        curriculum = self.curriculum
        later = curriculum.later_success_rate()
        return {
            "start_step": curriculum.start_step, "demo_length": curriculum.demo_length,
            "success_rate": curriculum.success_rate(), "moves": len(curriculum.moves),
            "swarm_level": curriculum.swarm_level(), "pass": curriculum.pass_number,
            **({"later_success_rate": later} if later is not None else {}),
        }  # fmt: skip


class RayCurriculumSource:
    """CurriculumSource over the CurriculumActor: reports and offers are sent without waiting."""

    def __init__(self, actor: Any) -> None:
        self.actor = actor

    def start(self, seed: int) -> Start:
        return ray.get(self.actor.start.remote(seed))  # type: ignore[no-any-return]

    def report(self, step: int, won: bool) -> None:
        self.actor.report.remote(step, won)

    def offer(self, level: int, state: bytes) -> None:
        self.actor.offer.remote(level, state)

    def swarm_level(self) -> int:
        return ray.get(self.actor.swarm_level.remote())  # type: ignore[no-any-return]


def curriculum_actor_name(run: str) -> str:
    return f"curriculum-{run}"


def start_curriculum(config: TrainConfig) -> Any:
    """The run's CurriculumActor when it robustifies (call inside the run's Ray), else None."""
    if config.phase not in ("robustify", "both"):
        return None
    name = curriculum_actor_name(config.run)
    return CurriculumActor.options(name=name).remote(  # type: ignore[attr-defined]
        config.curriculum, config.env.max_episode_steps
    )

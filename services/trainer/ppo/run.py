"""A training run, top to bottom: preflight, phase one, Ray, PPO iterations, checkpoints, curve.

run = TrainingRun(TrainConfig.load({"total_env_steps": 20_000}), Deployment())
run.run(on_iteration=print)   # blocking; run.stop() from another thread ends it early
"""

from __future__ import annotations

import logging
import secrets
import threading
import time
from pathlib import Path

from koholint.game.rom import playing
from koholint.schemas.trainer import RunStatus
from trainer.config import Deployment
from trainer.ledger import checkpoint_owner
from trainer.ppo.actors import RunActors, archive_actor_name
from trainer.ppo.checkpoints import Checkpoints
from trainer.ppo.config import TrainConfig, TrainConfigError
from trainer.ppo.curriculum import fit_episodes
from trainer.ppo.curve import LearningCurve
from trainer.ppo.envs import announce_run_segments, drain_exports
from trainer.ppo.evaluation import PolicyEvaluator
from trainer.ppo.iterations import IterationLoop, OnIteration
from trainer.ppo.phase_one import run_phase_one
from trainer.ppo.preflight import Preflight, preflight
from trainer.ppo.ray_node import ray_for_run
from trainer.ppo.rllib.algorithm import build_algorithm
from trainer.ppo.rllib.warm_start import DaggerRounds, clone_demonstration
from trainer.ppo.shaping import ShapingCounts, ShapingDriver

logger = logging.getLogger("trainer.ppo.run")


def unique_run_name() -> str:
    """From the time, plus random hex: two runs started in the same second differ."""
    return time.strftime("run-%Y%m%d-%H%M%S-") + secrets.token_hex(3)


def named(config: TrainConfig) -> TrainConfig:
    """`config` with its run named: as given, else (in a copy) the run of the checkpoint it
    resumes from, else a new unique name."""
    if config.run:
        return config
    resuming = config.resume_from
    return config.model_copy(
        update={"run": checkpoint_owner(resuming) if resuming else unique_run_name()}
    )


class TrainingRun:
    """One training run of `config` on `deployment`: its status, live, and its learning curve.

    ``preflight()`` checks what can be checked before any work (``run()`` calls it when the
    caller has not). ``run()`` then, in this order: explores to a first win when the phase
    asks for it; starts Ray (local, or joins the cluster); builds RLlib's PPO with the run's
    archive and curriculum actors; resumes from a checkpoint when asked; trains iteration by
    iteration, checkpointing as it goes; and draws the learning curve. ``stop()``, from
    another thread, ends it after the iteration in progress, with a checkpoint.

    The config given is never changed: ``config`` is the run's own, its name resolved
    (``named``) and, after phase one, the trajectory found (each a copy).
    """

    def __init__(self, config: TrainConfig, deployment: Deployment | None = None) -> None:
        self.config = named(config)
        self.deployment = deployment or Deployment()
        self.status = RunStatus(run=self.config.run, resumed_from=self.config.resume_from or None)
        self._curve = LearningCurve()
        self._stop = threading.Event()
        self._preflight: Preflight | None = None

    @property
    def curve(self) -> list[dict[str, float]]:
        """env steps, rooms, cells and archive cells after each iteration (the learning curve)"""
        return self._curve.points

    def stop(self) -> None:
        self._stop.set()
        if self.status.state == "running":
            self.status.state = "stopping"

    def preflight(self) -> None:
        """Fail before any work, naming the setting, when something cannot work."""
        self._preflight = preflight(self.config, self.deployment)
        world = self._preflight.world
        self.status.world = {"title": world.title, "sha256": world.sha256, "path": str(world.path)}

    def run(self, on_iteration: OnIteration | None = None) -> RunStatus:
        """Train to the end (or the stop); the final status. A failure is recorded in the
        status, logged and raised."""
        try:
            if self._preflight is None:
                self.preflight()
            self._run(on_iteration)
        except TrainConfigError as error:  # the message says it all: no traceback
            self._failed(str(error))
            logger.info(
                "run %s refused: %s", self.config.run, error, extra={"event": "run_refused"}
            )
            raise
        except Exception as error:
            self._failed(str(error))
            logger.exception("training run failed", extra={"event": "run_failed"})
            raise
        return self.status

    def _failed(self, error: str) -> None:
        self.status.state = "failed"
        self.status.error = error

    def _run(self, on_iteration: OnIteration | None) -> None:
        import torch

        # The driver's learner shares the cores with the env runners (BENCHMARKS.md).
        torch.set_num_threads(1)
        if self._preflight is None:
            raise RuntimeError("preflight() first")
        run_dir = Path(self.deployment.run_dir).resolve() / self.config.run
        run_dir.mkdir(parents=True, exist_ok=True)
        with playing(self._preflight.world.path):
            if self.config.phase in ("explore", "both") and not self._explore(
                run_dir, on_iteration
            ):
                return
            cpus = max(2, self.config.num_env_runners + 1)
            with ray_for_run(self.deployment.ray_address, run_dir, cpus):
                self._train(self._preflight, run_dir, on_iteration)

    def _explore(self, run_dir: Path, on_iteration: OnIteration | None) -> bool:
        """Phase one: Go-Explore to a first win. Whether training follows; with phase
        "both", it robustifies the win found (none found is an error)."""
        trajectory = run_phase_one(self.config, self.status, run_dir, on_iteration)
        if self.config.phase == "explore":
            self.status.state = "finished"  # won or not: run_dir/explore.json says
            return False
        if trajectory is None:
            raise RuntimeError(
                "phase 1 found no win within explore.max_env_steps: nothing to robustify"
            )
        curriculum = self.config.curriculum.model_copy(update={"trajectory": str(trajectory)})
        self.config = self.config.model_copy(update={"curriculum": curriculum})
        self.status.phase_one_env_steps = self.status.env_steps
        self.status.env_steps = 0  # the training phase counts its own steps
        if self.status.phase_one_env_steps >= self.config.total_env_steps:
            raise RuntimeError(
                f"phase 1 and its shortening took {self.status.phase_one_env_steps} env steps "
                f"of total_env_steps {self.config.total_env_steps}: none are left for phase 2; "
                "raise total_env_steps (--total-env-steps)"
            )
        return True

    def _train(self, checked: Preflight, run_dir: Path, on_iteration: OnIteration | None) -> None:
        """PPO inside the run's Ray (robustifying when the phase says so), from the start or
        from the checkpoint it resumes."""
        config = self.config = fit_episodes(self.config)
        actors = RunActors.start(config, self.deployment)
        algo = build_algorithm(config, self.deployment, archive_actor_name(config.run))
        checkpoints = Checkpoints(checked.store, config, run_dir, actors)
        resumed_steps = 0
        if checked.resume is not None:
            resumed_steps = checkpoints.restore(algo, checked.resume, self.status, self._curve)
            announce_run_segments(config, self.deployment, self.status.export)
        elif config.phase in ("robustify", "both"):
            cloned = clone_demonstration(algo, config, run_dir)
            if cloned is not None:
                self.status.other_work["teachers"] = int(cloned["env_steps"])
        shaping = self._shaping(checked)
        self.status.state = "running"
        evaluator = PolicyEvaluator(config, run_dir, self.status.env_steps)
        dagger = DaggerRounds(config, run_dir, self.status.env_steps)
        loop = IterationLoop(algo, config, self.status, self._curve, actors, checkpoints,
                             shaping, resumed_steps, evaluator if evaluator.enabled else None,
                             dagger if dagger.enabled else None)  # fmt: skip
        try:
            loop.run(self._stop, on_iteration)
        finally:
            drain_exports(algo, config, self.status)
            announce_run_segments(config, self.deployment, self.status.export)
        algo.stop()
        self._curve.write_png(run_dir / "learning_curve.png")
        self.status.state = "stopped" if self._stop.is_set() else "finished"

    def _shaping(self, checked: Preflight) -> ShapingCounts | None:
        """Shaping's driver side, when a reward model or a hand-written potential is chosen."""
        if self.config.reward.hand_potential != "off":
            return ShapingCounts()
        if not self.config.reward.model:
            return None
        return ShapingDriver(self.config.reward.model, checked.store,
                             redis_url=self.deployment.redis_url,
                             redis_timeout_s=self.deployment.redis_timeout_s, run=self.config.run,
                             encoding=self.config.env.observation)  # fmt: skip

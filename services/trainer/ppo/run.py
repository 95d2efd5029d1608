"""A training run, top to bottom: preflight, Ray, PPO on the new API stack, checkpoints, curve.

run = TrainingRun(resolve({"total_env_steps": 20_000}), Deployment())
run.run(on_iteration=print)   # blocking; run.stop() from another thread ends it early
"""

from __future__ import annotations

import json
import logging
import secrets
import socket
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from koholint.env.export import EXPORT_COUNTS
from koholint.env.zelda import MILESTONES
from koholint.reward.model import RewardModelError
from koholint.schemas.trainer import CheckpointRecord, RunStatus
from koholint.store import ObjectStore, StoreError, open_store
from trainer.ledger import (
    RUN_STATE_FILE,
    CheckpointLedger,
    UnknownCheckpointError,
    checkpoint_owner,
)
from trainer.ppo.config import Deployment, TrainConfig, TrainConfigError
from trainer.ppo.curriculum import run_phase_one, start_curriculum
from trainer.ppo.ray_node import check_cluster, host_and_port, ray_for_run
from trainer.ppo.rllib.algorithm import build_algorithm
from trainer.ppo.shaping import ShapingDriver, check_reward_model

logger = logging.getLogger("trainer.ppo.run")


def unique_run_name() -> str:
    """From the time, plus random hex: two runs started in the same second differ."""
    return time.strftime("run-%Y%m%d-%H%M%S-") + secrets.token_hex(3)


class TrainingRun:
    def __init__(self, config: TrainConfig, deployment: Deployment | None = None) -> None:
        if not config.run:
            resuming = config.resume_from
            config.run = checkpoint_owner(resuming) if resuming else unique_run_name()
        self.config = config
        self.deployment = deployment or Deployment()
        self.status = RunStatus(run=config.run, resumed_from=config.resume_from or None)
        self.curve: list[dict[str, float]] = []
        """env steps, rooms, cells and archive cells after each iteration (the learning curve)"""
        self._stop = threading.Event()
        self._store: ObjectStore | None = None
        self._resume: CheckpointRecord | None = None
        self._shaping: ShapingDriver | None = None
        self._curriculum: Any = None

    def stop(self) -> None:
        self._stop.set()
        if self.status.state == "running":
            self.status.state = "stopping"

    def preflight(self) -> None:
        """Fail before any work, naming the setting, when something cannot work."""
        deployment, config = self.deployment, self.config
        try:
            self._store = open_store(deployment.store_url)
            self._store.check()
        except StoreError as error:
            raise TrainConfigError(
                f"store_url / KOHOLINT_TRAINER_STORE_URL={deployment.store_url!r}: {error}",
                "store_url",
            ) from error
        if config.resume_from:
            try:
                ledger = CheckpointLedger(self._store, checkpoint_owner(config.resume_from))
                self._resume = ledger.get(config.resume_from)
            except (UnknownCheckpointError, StoreError) as error:
                raise TrainConfigError(f"resume_from: {error}", "resume_from") from None
        try:
            check_reward_model(config.reward_model, self._store)
        except RewardModelError as error:
            raise TrainConfigError(f"reward_model: {error}", "reward_model") from None
        if config.planner in ("http", "llm-d") and not deployment.planner_url:
            raise TrainConfigError(
                f"planner={config.planner} needs planner_url (KOHOLINT_TRAINER_PLANNER_URL)",
                "planner_url",
            )
        if deployment.ray_address:
            check_cluster(deployment.ray_address)
        if deployment.redis_url:
            _reachable("redis_url / KOHOLINT_TRAINER_REDIS_URL", deployment.redis_url, 6379)

    def run(self, on_iteration: Callable[[RunStatus], None] | None = None) -> RunStatus:
        try:
            if self._store is None:
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

    def _run(self, on_iteration: Callable[[RunStatus], None] | None) -> None:
        import torch

        torch.set_num_threads(1)  # two threads under contention made updates ten times slower here
        if self._store is None:
            raise RuntimeError("preflight() first")
        run_dir = Path(self.deployment.run_dir).resolve() / self.config.run
        run_dir.mkdir(parents=True, exist_ok=True)
        if self.config.phase in ("explore", "both"):
            trajectory = run_phase_one(self.config, self.status, run_dir, on_iteration)
            if self.config.phase == "explore":
                self.status.state = "finished"  # won or not: run_dir/explore.json says
                return
            if trajectory is None:
                raise RuntimeError(
                    "phase 1 found no win within explore_env_steps: nothing to robustify"
                )
            self.config.curriculum_trajectory = str(trajectory)
            self.status.env_steps = 0  # the training phase counts its own steps
        cpus = max(2, self.config.num_env_runners + 1)
        with ray_for_run(self.deployment.ray_address, run_dir, cpus):
            self._train(self._store, run_dir, on_iteration)

    def _train(
        self, store: ObjectStore, run_dir: Path, on_iteration: Callable[[RunStatus], None] | None
    ) -> None:
        from trainer.ppo.envs import ArchiveActor

        config = self.config
        # On the driver's node: a cluster's worker nodes may go away mid-run, the driver's not.
        archive = ArchiveActor.options(  # type: ignore[attr-defined]
            name=f"archive-{config.run}", scheduling_strategy=on_this_node()
        ).remote(self.deployment.store_url, f"archives/{config.run}")
        self._curriculum = start_curriculum(config)
        algo = build_algorithm(config, self.deployment, f"archive-{config.run}")
        ledger = CheckpointLedger(store, config.run)
        resumed_steps = 0
        if self._resume is not None:
            resumed_steps = self._restore(algo, store, self._resume, ledger, run_dir)
        self._shaping = ShapingDriver(config.reward_model, store, redis_url=self.deployment.redis_url,
                                      run=config.run) if config.reward_model else None  # fmt: skip
        self.status.state = "running"
        started, last_steps = time.perf_counter(), self.status.env_steps
        while not self._stop.is_set() and self.status.env_steps < config.total_env_steps:
            if self._shaping:  # between iterations: a new version reaches the envs
                self._shaping.before_iteration(algo)
            result = algo.train()
            self._update(result, archive)
            if self._shaping:
                report = self._shaping.after_iteration(algo)
                self.status.reward_model, self.status.shaped_steps = (
                    report.version,
                    report.steps_by_version,
                )
            elapsed = time.perf_counter() - started
            # Steps this process sampled: a resumed run's lifetime count starts at the checkpoint.
            sampled = self.status.env_steps - resumed_steps
            self.status.steps_per_second = sampled / elapsed if elapsed else 0.0
            if self.status.iterations % config.checkpoint_every_iterations == 0:
                self._checkpoint(algo, ledger, archive, run_dir)
                last_steps = self.status.env_steps
            if on_iteration:
                on_iteration(self.status)
        if self.status.env_steps != last_steps:
            self._checkpoint(algo, ledger, archive, run_dir)
        algo.stop()
        write_learning_curve(self.curve, run_dir / "learning_curve.png")
        self.status.state = "stopped" if self._stop.is_set() else "finished"

    def _restore(
        self,
        algo: Any,
        store: ObjectStore,
        record: CheckpointRecord,
        ledger: CheckpointLedger,
        run_dir: Path,
    ) -> int:
        """Continue from the checkpoint: weights, step count, iterations, the curve so far, and
        the curriculum's position."""
        import ray

        owner = CheckpointLedger(store, record.run)
        folder = owner.download(record, Path(tempfile.mkdtemp(dir=run_dir)))
        algo.restore_from_path(str(folder))
        saved = folder / RUN_STATE_FILE
        if saved.exists():
            state = json.loads(saved.read_text())
            self.status.iterations = int(state["iterations"])
            self.curve = [p for p in state["curve"] if p["env_steps"] <= record.step]
            if self._curriculum is not None and "curriculum" in state:
                ray.get(self._curriculum.restore.remote(state["curriculum"]))
        self.status.env_steps = record.step
        self.status.checkpoints = len(ledger.records)
        return record.step

    def _update(self, result: dict[str, Any], archive: Any) -> None:
        import ray

        runners = result.get("env_runners", {})
        self.status.iterations += 1
        self.status.env_steps = int(
            runners.get("num_env_steps_sampled_lifetime", self.status.env_steps)
        )
        # An iteration in which no episode ended reports no episode metrics: keep the last.
        for name, key in (("episode_return_mean", "episode_return_mean"), ("rooms_mean", "rooms"),
                          ("cells_mean", "cells"), ("win_rate", "won")):  # fmt: skip
            value = _number(runners.get(key))
            if value is not None:
                setattr(self.status, name, value)
        for milestone in MILESTONES:
            value = _number(runners.get(f"reached_{milestone}"))
            if value is not None:
                self.status.reached[milestone] = max(self.status.reached.get(milestone, 0.0), value)
        for name in EXPORT_COUNTS:
            value = _number(runners.get(f"export_segments_{name}"))
            if value is not None:
                self.status.export[name] = int(value)
        self.status.archive_cells = int(ray.get(archive.size.remote()))
        if self._curriculum is not None:
            self.status.curriculum = ray.get(self._curriculum.position.remote())
        self.curve.append({
            "env_steps": self.status.env_steps, "rooms": self.status.rooms_mean or 0.0,
            "cells": self.status.cells_mean or 0.0, "archive_cells": self.status.archive_cells,
        })  # fmt: skip

    def _checkpoint(self, algo: Any, ledger: CheckpointLedger, archive: Any, run_dir: Path) -> None:
        import ray

        from koholint.baselines.trained import CHECKPOINT_POLICY_FOLDER
        from trainer.policy_export import ExportError, export_policy

        with tempfile.TemporaryDirectory(dir=run_dir) as directory:
            algo.save_to_path(directory)
            settings = self.config.model_dump(mode="json")
            state = {"iterations": self.status.iterations, "curve": self.curve, "config": settings}
            if self._curriculum is not None:  # a resumed run goes on from here, not the end
                state["curriculum"] = ray.get(self._curriculum.state.remote())
            (Path(directory) / RUN_STATE_FILE).write_text(json.dumps(state))
            # The small policy file `koholint play --policy checkpoint:...` reads (no Ray needed);
            # the checkpoint is whole without it (`koholint export-policy` rebuilds it): no crash.
            try:
                export_policy(Path(directory), Path(directory) / CHECKPOINT_POLICY_FOLDER,
                              settings, self.status.env_steps)  # fmt: skip
            except (ExportError, OSError) as error:
                logger.warning("checkpoint without a policy file: %s", error,
                               extra={"event": "policy_file_failed"})  # fmt: skip
            metrics = {
                name: value for name, value in (
                    ("episode_return_mean", self.status.episode_return_mean), ("rooms", self.status.rooms_mean),
                    ("cells", self.status.cells_mean), ("win_rate", self.status.win_rate),
                    ("archive_cells", float(self.status.archive_cells)),
                ) if value is not None
            }  # fmt: skip
            metrics.update(self._shaping.metrics() if self._shaping else {})
            ledger.record(self.status.env_steps, Path(directory), metrics)
        ray.get(archive.save.remote())
        self.status.checkpoints = len(ledger.records)


def _number(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return None if number != number else number  # NaN: no episode ended yet


def _reachable(setting: str, address: str, default_port: int) -> None:
    host, port = host_and_port(address, default_port)
    try:
        socket.create_connection((host, port), timeout=3).close()
    except OSError as error:
        raise TrainConfigError(
            f"{setting}={address!r} is unreachable ({error}); check the address or unset it",
            setting.split(" ")[0],
        ) from error


def on_this_node() -> Any:
    """A scheduling strategy that keeps an actor on the driver's node."""
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    return NodeAffinitySchedulingStrategy(ray.get_runtime_context().get_node_id(), soft=False)


def write_learning_curve(curve: list[dict[str, float]], path: Path) -> None:
    """Rooms and cells discovered against env steps, as PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(1, 2, figsize=(10, 4))
    steps = [point["env_steps"] for point in curve]
    axes[0].plot(steps, [point["rooms"] for point in curve], marker="o")
    axes[0].set(title="rooms per episode (mean)", xlabel="env steps")
    axes[1].plot(
        steps, [point["cells"] for point in curve], marker="o", label="cells per episode (mean)"
    )
    axes[1].plot(
        steps, [point["archive_cells"] for point in curve], marker="s", label="archive cells"
    )
    axes[1].set(title="cells", xlabel="env steps")
    axes[1].legend()
    figure.tight_layout()
    figure.savefig(path)
    plt.close(figure)

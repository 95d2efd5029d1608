"""A training run, top to bottom: preflight, Ray, PPO on the new API stack, checkpoints, curve.

run = TrainingRun(TrainConfig(total_env_steps=20_000))
run.run(on_iteration=print)   # blocking; run.stop() from another thread ends it early
"""

from __future__ import annotations

import logging
import socket
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from koholint.env.export import EXPORT_COUNTS
from koholint.env.zelda import MILESTONES
from koholint.store import ObjectStore, StoreError, open_store
from trainer.ledger import CheckpointLedger
from trainer.ppo.config import TrainConfig, TrainConfigError

logger = logging.getLogger("trainer.ppo.run")


@dataclass
class RunStatus:
    run: str
    state: str = "starting"  # starting, running, stopping, finished, stopped, failed
    iterations: int = 0
    env_steps: int = 0
    steps_per_second: float = 0.0
    episode_return_mean: float | None = None
    rooms_mean: float | None = None
    cells_mean: float | None = None
    win_rate: float | None = None
    archive_cells: int = 0
    checkpoints: int = 0
    error: str | None = None
    export: dict[str, int] = field(default_factory=lambda: dict.fromkeys(EXPORT_COUNTS, 0))
    """episode segments the export queues wrote, dropped (queue full) and failed to write"""
    reached: dict[str, float] = field(default_factory=dict)
    """per milestone (sword, puzzle, dungeon, key, instrument): the highest share of
    episodes (100-episode window) that had reached it"""
    curve: list[dict[str, float]] = field(default_factory=list)

    def public(self) -> dict[str, Any]:
        document = asdict(self)
        document.pop("curve")
        return document


def preflight(config: TrainConfig) -> ObjectStore:
    """Fail before any work, naming the setting, when a dependency cannot work."""
    try:
        store = open_store(config.store_url)
        store.check()
    except StoreError as error:
        raise TrainConfigError(
            f"store_url / KOHOLINT_STORE_URL={config.store_url!r}: {error}"
        ) from error
    if config.ray_address:
        _reachable("ray_address / RAY_ADDRESS", config.ray_address, 10001)
    if config.redis_url:
        _reachable("redis_url / KOHOLINT_REDIS_URL", config.redis_url, 6379)
    return store


def _reachable(setting: str, address: str, default_port: int) -> None:
    parsed = urlparse(address if "://" in address else f"tcp://{address}")
    host, port = parsed.hostname or "127.0.0.1", parsed.port or default_port
    try:
        socket.create_connection((host, port), timeout=3).close()
    except OSError as error:
        raise TrainConfigError(
            f"{setting}={address!r} is unreachable ({error}); check the address or unset it"
        ) from error


class TrainingRun:
    def __init__(self, config: TrainConfig) -> None:
        config.run = config.run or time.strftime("run-%Y%m%d-%H%M%S")
        self.config = config
        self.status = RunStatus(config.run)
        self._stop = threading.Event()

    def stop(self) -> None:
        self._stop.set()
        if self.status.state == "running":
            self.status.state = "stopping"

    def run(self, on_iteration: Callable[[RunStatus], None] | None = None) -> RunStatus:
        try:
            self._run(on_iteration)
        except Exception as error:
            self.status.state = "failed"
            self.status.error = str(error)
            logger.exception("training run failed", extra={"event": "run_failed"})
            raise
        return self.status

    def _run(self, on_iteration: Callable[[RunStatus], None] | None) -> None:
        import ray
        import torch

        torch.set_num_threads(1)  # two threads under contention made updates ten times slower here
        config = self.config
        store = preflight(config)
        run_dir = Path(config.run_dir).resolve() / config.run
        run_dir.mkdir(parents=True, exist_ok=True)
        _init_ray(config, run_dir)
        try:
            self._train(config, store, run_dir, on_iteration)
        finally:
            ray.shutdown()

    def _train(
        self,
        config: TrainConfig,
        store: ObjectStore,
        run_dir: Path,
        on_iteration: Callable[[RunStatus], None] | None,
    ) -> None:
        from trainer.ppo.envs import ArchiveActor

        archive = ArchiveActor.options(name=f"archive-{config.run}").remote(
            config.store_url, f"archives/{config.run}"
        )
        algo = build_algorithm(config, f"archive-{config.run}")
        ledger = CheckpointLedger(store, config.run)
        if config.resume_from:
            record = ledger.get(config.resume_from)
            algo.restore_from_path(
                str(ledger.download(record, Path(tempfile.mkdtemp(dir=run_dir))))
            )
        self.status.state = "running"
        started, last_steps = time.perf_counter(), 0
        while not self._stop.is_set() and self.status.env_steps < config.total_env_steps:
            result = algo.train()
            self._update(result, archive)
            elapsed = time.perf_counter() - started
            self.status.steps_per_second = self.status.env_steps / elapsed if elapsed else 0.0
            if self.status.iterations % config.checkpoint_every_iterations == 0:
                self._checkpoint(algo, ledger, archive, run_dir)
                last_steps = self.status.env_steps
            if on_iteration:
                on_iteration(self.status)
        if self.status.env_steps != last_steps:
            self._checkpoint(algo, ledger, archive, run_dir)
        algo.stop()
        write_learning_curve(self.status.curve, run_dir / "learning_curve.png")
        self.status.state = "stopped" if self._stop.is_set() else "finished"

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
        self.status.curve.append({
            "env_steps": self.status.env_steps, "rooms": self.status.rooms_mean or 0.0,
            "cells": self.status.cells_mean or 0.0, "archive_cells": self.status.archive_cells,
        })  # fmt: skip

    def _checkpoint(self, algo: Any, ledger: CheckpointLedger, archive: Any, run_dir: Path) -> None:
        import ray

        with tempfile.TemporaryDirectory(dir=run_dir) as directory:
            algo.save_to_path(directory)
            metrics = {
                name: value for name, value in (
                    ("episode_return_mean", self.status.episode_return_mean), ("rooms", self.status.rooms_mean),
                    ("cells", self.status.cells_mean), ("win_rate", self.status.win_rate),
                    ("archive_cells", float(self.status.archive_cells)),
                ) if value is not None
            }  # fmt: skip
            ledger.record(self.status.env_steps, Path(directory), metrics)
        ray.get(archive.save.remote())
        self.status.checkpoints = len(ledger.records)


def _number(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return None if number != number else number  # NaN: no episode ended yet


def _init_ray(config: TrainConfig, run_dir: Path) -> None:
    import ray

    if config.ray_address:
        ray.init(address=config.ray_address, log_to_driver=False)
        return
    cpus = max(2, config.num_env_runners + 1)
    ray.init(num_cpus=cpus, num_gpus=0, include_dashboard=False, log_to_driver=False,
             _temp_dir=str(Path(tempfile.gettempdir()) / "koholint-ray"), ignore_reinit_error=True)  # fmt: skip


def build_algorithm(config: TrainConfig, archive_actor: str) -> Any:
    return ppo_config(config, archive_actor).build_algo()


def ppo_config(config: TrainConfig, archive_actor: str) -> Any:
    """PPO on the new API stack; CPU only: no GPU is requested anywhere."""
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.core.rl_module.default_model_config import DefaultModelConfig
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec
    from ray.tune.registry import register_env

    from trainer.ppo import sampling
    from trainer.ppo.callbacks import KoholintCallbacks
    from trainer.ppo.envs import ENV_NAME, make_train_env

    register_env(ENV_NAME, make_train_env)
    env_config = {
        "start_state": config.start_state, "frame_skip": config.frame_skip,
        "sticky_action_probability": config.sticky_action_probability, "latch_steps": config.latch_steps,
        "max_episode_steps": config.episode_length, "reward_mode": config.reward_mode, "info_state": False,
        "run": config.run, "store_url": config.store_url, "redis_url": config.redis_url,
        "archive_actor": archive_actor, "curiosity_weight": config.curiosity_weight,
        "archive_restart_every": config.archive_restart_every,
        "export_every_episodes": config.export_every_episodes, "segment_steps": config.segment_steps,
        "planner": config.planner, "planner_url": config.planner_url,
    }  # fmt: skip
    return (
        PPOConfig()
        .environment(ENV_NAME, env_config=env_config)
        .env_runners(
            num_env_runners=config.num_env_runners,
            num_envs_per_env_runner=config.envs_per_env_runner,
            rollout_fragment_length=config.fragment_length(),
            num_cpus_per_env_runner=1,
            num_gpus_per_env_runner=0,
        )  # fmt: skip
        .env_runners(**_sampling_settings(config.lean_sampling))
        .learners(num_learners=0, num_gpus_per_learner=0)
        .training(
            train_batch_size_per_learner=config.train_batch_size,
            minibatch_size=config.minibatch_size,
            num_epochs=config.num_epochs,
            lr=config.learning_rate,
            gamma=config.gamma,
            entropy_coeff=config.entropy_coeff,
        )  # fmt: skip
        .rl_module(
            rl_module_spec=RLModuleSpec(
                module_class=sampling.LeanPPOModule if config.lean_sampling else None,
                model_config=DefaultModelConfig(
                    fcnet_hiddens=list(config.hidden_sizes),
                    fcnet_activation="tanh",
                    vf_share_layers=False,
                ),
            )
        )  # fmt: skip
        .callbacks(KoholintCallbacks)
        .debugging(seed=config.seed)
    )


def _sampling_settings(lean: bool) -> dict[str, Any]:
    """Env-runner settings of the lean sampling path (see trainer/sampling.py), or none."""
    from trainer.ppo import sampling

    if not lean:
        return {}
    return {
        "gym_env_vectorize_mode": "vector_entry_point",
        "add_default_connectors_to_env_to_module_pipeline": False,
        "add_default_connectors_to_module_to_env_pipeline": False,
        "env_to_module_connector": sampling.env_to_module,
        "module_to_env_connector": sampling.module_to_env,
    }


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

"""The trainer's configuration: one dataclass, every field documented, environment overrides."""

from __future__ import annotations

import dataclasses
import os
import re
from dataclasses import dataclass
from typing import Any

# Environment variables that override fields (documented in docs/trainer.md).
ENV_OVERRIDES = {
    "RAY_WORKERS": "num_env_runners",
    "ENVS_PER_WORKER": "envs_per_env_runner",
    "EPISODE_LENGTH": "episode_length",
    "BATCH_SIZE": "train_batch_size",
    "MINIBATCH_SIZE": "minibatch_size",
    "TOTAL_STEPS": "total_env_steps",
    "FRAME_SKIP": "frame_skip",
    "RAY_ADDRESS": "ray_address",
    "KOHOLINT_STORE_URL": "store_url",
    "KOHOLINT_REDIS_URL": "redis_url",
    "KOHOLINT_RUN_DIR": "run_dir",
    "PLANNER": "planner",
    "PLANNER_URL": "planner_url",
}
PLANNERS = ("off", "rules", "local", "llm-d", "http")


class TrainConfigError(ValueError):
    """A setting that cannot work; the message names it and the fix."""


@dataclass
class TrainConfig:
    """Everything a training run needs; `koholint train` and POST /v1/runs take the same fields."""

    run: str = ""
    """run name; empty picks one from the time"""
    total_env_steps: int = 20_000
    """stop after this many environment steps"""
    num_env_runners: int = 2
    """Ray env-runner processes sampling in parallel (0 = sample in the driver); two on two
    cores samples 1.5x faster than one (the driver learns while they wait)"""
    envs_per_env_runner: int = 4
    """environments stepped by each runner (several per runner share RLlib's per-step
    overhead: 8 in one runner step 1.5x the rate of 2)"""
    episode_length: int = 1024
    """steps before an episode is truncated"""
    rollout_fragment_length: int = 0
    """steps each env contributes per sample; 0 = the batch split evenly over all envs"""
    train_batch_size: int = 1024
    """steps per PPO update"""
    minibatch_size: int = 256
    """steps per SGD minibatch"""
    num_epochs: int = 4
    """passes over each batch"""
    learning_rate: float = 3e-4
    """Adam step size"""
    gamma: float = 0.99
    """discount"""
    entropy_coeff: float = 0.01
    """entropy bonus, keeps the policy exploring"""
    hidden_sizes: list[int] = dataclasses.field(default_factory=lambda: [64, 64])
    """hidden layers of the policy and of the value network (separate, tanh); SB3's
    MlpPolicy default — RLlib's own default (256, 256) costs ~3x per update here"""
    lean_sampling: bool = True
    """sample through the trainer's own connectors and vector env (trainer/sampling.py,
    koholint.env.vector) instead of RLlib's general ones: same data, ~1.5x the env steps/s"""
    frame_skip: int = 4
    """emulator frames per step"""
    sticky_action_probability: float = 0.25
    """chance the previous action repeats (robustness to timing)"""
    latch_steps: int = 1
    """steps a chosen direction stays held"""
    reward_mode: str = "progress+coverage"
    """sparse, progress or progress+coverage"""
    start_state: str = "start_of_play"
    """named start state of each episode"""
    curiosity_weight: float = 1.0
    """RND weight before the 30% budget; 0 turns curiosity off"""
    archive_restart_every: int = 4
    """every K-th episode of an env starts from a frontier cell of the archive (0 = no archive)"""
    export_every_episodes: int = 20
    """every N-th episode of an env is exported as segments (0 = never)"""
    segment_steps: int = 256
    """steps per exported segment"""
    checkpoint_every_iterations: int = 5
    """save a checkpoint every this many training iterations (and at the end)"""
    seed: int = 0
    """seeds the envs and the policy"""
    store_url: str = "runs/store"
    """object store: a path, file:// or s3:// (episodes, archive, checkpoints)"""
    redis_url: str = ""
    """Redis for the koholint.segments stream; empty = no bus"""
    ray_address: str = ""
    """join this Ray cluster (KubeRay); empty starts Ray locally"""
    run_dir: str = "runs"
    """local folder for Ray's temporary files, the learning curve and logs"""
    resume_from: str = ""
    """a checkpoint name from the ledger to resume from"""
    planner: str = "off"
    """hybrid control in dialog and puzzle: off, rules, local, llm-d (in-process backends)
    or http (the planner service at planner_url)"""
    planner_url: str = ""
    """the planner service (planner=http) or the language-model base URL (local, llm-d)"""

    def fragment_length(self) -> int:
        """Steps per env per sample: the configured length, or the batch over all envs."""
        if self.rollout_fragment_length:
            return self.rollout_fragment_length
        envs = max(self.num_env_runners, 1) * self.envs_per_env_runner
        return max(1, -(-self.train_batch_size // envs))

    def validate(self) -> None:
        if self.num_env_runners < 0 or self.envs_per_env_runner < 1:
            raise TrainConfigError(
                f"num_env_runners={self.num_env_runners}, envs_per_env_runner={self.envs_per_env_runner}: "
                "use num_env_runners >= 0 (0 samples in the driver) and envs_per_env_runner >= 1"
            )
        if self.minibatch_size < 1 or self.train_batch_size < self.minibatch_size:
            raise TrainConfigError(
                f"train_batch_size={self.train_batch_size} is smaller than minibatch_size={self.minibatch_size}: "
                "raise BATCH_SIZE or lower MINIBATCH_SIZE"
            )
        checks = [
            (
                re.fullmatch(r"[A-Za-z0-9_.-]{0,128}", self.run) is not None,
                f"run={self.run!r}: use up to 128 letters, digits, '.', '_' or '-'",
            ),
            (self.total_env_steps >= 1, "total_env_steps must be >= 1"),
            (self.episode_length >= 1, "episode_length must be >= 1"),
            (1 <= self.frame_skip <= 60, "frame_skip must be 1..60"),
            (self.rollout_fragment_length >= 0, "rollout_fragment_length must be >= 0 (0 = auto)"),
            (self.num_epochs >= 1, "num_epochs must be >= 1"),
            (isinstance(self.lean_sampling, bool), "lean_sampling must be true or false"),
            (
                isinstance(self.hidden_sizes, list)
                and 1 <= len(self.hidden_sizes) <= 8
                and all(isinstance(n, int) and 1 <= n <= 4096 for n in self.hidden_sizes),
                "hidden_sizes must be 1 to 8 layer widths, each 1..4096",
            ),
            (self.learning_rate > 0, "learning_rate must be > 0"),
            (0 < self.gamma <= 1, "gamma must be in (0, 1]"),
            (self.curiosity_weight >= 0, "curiosity_weight must be >= 0"),
            (self.archive_restart_every >= 0, "archive_restart_every must be >= 0 (0 = off)"),
            (self.export_every_episodes >= 0, "export_every_episodes must be >= 0"),
            (self.checkpoint_every_iterations >= 1, "checkpoint_every_iterations must be >= 1"),
            (self.planner in PLANNERS, f"planner must be one of {', '.join(PLANNERS)}"),
            (
                self.planner not in ("http", "llm-d") or bool(self.planner_url),
                f"planner={self.planner} needs planner_url (PLANNER_URL)",
            ),
            (
                self.reward_mode in ("sparse", "progress", "progress+coverage"),
                "reward_mode must be sparse, progress or progress+coverage",
            ),
        ]
        for ok, message in checks:
            if not ok:
                raise TrainConfigError(message)

    @classmethod
    def from_mapping(
        cls, values: dict[str, Any], environ: dict[str, str] | None = None
    ) -> TrainConfig:
        """Fields from `values`, then overridden by the environment variables in ENV_OVERRIDES."""
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise TrainConfigError(f"unknown settings {unknown}; known: {sorted(known)}")
        settings = dict(values)
        environ = os.environ if environ is None else environ
        types = {f.name: f.type for f in dataclasses.fields(cls)}
        for variable, name in ENV_OVERRIDES.items():
            if environ.get(variable):
                raw = environ[variable]
                try:
                    settings[name] = int(raw) if types[name] == "int" else raw
                except ValueError:
                    raise TrainConfigError(f"{variable}={raw!r} must be an integer") from None
        config = cls(**settings)
        config.validate()
        return config

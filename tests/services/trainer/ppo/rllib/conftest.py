"""Shared by the learner tests: a one-CPU local Ray and a small PPO on CartPole."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import ray


def start_local_ray() -> None:
    ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False, ignore_reinit_error=True,
             _temp_dir=str(Path(tempfile.gettempdir()) / "koholint-ray"))  # fmt: skip


@pytest.fixture(scope="module")
def local_ray() -> Iterator[None]:
    start_local_ray()
    yield
    ray.shutdown()


def cartpole_ppo(fragment: int, module_class: Any = None, **training: Any) -> Any:
    """PPO on CartPole, sampled and learned in this process (seed 0); RLlib's default module
    unless `module_class`."""
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec

    return (
        PPOConfig()
        .rl_module(rl_module_spec=RLModuleSpec(module_class=module_class))
        .environment("CartPole-v1")
        .env_runners(num_env_runners=0, rollout_fragment_length=fragment)
        .learners(num_learners=0)
        .training(**training)
        .debugging(seed=0)
        .build_algo()
    )

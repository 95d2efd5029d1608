"""A learning test: PPO with coverage and curiosity raises its episode return over training
(Go-Explore restarts off, so every episode starts at start_of_play)."""

from __future__ import annotations

from pathlib import Path

import pytest

from trainer.config import Deployment
from trainer.ppo.config import TrainConfig
from trainer.ppo.run import TrainingRun


@pytest.mark.slow
def test_return_rises_with_training(tmp_path: Path):
    config = TrainConfig.load(
        {
            "run": "learn", "total_env_steps": 24_576, "num_env_runners": 1, "envs_per_env_runner": 4,
            "env": {"max_episode_steps": 256}, "train_batch_size": 1024, "minibatch_size": 256, "num_epochs": 4,
            "export_every_episodes": 0, "checkpoint_every_iterations": 100, "seed": 1,
            "archive_restart_every": 1_000_000,  # every episode from the start: the policy, not the archive, must improve
        },
        environ={},
    )  # fmt: skip
    deployment = Deployment(store_url=str(tmp_path / "store"), run_dir=str(tmp_path / "runs"))
    returns: list[float] = []
    TrainingRun(config, deployment).run(
        on_iteration=lambda s: returns.append(s.episode_return_mean or 0.0)
    )
    early, late = sum(returns[1:5]) / 4, sum(returns[-4:]) / 4
    print(
        f"episode return: early {early:.2f}, late {late:.2f}; all {[round(r, 2) for r in returns]}"
    )
    assert late > early * 1.2

"""OverlappedPPO: the next batch sampled while the learner updates, exactly one update behind."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import ray
import torch
from ray.rllib.algorithms.ppo.torch.ppo_torch_learner import PPOTorchLearner
from ray.rllib.core.columns import Columns
from ray.rllib.evaluation.postprocessing import Postprocessing

from trainer.config import Deployment
from trainer.ppo.config import TrainConfig
from trainer.ppo.rllib.algorithm import learner_settings, ppo_config
from trainer.ppo.rllib.overlap import (
    MAX_IMPORTANCE_WEIGHT,
    PROXIMAL_LEARNERS,
    TAG,
    OverlappedPPO,
    ProximalPolicy,
    sample_with_metrics,
)

PLAIN = {"curiosity_weight": 0.0, "archive_restart_every": 0, "export_every_episodes": 0}
SMALL = {"num_env_runners": 2, "envs_per_env_runner": 2, "train_batch_size": 256,
         "minibatch_size": 128, "num_epochs": 1}  # fmt: skip


@pytest.fixture(scope="module")
def local_ray() -> Iterator[None]:
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


def build(tmp_path: Path, overlap: bool) -> Any:
    config = TrainConfig.load({**PLAIN, **SMALL, "overlap_sampling": overlap}, environ={})
    deployment = Deployment(store_url=str(tmp_path / "store"), run_dir=str(tmp_path))
    return ppo_config(config, deployment, archive_actor="").build_algo()


def lags(algo: Any, iterations: int) -> list[tuple[float, int]]:
    """Per iteration: updates between the weights the batch was sampled with and the
    learner's after this iteration's update, and the env steps it sampled."""
    found = []
    for _ in range(iterations):
        result = algo.train()
        learner = result["learners"]["default_policy"]["weights_seq_no"]
        found.append((learner - result["env_runners"]["weights_seq_no"],
                      result["env_runners"]["num_env_steps_sampled"]))  # fmt: skip
    return found


@pytest.mark.parametrize(("overlap", "lag"), [(False, 1), (True, 2)])
def test_every_batch_is_sampled_one_update_behind_when_overlapped(
    local_ray: None, tmp_path: Path, overlap: bool, lag: int
):
    algo = build(tmp_path, overlap)
    try:
        assert isinstance(algo, OverlappedPPO) == overlap
        found = lags(algo, 5)
    finally:
        algo.stop()
    # RLlib's PPO samples with the weights its update starts from (1 = the update itself);
    # overlapped, one update older — from the second iteration on (the first two batches
    # both use the initial weights: seq no 0).
    assert found[1:] == [(lag, 256)] * 4
    assert found[0][1] == 256


def test_a_batch_that_comes_back_short_is_topped_up(local_ray: None, tmp_path: Path):
    algo = build(tmp_path, overlap=True)
    runners = algo.env_runner_group
    try:
        algo.train()
        runners.fetch_ready_async_reqs(tags=TAG, timeout_seconds=None)  # drop the batch in flight
        runners.foreach_env_runner_async(sample_with_metrics, tag=TAG, remote_worker_ids=[1])
        result = algo.train()  # half a batch came back: the runners sample the rest
        assert result["env_runners"]["num_env_steps_sampled"] >= 256
    finally:
        algo.stop()


def test_training_goes_on_when_a_runner_dies_mid_sample(local_ray: None, tmp_path: Path):
    algo = build(tmp_path, overlap=True)
    try:
        algo.train()  # the next batch is now in flight on both runners
        ray.kill(algo.env_runner_group._worker_manager._actors[1])
        for _ in range(2):
            result = algo.train()
            assert result["env_runners"]["num_env_steps_sampled"] >= 256
        assert algo.env_runner_group.num_healthy_remote_workers() >= 1
    finally:
        algo.stop()


class FixedPolicy:
    """A module whose training forward gives fixed logits (the learner's proximal policy)."""

    def __init__(self, logits: torch.Tensor) -> None:
        self.logits = logits

    def forward_train(self, batch: dict[str, Any]) -> dict[str, Any]:
        return {Columns.ACTION_DIST_INPUTS: self.logits}


def test_the_proximal_policy_replaces_the_samplers_and_weights_the_advantages():
    proximal_logits = torch.log(torch.tensor([[0.5, 0.5], [0.9, 0.1], [0.2, 0.8]]))
    sampler = torch.tensor([0.25, 0.9, 0.1])  # what the sampler gave each action
    batch = {"default_policy": {
        Columns.OBS: torch.zeros(3, 4),
        Columns.ACTIONS: torch.tensor([0, 0, 1]),
        Columns.ACTION_LOGP: torch.log(sampler),
        Columns.ACTION_DIST_INPUTS: torch.zeros(3, 2),
        Postprocessing.ADVANTAGES: torch.tensor([1.0, -2.0, 3.0]),
    }}  # fmt: skip
    out = ProximalPolicy()(rl_module={"default_policy": FixedPolicy(proximal_logits)},
                           batch=batch, episodes=[])["default_policy"]  # fmt: skip
    proximal = torch.tensor([0.5, 0.9, 0.8])
    torch.testing.assert_close(out[Columns.ACTION_LOGP], torch.log(proximal))
    torch.testing.assert_close(out[Columns.ACTION_DIST_INPUTS], proximal_logits)
    # weights 0.5/0.25 = 2, 0.9/0.9 = 1, 0.8/0.1 = 8 truncated at MAX_IMPORTANCE_WEIGHT
    weights = torch.tensor([2.0, 1.0, MAX_IMPORTANCE_WEIGHT])
    torch.testing.assert_close(out[Postprocessing.ADVANTAGES],
                               torch.tensor([1.0, -2.0, 3.0]) * weights)  # fmt: skip


@pytest.mark.parametrize("sil_weight", [0.0, 0.1])
def test_overlapped_runs_learn_decoupled(tmp_path: Path, sil_weight: float):
    def learner(overlap: bool) -> type:
        config = TrainConfig.load({**PLAIN, "overlap_sampling": overlap, "sil": {"weight": sil_weight}},
                         environ={})  # fmt: skip
        return learner_settings(config).get("learner_class", PPOTorchLearner)

    assert learner(overlap=True) is PROXIMAL_LEARNERS[learner(overlap=False)]
    assert issubclass(learner(overlap=True), learner(overlap=False))

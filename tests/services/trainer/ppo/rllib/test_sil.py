"""Self-imitation: the buffer keeps the top K, the loss is finite, buffered good actions
become likelier, and the loss runs inside RLlib's PPO learner."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch

from trainer.ppo.rllib.sil import (
    Segment,
    SilSettings,
    TopSegments,
    demo_segment,
    discounted_returns,
    sil_loss,
    sil_training_settings,
)

from .conftest import cartpole_ppo, start_local_ray


def segment(score: float, steps: int = 3, action: int = 0) -> Segment:
    return Segment(score, np.full((steps, 4), score, np.float32), np.full(steps, action),
                   np.full(steps, score, np.float32))  # fmt: skip


def test_the_buffer_keeps_the_top_k_by_return():
    buffer = TopSegments(3)
    for score in [1.0, 5.0, -2.0, 4.0, 0.5, 9.0, 3.0]:
        buffer.offer(segment(score))
    assert buffer.scores() == [9.0, 5.0, 4.0]
    assert not buffer.offer(segment(2.0))
    observations, actions, returns = buffer.sample(50)
    assert set(returns.tolist()) <= {9.0, 5.0, 4.0}
    assert observations.shape == (50, 4)


def test_discounted_returns_run_to_the_segment_end():
    np.testing.assert_allclose(discounted_returns(np.array([1.0, 0.0, 2.0]), 0.5), [1.5, 1.0, 2.0])


def ppo_module(seed: int = 0):
    from ray.rllib.algorithms.ppo.torch.default_ppo_torch_rl_module import (
        DefaultPPOTorchRLModule,
    )
    from ray.rllib.core.rl_module.default_model_config import DefaultModelConfig
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec

    torch.manual_seed(seed)
    return RLModuleSpec(
        module_class=DefaultPPOTorchRLModule,
        observation_space=gym.spaces.Box(-1, 1, (4,), np.float32),
        action_space=gym.spaces.Discrete(3),
        model_config=DefaultModelConfig(fcnet_hiddens=[16], vf_share_layers=False),
    ).build()


def test_sil_makes_buffered_good_actions_likelier_and_its_loss_is_finite():
    from ray.rllib.core.columns import Columns

    module = ppo_module()
    buffer = TopSegments(2)
    rng = np.random.default_rng(0)
    for score in (10.0, 8.0, 0.1):
        buffer.offer(Segment(score, rng.uniform(-1, 1, (20, 4)).astype(np.float32),
                             np.full(20, 2), np.full(20, score, np.float32)))  # fmt: skip
    observations, actions, returns = (torch.from_numpy(a) for a in buffer.sample(64))

    def chosen_log_probability() -> float:
        with torch.no_grad():
            logits = module.forward_train({Columns.OBS: observations})[Columns.ACTION_DIST_INPUTS]
        return float(torch.log_softmax(logits, -1)[:, 2].mean())

    before = chosen_log_probability()
    optimizer = torch.optim.Adam(module.parameters(), lr=1e-2)
    for _ in range(20):
        loss, stats = sil_loss(module, observations, actions, returns)
        assert torch.isfinite(loss)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    assert chosen_log_probability() > before + 0.1
    assert stats["imitated_share"] > 0


def test_a_pinned_segment_is_never_evicted_and_is_sampled():
    buffer = TopSegments(2)
    buffer.pin(segment(-5.0, steps=10, action=2))
    for score in (1.0, 2.0, 3.0, 4.0):
        buffer.offer(segment(score))
    assert buffer.scores() == [4.0, 3.0, -5.0]
    assert len(buffer) == 3
    _, actions, returns = buffer.sample(400)
    assert -5.0 in returns.tolist()
    assert 0.4 < float(np.mean(actions == 2)) < 0.8  # 10 of the 16 kept steps


def test_the_demo_segment_is_the_winning_trajectory_under_the_training_rewards():
    from pathlib import Path

    from koholint.env.zelda import EnvConfig

    path = Path(__file__).parents[5] / "benchmarks" / "results" / "win" / "explore-seed0.actions"
    settings = SilSettings(weight=0.1, gamma=0.99, demo_trajectory=str(path),
                           demo_env=EnvConfig(reward_mode="sparse"))  # fmt: skip
    demo = demo_segment(settings)
    assert demo.score == pytest.approx(10.0)  # sparse: the win only
    assert demo.actions.tolist() == list(path.read_bytes())
    assert demo.returns[-1] == pytest.approx(10.0)
    assert demo.returns[0] == pytest.approx(10.0 * 0.99 ** (len(demo.actions) - 1), rel=1e-4)


def test_settings_are_validated_and_off_by_default():
    assert sil_training_settings(SilSettings()) == {}
    with pytest.raises(ValueError, match="capacity"):
        SilSettings(weight=1.0, capacity=0)


@pytest.mark.slow  # ~30 s: Ray and two PPO iterations
def test_the_sil_loss_runs_inside_rllibs_ppo_learner():
    import ray

    settings = SilSettings(weight=0.5, capacity=4, period=1, batch_size=32, gamma=0.99)
    start_local_ray()
    try:
        algo = cartpole_ppo(64, train_batch_size_per_learner=128, minibatch_size=64, num_epochs=1,
                            **sil_training_settings(settings))  # fmt: skip
        for _ in range(2):
            result = algo.train()
        learner = algo.learner_group._learner
        assert 0 < len(learner.sil_buffer) <= 4
        stats = result["learners"]["default_policy"]
        assert np.isfinite(stats["sil_policy_loss"])
        assert np.isfinite(stats["sil_value_loss"])
        assert stats["sil_buffer_best_return"] == max(learner.sil_buffer.scores())
        algo.stop()
    finally:
        ray.shutdown()

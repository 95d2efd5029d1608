"""RND: novelty is rewarded, familiarity is not, and curiosity never tops 30% of extrinsic."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from koholint.env.rnd import IntrinsicBudget, Rnd, RndConfig, sparse_allowance

steps = st.lists(st.tuples(st.floats(-10, 10), st.floats(0, 100)), min_size=1, max_size=200)


@settings(max_examples=300, deadline=None)
@given(episode=steps)
def test_intrinsic_paid_never_exceeds_30_percent_of_extrinsic_so_far(episode):
    budget = IntrinsicBudget()
    extrinsic_so_far = paid_so_far = 0.0
    for extrinsic, intrinsic in episode:
        paid = budget.grant(extrinsic, intrinsic)
        extrinsic_so_far += abs(extrinsic)
        paid_so_far += paid
        assert 0.0 <= paid <= intrinsic + 1e-9
        assert paid_so_far <= 0.3 * extrinsic_so_far + 1e-9


def test_curiosity_pays_between_extrinsic_rewards_while_budget_lasts():
    budget = IntrinsicBudget()
    assert budget.grant(0.0, 1.0) == 0.0  # nothing earned yet
    assert budget.grant(1.0, 0.1) == pytest.approx(0.1)
    assert budget.grant(0.0, 0.1) == pytest.approx(0.1)  # no extrinsic this step, budget left
    assert budget.grant(0.0, 1.0) == pytest.approx(0.1)  # the rest of the 0.3
    assert budget.grant(0.0, 1.0) == 0.0
    budget.reset()
    assert budget.grant(0.0, 1.0) == 0.0


def test_budget_ratio_is_checked():
    with pytest.raises(ValueError, match="ratio"):
        IntrinsicBudget(1.5)


def test_seen_observations_become_less_rewarding_than_new_ones():
    rng = np.random.default_rng(0)
    familiar = rng.uniform(-1, 0, size=(256, 128)).astype(np.float32)
    novel = rng.uniform(0, 1, size=(256, 128)).astype(np.float32)
    rnd = Rnd(RndConfig(seed=3))
    rnd.observation_stats.update(familiar)
    before = rnd.errors(familiar).mean()
    for _ in range(300):
        rnd.train(familiar)
    assert rnd.errors(familiar).mean() < 0.2 * before
    assert rnd.errors(novel).mean() > 3 * rnd.errors(familiar).mean()
    rewards_novel = rnd.intrinsic_rewards(novel)
    assert rewards_novel.shape == (256,)
    assert rewards_novel.dtype == np.float32


def test_same_seed_same_target():
    observations = np.ones((4, 128), np.float32)
    assert np.allclose(
        Rnd(RndConfig(seed=5)).errors(observations), Rnd(RndConfig(seed=5)).errors(observations)
    )


def test_numpy_errors_equal_the_torch_networks_after_training():
    import torch

    rng = np.random.default_rng(1)
    observations = rng.uniform(-1, 1, size=(32, 128)).astype(np.float32)
    rnd = Rnd(RndConfig(seed=2))
    for _ in range(5):  # the optimizer updates the predictor in place
        rnd.train(observations)
    inputs = torch.from_numpy(rnd._normalise(observations))
    with torch.no_grad():
        expected = (rnd.predictor(inputs) - rnd.target(inputs)).pow(2).mean(dim=1).numpy()
    np.testing.assert_allclose(rnd.errors(observations), expected, rtol=1e-4, atol=1e-7)


def test_running_std_of_single_values_matches_batch_updates():
    values = np.random.default_rng(3).normal(2.0, 3.0, size=500)
    one_by_one, batched = Rnd().return_stats, Rnd().return_stats
    for value in values:
        one_by_one.update_one(float(value))
    batched.update(values)
    assert one_by_one.count == pytest.approx(batched.count)
    assert float(one_by_one.mean) == pytest.approx(float(batched.mean))
    assert float(one_by_one.std) == pytest.approx(float(batched.std))


def test_under_the_sparse_reward_curiosity_pays_from_the_wins_reward_spread_over_the_episode():
    allowance = sparse_allowance("sparse", win_weight=10.0, max_episode_steps=100)
    assert allowance == pytest.approx(0.1)
    assert sparse_allowance("progress", 10.0, 100) == 0.0  # dense rewards: the rule as it was
    without = IntrinsicBudget()
    assert [without.grant(0.0, 1.0) for _ in range(3)] == [0.0, 0.0, 0.0]
    budget = IntrinsicBudget(allowance_per_step=allowance)
    assert budget.grant(0.0, 1.0) == pytest.approx(0.03)  # 0.3 * 0.1 * 1 step
    assert budget.grant(0.0, 0.0) == 0.0  # nothing asked: the budget is kept
    assert budget.grant(0.0, 1.0) == pytest.approx(0.06)  # 0.3 * 0.1 * 3 - 0.03
    paid = sum(budget.grant(0.0, 1.0) for _ in range(97))
    assert 0.09 + paid == pytest.approx(0.3 * 10.0)  # the whole episode: 30% of the win
    budget.reset()
    assert budget.grant(0.0, 1.0) == pytest.approx(0.03)


@settings(max_examples=200, deadline=None)
@given(episode=steps, allowance=st.floats(0, 1))
def test_with_an_allowance_intrinsic_stays_within_30_percent_of_the_larger_measure(
    episode, allowance
):
    budget = IntrinsicBudget(allowance_per_step=allowance)
    extrinsic_so_far = paid_so_far = 0.0
    for step, (extrinsic, intrinsic) in enumerate(episode, start=1):
        paid_so_far += budget.grant(extrinsic, intrinsic)
        extrinsic_so_far += abs(extrinsic)
        assert paid_so_far <= 0.3 * max(extrinsic_so_far, allowance * step) + 1e-9

"""RND: novelty is rewarded, familiarity is not, and curiosity never tops 30% of extrinsic."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from koholint.env.rnd import IntrinsicBudget, Rnd, RndConfig

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

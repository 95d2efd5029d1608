"""RND: novelty is rewarded, familiarity is not, and curiosity never tops 30% of extrinsic."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from koholint.rnd import Rnd, RndConfig, cap_intrinsic

rewards = arrays(np.float32, st.integers(1, 64), elements=st.floats(-10, 10, width=32))


@settings(max_examples=200, deadline=None)
@given(data=st.data(), extrinsic=rewards)
def test_cap_keeps_intrinsic_within_30_percent_of_extrinsic(data, extrinsic):
    intrinsic = data.draw(arrays(np.float32, extrinsic.shape, elements=st.floats(0, 100, width=32)))
    capped = cap_intrinsic(extrinsic, intrinsic)
    assert np.abs(capped).sum() <= 0.3 * np.abs(extrinsic).sum() + 1e-3
    assert np.all(capped <= intrinsic + 1e-6)  # only ever scaled down


def test_cap_leaves_small_curiosity_alone_and_zeroes_it_without_extrinsic():
    extrinsic = np.array([1.0, 0.0, 0.0, 1.0], np.float32)
    intrinsic = np.array([0.1, 0.2, 0.1, 0.1], np.float32)
    np.testing.assert_allclose(cap_intrinsic(extrinsic, intrinsic), intrinsic)
    np.testing.assert_allclose(cap_intrinsic(np.zeros(4, np.float32), intrinsic), 0.0)
    big = cap_intrinsic(extrinsic, intrinsic * 100)
    assert np.abs(big).sum() == pytest.approx(0.6)
    assert big[1] > big[0]  # the most novel step keeps the largest share


def test_cap_rejects_mismatched_batches():
    with pytest.raises(ValueError, match="shape"):
        cap_intrinsic(np.zeros(3), np.zeros(4))


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

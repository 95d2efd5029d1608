"""Bradley-Terry fitting recovers the order of segments whose true reward is known."""

from __future__ import annotations

import numpy as np
import pytest
from reward_synthetic import synthetic_segments, true_segment_reward

from reward_model.bradley_terry import FitConfig, TrainingError, fit
from reward_model.preferences import build_preferences


@pytest.mark.slow  # ~10 s: 150 segments, ~10k pairs
def test_fit_recovers_the_true_order_of_synthetic_segments():
    segments = synthetic_segments(150, seed=0)
    pairs = build_preferences(segments, margin=0.5, max_pairs=20_000, seed=0)
    result = fit(segments, pairs, FitConfig(seed=0))
    assert result.heldout_pairs >= 100
    assert result.heldout_accuracy >= 0.9
    # Fresh segments, never seen in training: R_phi's order agrees with the true one.
    fresh = synthetic_segments(40, seed=99)
    predicted = [float(result.function(s.observations).mean()) for s in fresh]
    truth = [true_segment_reward(s.observations) for s in fresh]
    agree = [
        (predicted[i] > predicted[j]) == (truth[i] > truth[j])
        for i in range(len(fresh)) for j in range(i + 1, len(fresh))
        if abs(truth[i] - truth[j]) > 0.05 * np.ptp(truth)
    ]  # fmt: skip
    assert np.mean(agree) >= 0.85


def test_the_same_seed_gives_the_same_weights():
    segments = synthetic_segments(30, seed=2)
    pairs = build_preferences(segments, margin=0.5, max_pairs=300, seed=0)
    config = FitConfig(seed=7, max_steps=40)
    first, second = fit(segments, pairs, config), fit(segments, pairs, config)
    for (w1, b1), (w2, b2) in zip(first.function.layers, second.function.layers, strict=True):
        np.testing.assert_array_equal(w1, w2)
        np.testing.assert_array_equal(b1, b2)
    assert first.heldout_accuracy == second.heldout_accuracy


def test_too_few_pairs_is_an_error_not_a_model():
    segments = synthetic_segments(2, seed=0)  # one pair at most
    pairs = build_preferences(segments, margin=0.5, max_pairs=10)
    with pytest.raises(TrainingError, match="at least 2"):
        fit(segments, pairs, FitConfig())


def test_a_diverging_loss_is_refused():
    segments = synthetic_segments(20, seed=3)
    pairs = build_preferences(segments, margin=0.5, max_pairs=100)
    with pytest.raises(TrainingError, match="NaN|inf"):
        fit(
            segments,
            pairs,
            FitConfig.model_construct(learning_rate=1e30, weight_decay=0.0, max_steps=50),
        )

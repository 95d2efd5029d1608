"""A stored reward-model version with random weights, for the reward library's tests."""

from __future__ import annotations

import hashlib

import numpy as np

from koholint.reward.features import encoder_version
from koholint.reward.model import RewardFunction, new_version, publish, weights_bytes
from koholint.schemas.reward_model import RewardModelCard
from koholint.store import LocalStore


def make_version(store: LocalStore, *, seed: int = 0, weight_scale: float = 1.0) -> RewardModelCard:
    rng = np.random.default_rng(seed)
    function = RewardFunction(
        (
            ((rng.normal(size=(128, 8)) * weight_scale).astype(np.float32), np.zeros(8, np.float32)),
            (rng.normal(size=(8, 1)).astype(np.float32), np.ones(1, np.float32)),
        ),
        output_mean=0.1,
        output_std=2.0,
    )  # fmt: skip
    card = RewardModelCard(
        version=new_version(), created_at=1.0, encoder_version=encoder_version(),
        observation_size=128, hidden_sizes=[8], output_mean=0.1, output_std=2.0, pairs=10,
        heldout_pairs=3, heldout_accuracy=0.9, segments=6, epochs=5, seed=seed,
        weights_sha256=hashlib.sha256(weights_bytes(function)).hexdigest(),
    )  # fmt: skip
    publish(store, card, function)
    return card

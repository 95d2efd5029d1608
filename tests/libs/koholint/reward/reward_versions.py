"""Reward models with random weights (stored or in memory) for the reward and shaping tests."""

from __future__ import annotations

import hashlib

import numpy as np

from koholint.env.encoding import encoder_version
from koholint.reward.model import (
    LoadedRewardModel,
    RewardFunction,
    new_version,
    publish,
    weights_bytes,
)
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


def random_reward_model(seed: int = 0, hidden: int = 16) -> LoadedRewardModel:
    rng = np.random.default_rng(seed)
    layers = (
        (rng.normal(size=(128, hidden)).astype(np.float32), rng.normal(size=hidden).astype(np.float32)),
        (rng.normal(size=(hidden, 1)).astype(np.float32), np.zeros(1, np.float32)),
    )  # fmt: skip
    card = RewardModelCard(
        version="rm-20261123-000000-abcdef", created_at=0.0, encoder_version=encoder_version(),
        observation_size=128, hidden_sizes=[hidden], output_mean=0.5, output_std=2.0, pairs=0,
        heldout_pairs=0, heldout_accuracy=1.0, segments=0, epochs=0, seed=seed, weights_sha256="0" * 64,
    )  # fmt: skip
    return LoadedRewardModel(card, RewardFunction(layers, 0.5, 2.0))

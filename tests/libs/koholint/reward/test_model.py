"""Stored reward-model versions: written, read back, and refused with the fix named."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from reward_versions import make_version

from koholint.env.encoding import encoder_version
from koholint.reward.model import (
    LATEST_KEY,
    RewardModelError,
    latest_version,
    list_versions,
    load_version,
    new_version,
)
from koholint.schemas.reward_model import VERSION_PATTERN
from koholint.store import LocalStore


def test_a_published_version_reads_back_with_the_same_outputs(tmp_path: Path):
    store = LocalStore(tmp_path)
    assert latest_version(store) is None
    card = make_version(store)
    assert latest_version(store) == card.version
    assert list_versions(store) == [card.version]
    loaded = load_version(store, card.version, expected_encoder=encoder_version())
    observations = np.random.default_rng(1).uniform(-1, 1, size=(5, 128)).astype(np.float32)
    rng = np.random.default_rng(0)
    first = rng.normal(size=(128, 8)).astype(np.float32)
    second = rng.normal(size=(8, 1)).astype(np.float32)
    expected = np.maximum(observations @ first, 0) @ second + 1.0
    np.testing.assert_allclose(loaded.function(observations), expected[:, 0], rtol=1e-5)
    np.testing.assert_allclose(
        loaded.function.normalised(observations), (expected[:, 0] - 0.1) / 2.0, rtol=1e-5
    )


def test_version_names_sort_by_time_and_match_the_pattern():
    import re

    first, second = new_version(1_700_000_000.0), new_version(1_700_000_001.0)
    assert re.fullmatch(VERSION_PATTERN, first)
    assert first < second


def test_a_wrong_checksum_is_refused(tmp_path: Path):
    store = LocalStore(tmp_path)
    card = make_version(store)
    other = make_version(LocalStore(tmp_path / "other"), seed=5)
    data = LocalStore(tmp_path / "other").get(f"reward-models/{other.version}/weights.npz")
    store.put(f"reward-models/{card.version}/weights.npz", data)  # valid store object, wrong model
    with pytest.raises(RewardModelError, match="does not match the card's sha256.*retrain"):
        load_version(store, card.version)


def test_a_missing_file_is_refused(tmp_path: Path):
    store = LocalStore(tmp_path)
    card = make_version(store)
    store.delete(f"reward-models/{card.version}/weights.npz")
    with pytest.raises(RewardModelError, match="missing.*retrain"):
        load_version(store, card.version)


def test_an_unknown_schema_version_is_refused(tmp_path: Path):
    store = LocalStore(tmp_path)
    card = make_version(store)
    document = {**card.model_dump(mode="json"), "schema_version": 7}
    store.put(f"reward-models/{card.version}/model.json", json.dumps(document).encode())
    with pytest.raises(RewardModelError, match="schema_version 7.*upgrade koholint or retrain"):
        load_version(store, card.version)


def test_another_encoder_version_is_refused(tmp_path: Path):
    store = LocalStore(tmp_path)
    card = make_version(store)
    with pytest.raises(RewardModelError, match="trained on encoder .*retrain the reward model"):
        load_version(store, card.version, expected_encoder="obs128-000000000000")


def test_non_finite_weights_are_refused(tmp_path: Path):
    store = LocalStore(tmp_path)
    card = make_version(store, weight_scale=float("inf"))
    with pytest.raises(RewardModelError, match="NaN or inf"):
        load_version(store, card.version)


def test_a_corrupt_latest_pointer_names_the_fix(tmp_path: Path):
    store = LocalStore(tmp_path)
    store.put(LATEST_KEY, b'{"schema_version": 1, "version": "nope"}')
    with pytest.raises(RewardModelError, match="republish"):
        latest_version(store)


def test_encoder_version_is_stable_and_names_the_size():
    assert encoder_version() == encoder_version()
    assert encoder_version().startswith("obs128-")

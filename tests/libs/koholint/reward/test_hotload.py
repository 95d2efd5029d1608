"""Hot-loading: new versions are found (store or bus), bad ones refused, the previous kept."""

from __future__ import annotations

from pathlib import Path

import pytest
from reward_versions import make_version

from koholint.bus import MemoryBus
from koholint.reward.hotload import RewardModelSource, check_choice
from koholint.schemas.reward_model import RewardModelEvent
from koholint.store import LocalStore


def announce(bus: MemoryBus, version: str) -> None:
    event = RewardModelEvent(version=version, prefix=f"reward-models/{version}",
                             encoder_version="x", heldout_accuracy=0.9)  # fmt: skip
    bus.publish("koholint.reward-models", event.model_dump(mode="json"))


def test_polling_the_store_finds_each_new_version_once(tmp_path: Path):
    store = LocalStore(tmp_path)
    source = RewardModelSource(store)
    assert source.poll() is None
    first = make_version(store, seed=1)
    assert source.poll().version == first.version
    assert source.poll() is None  # nothing new
    second = make_version(store, seed=2)
    assert source.poll().version == second.version


def test_a_bad_version_is_refused_and_the_previous_kept(tmp_path: Path):
    store = LocalStore(tmp_path)
    source = RewardModelSource(store)
    good = make_version(store, seed=1)
    source.poll()
    bad = make_version(store, seed=2)
    store.put(f"reward-models/{bad.version}/weights.npz", b"corrupt")
    assert source.poll() is None
    assert source.current.version == good.version
    assert source.failures == 1
    assert "sha256" in source.last_error


def test_another_encoder_is_refused_with_the_fix(tmp_path: Path):
    store = LocalStore(tmp_path)
    make_version(store)
    source = RewardModelSource(store, expected_encoder="obs128-ffffffffffff")
    assert source.poll() is None
    assert "retrain the reward model on segments exported by this env" in source.last_error


def test_with_a_bus_the_store_is_read_once_then_the_stream(tmp_path: Path):
    store, bus = LocalStore(tmp_path), MemoryBus()
    before = make_version(store, seed=1)
    source = RewardModelSource(store, bus=bus)
    assert source.poll().version == before.version  # published before the run began
    after = make_version(store, seed=2)
    assert source.poll() is None  # not announced yet: the stream decides
    announce(bus, after.version)
    assert source.poll().version == after.version


def test_a_fixed_version_loads_once(tmp_path: Path):
    store = LocalStore(tmp_path)
    fixed = make_version(store, seed=1)
    make_version(store, seed=2)
    source = RewardModelSource(store, choice=fixed.version)
    assert source.poll().version == fixed.version
    assert source.poll() is None


def test_off_never_loads(tmp_path: Path):
    store = LocalStore(tmp_path)
    make_version(store)
    assert RewardModelSource(store, choice="").poll() is None


def test_choices_are_checked():
    assert check_choice("latest") == "latest"
    with pytest.raises(ValueError, match="'latest' or a version"):
        check_choice("newest")

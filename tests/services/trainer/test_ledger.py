"""The checkpoint ledger: record, list, get, best by metric, download."""

from pathlib import Path

import pytest

from koholint.store import LocalStore
from trainer.ledger import CheckpointLedger, UnknownCheckpointError


def checkpoint_dir(tmp_path: Path, name: str) -> Path:
    directory = tmp_path / name
    (directory / "learner").mkdir(parents=True)
    (directory / "learner" / "weights.pt").write_bytes(name.encode())
    return directory


def test_record_best_and_reload(tmp_path: Path):
    store = LocalStore(tmp_path / "store")
    ledger = CheckpointLedger(store, "run-a")
    ledger.record(1000, checkpoint_dir(tmp_path, "one"), {"rooms": 2.0, "cells": 30.0})
    ledger.record(2000, checkpoint_dir(tmp_path, "two"), {"rooms": 4.0, "cells": 20.0})
    assert ledger.best("rooms").step == 2000
    assert ledger.best("cells").step == 1000
    reloaded = CheckpointLedger(store, "run-a")
    assert [r.name for r in reloaded.records] == [
        "run-a-step000000001000",
        "run-a-step000000002000",
    ]
    target = reloaded.download(reloaded.get("run-a-step000000001000"), tmp_path / "restore")
    assert (target / "learner" / "weights.pt").read_bytes() == b"one"


def test_unknown_names_and_metrics(tmp_path: Path):
    ledger = CheckpointLedger(LocalStore(tmp_path), "r")
    ledger.record(5, checkpoint_dir(tmp_path, "c"), {"rooms": 1.0})
    with pytest.raises(UnknownCheckpointError, match="no checkpoint 'nope'"):
        ledger.get("nope")
    with pytest.raises(UnknownCheckpointError, match="known metrics: \\['rooms'\\]"):
        ledger.best("win_rate")

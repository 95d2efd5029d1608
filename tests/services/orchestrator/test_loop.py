"""`koholint loop`'s bookkeeping: what it reads back from the store and how it reports it
(the loop itself runs end to end in tests/e2e/test_loop.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from koholint.cli import main
from koholint.store import LocalStore
from orchestrator.loop import (
    BurstResult,
    LoopError,
    count_segments,
    last_checkpoint,
    print_table,
)
from orchestrator.stages import count_scores


def test_counts_and_the_newest_checkpoint_come_from_the_store(tmp_path: Path):
    store = LocalStore(tmp_path)
    for episode in ("e1", "e2"):
        store.put(f"episodes/r/{episode}/00000/manifest.json", b"{}")
    store.put("episodes/r/e1/00000/ram.jsonl", b"{}\n")
    store.put("scores/r/batches/0.jsonl", b'{"a": 1}\n{"a": 2}\n\n')
    ledger = {"checkpoints": [
        {"name": "r-step000000000512", "step": 512, "metrics": {"rooms": 1.0}},
        {"name": "r-step000000001024", "step": 1024, "metrics": {"rooms": 2.0}},
    ]}  # fmt: skip
    store.put("checkpoints/r/ledger.json", json.dumps(ledger).encode())
    assert count_segments(store, "r") == 2
    assert count_scores(store, "r") == 2
    assert last_checkpoint(store, "r") == ("r-step000000001024", 1024, {"rooms": 2.0})
    with pytest.raises(LoopError, match="no checkpoint ledger"):
        last_checkpoint(store, "other")


def test_the_table_shows_shaping_per_step_and_the_version(capsys):
    metrics = {"rooms": 2.0, "cells": 30.0, "shaped_steps.rm-x": 100.0, "shaping_abs_sum": 5.0}
    print_table([BurstResult(1, "a-b1", 1024, {"rooms": 1.0}, accuracy=0.8),
                 BurstResult(2, "a-b2", 2048, metrics, shaped_by="rm-x")])  # fmt: skip
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[1].split()[-2:] == ["0.800", "-"]
    assert lines[2].split()[-3:] == ["0.0500", "-", "rm-x"]


def test_bad_arguments_are_refused(capsys):
    assert main(["loop", "--bursts", "1"]) == 2
    assert "--bursts: Input should be greater than or equal to 2" in capsys.readouterr().err


def test_the_help_names_every_settings_variable_and_default(capsys):
    from koholint.flags import default_settings, variable_of
    from orchestrator.config import Settings

    with pytest.raises(SystemExit):
        main(["loop", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    defaults = default_settings(Settings)
    for name in Settings.model_fields:
        assert f"({variable_of(Settings, name)}; default {getattr(defaults, name)})" in text
    # the trainer's settings it hands on, when given, name the trainer's variables
    assert "(KOHOLINT_TRAINER_REWARD__SHAPING_SCALE; default the trainer's)" in text


def test_trainer_settings_reach_train_only_when_given(tmp_path: Path):
    from orchestrator.online import OnlineLoop, OnlinePlan

    plan = OnlinePlan("r", 100, str(tmp_path / "store"), str(tmp_path / "runs"))
    command = OnlineLoop(plan).train_command()
    assert "--reward-mode" not in command  # the trainer's default (or its variable) holds
    assert "--refit-every" not in command
    assert command[command.index("--checkpoint-every-iterations") + 1] == "5"
    bonus = OnlinePlan("r", 100, str(tmp_path / "store"), str(tmp_path / "runs"), mode="bonus")
    command = OnlineLoop(bonus).train_command()
    assert command[command.index("--reward-mode") + 1] == "bonus"

"""`koholint loop --online`'s bookkeeping: a refit round (judges, then R_phi) per new checkpoint,
never two at once, its outcome read from the reward model's status, and a round still running
when the run ends is stopped (the whole loop runs in tests/e2e/test_online_loop.py)."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest

import orchestrator.online as online
from koholint.store import LocalStore
from orchestrator.online import OnlineLoop, OnlineLoopError, OnlinePlan

STATUS = {"state": "published", "detail": "x", "version": "rm-20261123-000000-abcdef",
          "pairs": 12, "heldout_accuracy": 0.75, "seconds": 0.1}  # fmt: skip


def write_ledger(store: LocalStore, steps: list[int]) -> None:
    records = [{"name": f"r-step{step:012d}", "step": step, "metrics": {"rooms": 1.0}}
               for step in steps]  # fmt: skip
    store.put("checkpoints/r/ledger.json", json.dumps({"checkpoints": records}).encode())


def fake_commands(monkeypatch, scripts: dict[str, str]) -> list[str]:
    """Each koholint command becomes a Python one-liner; returns the commands started."""
    started: list[str] = []

    def command(*arguments: str) -> list[str]:
        started.append(arguments[0])
        return [sys.executable, "-c", scripts[arguments[0]]]

    monkeypatch.setattr(online, "koholint_command", command)
    return started


def tick_until_idle(loop: OnlineLoop, seconds: float = 20.0) -> None:
    deadline = time.monotonic() + seconds
    loop.tick()
    while loop._round is not None and time.monotonic() < deadline:
        time.sleep(0.05)
        loop.tick()


def test_each_new_checkpoint_starts_one_round_and_its_version_is_read_back(
    tmp_path: Path, monkeypatch
):
    started = fake_commands(monkeypatch, {
        "evaluate": "print('scored')",
        "train-reward-model": f"print('fitting'); print({json.dumps(json.dumps(STATUS))})",
    })  # fmt: skip
    store = LocalStore(tmp_path / "store")
    loop = OnlineLoop(OnlinePlan("r", 100, str(tmp_path / "store"), str(tmp_path / "runs")))
    loop.tick()
    assert loop.refits == []  # no checkpoint yet
    write_ledger(store, [512])
    tick_until_idle(loop)
    tick_until_idle(loop)  # the same checkpoint: no second round
    assert started == ["evaluate", "train-reward-model"]
    (refit,) = loop.refits
    assert (refit.round, refit.step, refit.state) == (1, 512, "published")
    assert (refit.version, refit.pairs, refit.accuracy) == (STATUS["version"], 12, 0.75)
    assert refit.ended_step == 512
    write_ledger(store, [512, 1024])
    tick_until_idle(loop)
    assert [r.step for r in loop.refits] == [512, 1024]
    assert (tmp_path / "runs/r/online-002-reward-model.log").exists()


def test_a_refused_fit_is_recorded_and_a_failing_judge_stops_the_loop(tmp_path: Path, monkeypatch):
    refused = {**STATUS, "state": "refused", "version": None, "detail": "too few pairs"}
    fake_commands(monkeypatch, {
        "evaluate": "import sys; print('no such backend'); sys.exit(2)",
        "train-reward-model": f"import sys; print({json.dumps(json.dumps(refused))}); sys.exit(1)",
    })  # fmt: skip
    store = LocalStore(tmp_path / "store")
    write_ledger(store, [512])
    loop = OnlineLoop(OnlinePlan("r", 100, str(tmp_path / "store"), str(tmp_path / "runs")))
    with pytest.raises(OnlineLoopError, match=r"evaluate failed \(exit 2\): .*no such backend"):
        tick_until_idle(loop)
    loop.refits.clear()
    loop._checkpoints_seen = 0
    monkeypatch.setitem(online.__dict__, "koholint_command", lambda *a: [sys.executable, "-c", (
        f"import sys; print({json.dumps(json.dumps(refused))}); sys.exit(1)")])  # fmt: skip
    tick_until_idle(loop)
    (refit,) = loop.refits
    assert (refit.state, refit.version, refit.detail) == ("refused", "", "too few pairs")


def test_a_round_still_running_when_the_run_ends_is_stopped(tmp_path: Path, monkeypatch):
    ledger = json.dumps({"checkpoints": [{"name": "r-step000000000512", "step": 512,
                                          "metrics": {"rooms": 2.0}}]})  # fmt: skip
    trainer = (f"import time; from koholint.store import LocalStore; LocalStore("
               f"{str(tmp_path / 'store')!r}).put('checkpoints/r/ledger.json', {ledger!r}.encode());"
               f" time.sleep(3)")  # fmt: skip
    fake_commands(monkeypatch, {"train": trainer, "evaluate": "import time; time.sleep(120)"})
    stages: list[online.Stage] = []

    class RecordedStage(online.Stage):
        def __init__(self, *arguments, **keywords) -> None:
            super().__init__(*arguments, **keywords)
            stages.append(self)

    monkeypatch.setattr(online, "Stage", RecordedStage)
    loop = OnlineLoop(OnlinePlan("r", 100, str(tmp_path / "store"), str(tmp_path / "runs")))
    started = time.monotonic()
    result = loop.run()
    assert time.monotonic() - started < 60
    (refit,) = result.refits
    assert refit.state == "stopped"
    assert "during evaluate" in refit.detail
    assert (result.steps, result.metrics) == (512, {"rooms": 2.0})
    assert [stage.name for stage in stages] == ["train", "evaluate"]
    assert all(stage.process.poll() is not None for stage in stages)  # none left running

"""`koholint loop` on the embedded defaults: rollout -> export -> evaluator -> preferences ->
R_phi -> a second burst that loads the version and reports a non-zero shaping component."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from e2e_support import SMALL_BURST, koholint

from koholint.reward.model import latest_version, load_version
from koholint.store import LocalStore


@pytest.mark.slow  # ~3 minutes: two training bursts, the judges, the reward model
@pytest.mark.timeout(960)  # the command's own bound (900 s), not the suite's 300 s
def test_the_loop_shapes_burst_two_with_a_model_trained_on_burst_one(tmp_path: Path):
    store_dir, run_dir = tmp_path / "store", tmp_path / "runs"
    flags = [f"--train-flag={flag}" for flag in SMALL_BURST]
    completed = koholint(
        "loop", "--bursts", "2", "--steps-per-burst", "1024", "--name", "e2e", "--store",
        str(store_dir), "--run-dir", str(run_dir), "--shaping-scale", "0.5", *flags,
        # The test is about the plumbing: any version trained on burst 1 must be used.
        environment={"KOHOLINT_REWARD_MODEL_ACCURACY_FLOOR": "0.0"}, timeout=900,
    )  # fmt: skip
    output = completed.stdout
    assert completed.returncode == 0, output + completed.stderr
    for stage in ("burst1-train", "burst1-evaluate", "burst1-reward-model", "burst2-train"):
        assert stage in output
    exported = int(re.search(r"segments exported\s+(\d+)", output).group(1))
    scored = int(re.search(r"segments scored\s+(\d+)", output).group(1))
    assert exported >= 8
    assert scored == exported
    store = LocalStore(store_dir)
    version = latest_version(store)
    assert version is not None
    model = load_version(store, version)
    assert model.card.segments == scored
    ledger = json.loads(store.get("checkpoints/e2e-b2/ledger.json"))
    metrics = max(ledger["checkpoints"], key=lambda record: record["step"])["metrics"]
    assert metrics[f"shaped_steps.{version}"] > 0
    assert metrics["shaping_abs_sum"] > 0
    table = output[output.index("burst    ") :]
    assert re.search(rf"^2\s.*{version}$", table, re.MULTILINE), table

"""`koholint loop --online` on the embedded defaults: one run trains while its segments are
judged and R_phi refitted; the trainer hot-loads a version published during the run and pays
the bonus with it."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from e2e_support import SMALL_BURST, koholint

from koholint.reward.model import list_versions
from koholint.store import LocalStore


@pytest.mark.slow  # ~1-3 minutes: a training run with the judges and refits beside it
@pytest.mark.timeout(
    960
)  # the command's own bound (900 s), not the suite's 300 s: 3 min alone, more beside other tests
def test_the_online_loop_refits_while_the_run_trains_and_the_run_uses_the_versions(
    tmp_path: Path,
):
    store_dir, run_dir = tmp_path / "store", tmp_path / "runs"
    flags = [f"--train-flag={flag}" for flag in SMALL_BURST if "checkpoint-every" not in flag]
    # The run is long against a refit (~30 s of training here; a refit, judged and fitted
    # beside it, ~10 s): a version published late in a short run is never used, and on a
    # loaded CI machine 16,384 steps left no margin.
    completed = koholint(
        "loop", "--online", "--steps", "49152", "--mode", "bonus", "--refit-every", "4",
        "--name", "online", "--store", str(store_dir), "--run-dir", str(run_dir), *flags,
        # The test is about the plumbing: any version fitted during the run must be used.
        environment={"KOHOLINT_REWARD_MODEL_ACCURACY_FLOOR": "0.0"}, timeout=900,
    )  # fmt: skip
    output = completed.stdout
    assert completed.returncode == 0, output + completed.stderr
    store = LocalStore(store_dir)
    published = list_versions(store)
    assert published, output
    assert re.search(r"refit 1 at step \d+ \(ended by step \d+\): published rm-", output), output
    ledger = json.loads(store.get("checkpoints/online/ledger.json"))
    final = max(ledger["checkpoints"], key=lambda record: record["step"])
    assert final["step"] >= 49152
    used = {key.removeprefix("shaped_steps."): value for key, value in final["metrics"].items()
            if key.startswith("shaped_steps.")}  # fmt: skip
    assert used, final["metrics"]
    assert set(used) <= set(published)
    assert final["metrics"]["shaping_abs_sum"] > 0  # the bonus was paid
    train_log = (run_dir / "online" / "online-train.log").read_text()
    assert "--reward-mode bonus" in train_log
    assert "--reward-model latest" in train_log

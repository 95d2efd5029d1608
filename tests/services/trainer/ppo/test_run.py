"""Training runs end to end on real Ray and RLlib: smoke, checkpoints, archive, export, resume."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from koholint.env.archive import Archive
from koholint.store import LocalStore
from trainer.ledger import CheckpointLedger
from trainer.ppo.config import TrainConfig
from trainer.ppo.run import TrainingRun

TINY = {
    "total_env_steps": 512, "num_env_runners": 0, "envs_per_env_runner": 1, "train_batch_size": 256,
    "minibatch_size": 64, "num_epochs": 1, "rollout_fragment_length": 128, "episode_length": 128,
    "export_every_episodes": 1, "segment_steps": 64, "checkpoint_every_iterations": 1, "archive_restart_every": 2,
}  # fmt: skip


@pytest.mark.slow
def test_smoke_run_checkpoints_archives_exports_and_resumes(tmp_path: Path):
    store_url, run_dir = str(tmp_path / "store"), str(tmp_path / "runs")
    config = TrainConfig.from_mapping(
        {**TINY, "run": "smoke", "store_url": store_url, "run_dir": run_dir}, environ={}
    )
    seen = []
    status = TrainingRun(config).run(on_iteration=lambda s: seen.append(s.env_steps))
    assert status.state == "finished"
    assert status.env_steps >= 512
    assert seen == sorted(seen)
    store = LocalStore(store_url)
    ledger = CheckpointLedger(store, "smoke")
    assert len(ledger.records) == status.checkpoints >= 2
    assert Archive.load(store, "archives/smoke").cells  # the archive persisted
    manifests = [k for k in store.list("episodes/smoke/") if k.endswith("manifest.json")]
    assert manifests
    assert json.loads(store.get(manifests[0]))["schema_version"] == 1
    assert (Path(run_dir) / "smoke" / "learning_curve.png").read_bytes().startswith(b"\x89PNG")

    last = ledger.records[-1]
    resumed = TrainConfig.from_mapping(
        {**TINY, "run": "smoke", "store_url": store_url, "run_dir": run_dir, "resume_from": last.name,
         "total_env_steps": last.step + 256},
        environ={},
    )  # fmt: skip
    first_seen = []
    again = TrainingRun(resumed).run(on_iteration=lambda s: first_seen.append(s.env_steps))
    assert first_seen[0] > last.step  # counting continues from the checkpoint, not from zero
    assert again.state == "finished"


def test_export_counts_are_reported_as_deltas(tmp_path: Path):
    from trainer.ppo.envs import export_counts_since_last_call, process_exporter

    export_counts_since_last_call()  # start from what earlier tests in this process left
    exporter = process_exporter(str(tmp_path / "store"), "")
    exporter.dropped += 2  # as if the queue had been full twice
    assert export_counts_since_last_call() == {"written": 0, "dropped": 2, "failed": 0}
    assert export_counts_since_last_call() == {"written": 0, "dropped": 0, "failed": 0}
    exporter.close()

"""The checkpoint ledger: every checkpoint with its step, time, name and metrics, in the store."""

from __future__ import annotations

import json
import time
from pathlib import Path

from koholint.schemas.trainer import CheckpointRecord
from koholint.store import ObjectNotFoundError, ObjectStore, put_json

LEDGER_SCHEMA_VERSION = 1
RUN_STATE_FILE = "koholint_run.json"
"""Saved in every checkpoint: iterations, the learning curve so far (for a resume) and the
run's settings (for its policy file)."""


def checkpoint_owner(name: str) -> str:
    """The run a checkpoint belongs to (names are ``<run>-step<12 digits>``)."""
    return name.rsplit("-step", 1)[0]


class UnknownCheckpointError(KeyError):
    def __str__(self) -> str:
        return str(self.args[0])


class CheckpointLedger:
    """Checkpoints of one run under `checkpoints/<run>/<step>/`, listed in `checkpoints/<run>/ledger.json`."""

    def __init__(self, store: ObjectStore, run: str) -> None:
        self.store = store
        self.run = run
        self.key = f"checkpoints/{run}/ledger.json"
        try:
            document = json.loads(store.get(self.key))
            self.records = [
                CheckpointRecord.model_validate(item) for item in document["checkpoints"]
            ]
        except ObjectNotFoundError:
            self.records = []

    def record(self, step: int, directory: Path, metrics: dict[str, float]) -> CheckpointRecord:
        """Upload a checkpoint folder and add it to the ledger."""
        name = f"{self.run}-step{step:012d}"
        prefix = f"checkpoints/{self.run}/{step:012d}"
        for path in sorted(directory.rglob("*")):
            if path.is_file():
                self.store.put(
                    f"{prefix}/{path.relative_to(directory).as_posix()}", path.read_bytes()
                )
        record = CheckpointRecord(
            run=self.run,
            step=step,
            name=name,
            prefix=prefix,
            saved_at=time.time(),
            metrics=dict(metrics),
        )
        self.records = [r for r in self.records if r.step != step] + [record]
        self._save()
        return record

    def _save(self) -> None:
        document = {
            "schema_version": LEDGER_SCHEMA_VERSION,
            "run": self.run,
            "checkpoints": [r.model_dump() for r in self.records],
        }
        put_json(self.store, self.key, document)

    def get(self, name: str) -> CheckpointRecord:
        for record in self.records:
            if record.name == name:
                return record
        known = ", ".join(r.name for r in self.records[-3:]) or "none yet"
        raise UnknownCheckpointError(
            f"no checkpoint {name!r} in run {self.run} (its latest: {known})"
        )

    def best(self, metric: str) -> CheckpointRecord:
        scored = [r for r in self.records if metric in r.metrics]
        if not scored:
            known = sorted({m for r in self.records for m in r.metrics})
            raise UnknownCheckpointError(
                f"no checkpoint has metric {metric!r}; known metrics: {known}"
            )
        return max(scored, key=lambda r: (r.metrics[metric], r.step))

    def download(self, record: CheckpointRecord, directory: Path) -> Path:
        """Fetch a checkpoint folder from the store, for resuming."""
        for key in self.store.list(record.prefix + "/"):
            target = directory / key[len(record.prefix) + 1 :]
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(self.store.get(key))
        return directory

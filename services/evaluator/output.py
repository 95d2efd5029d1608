"""Score records in the object store, exactly one per (segment, judge configuration).

Layout under ``scores/<run>/``:

- ``batches/<utc time>-<config hash>-<id>.jsonl``: one file per batch, one ``ScoreRecord``
  a line, written once and never rewritten;
- ``comparisons/<same name>.json``: the batch's state comparisons (``StateComparisons``),
  written before the batch file;
- ``index/<episode>/<segment>-<config hash>.json``: a marker naming the batch file that holds
  the segment's record.

Markers are written before their batch file. A segment counts as scored only when its marker
exists *and* names a batch file that exists; so a process killed between the two writes
scores the segment again into a new batch (the old marker is overwritten, no record was
written), and one killed after both finds the segment scored and does not score it twice.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from dataclasses import dataclass

from evaluator.segments import SegmentRef
from koholint.schemas.evaluator import ScoredSegment, ScoreRecord, ScoresEvent, StateComparisons
from koholint.store import ChecksumMismatchError, ObjectNotFoundError, ObjectStore, put_json

MAX_LIST_RECORDS = 1000
logger = logging.getLogger("evaluator.output")


@dataclass(frozen=True)
class StoredScore:
    record: ScoreRecord
    scores_key: str


def marker_key(ref: SegmentRef, config_hash: str) -> str:
    return f"scores/{ref.run}/index/{ref.episode}/{ref.segment:05d}-{config_hash}.json"


def batch_key(run: str, config_hash: str) -> str:
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime()) + f"{time.time() % 1:.6f}"[1:]
    return f"scores/{run}/batches/{stamp}Z-{config_hash}-{uuid.uuid4().hex[:8]}.jsonl"


def comparisons_key(scores_key: str) -> str:
    """scores/<run>/batches/<name>.jsonl -> scores/<run>/comparisons/<name>.json"""
    run_prefix, name = scores_key.split("/batches/", 1)
    return f"{run_prefix}/comparisons/{name.removesuffix('.jsonl')}.json"


class ScoreStore:
    """Writes batches of score records with their markers; finds and lists them."""

    def __init__(self, store: ObjectStore) -> None:
        self.store = store

    def scored_in(self, ref: SegmentRef, config_hash: str) -> str | None:
        """The batch file holding the segment's record, or None if it is not scored yet."""
        try:
            marker = json.loads(self.store.get(marker_key(ref, config_hash)))
        except (ObjectNotFoundError, ChecksumMismatchError, ValueError):
            return None  # no marker, or one that cannot be read: score the segment again
        key = str(marker.get("scores_key", ""))
        return key if key and self.store.exists(key) else None

    def find(self, ref: SegmentRef, config_hash: str) -> StoredScore | None:
        key = self.scored_in(ref, config_hash)
        if key is None:
            return None
        for record in self._read(key):
            if record.prefix == ref.prefix and record.judge_config_hash == config_hash:
                return StoredScore(record, key)
        return None

    def write(
        self, run: str, config_hash: str, records: list[ScoreRecord], key: str | None = None
    ) -> str:
        """Markers first, then the batch file (at `key`, default a new one); returns its key."""
        key = key or batch_key(run, config_hash)
        for record in records:
            ref = SegmentRef(record.prefix, record.run, record.episode, record.segment)
            put_json(self.store, marker_key(ref, config_hash), {
                "schema_version": 1, "scores_key": key, "record_key": record.record_key,
            })  # fmt: skip
        lines = "".join(record.model_dump_json() + "\n" for record in records)
        self.store.put(key, lines.encode(), "application/x-ndjson")
        return key

    def write_comparisons(self, key: str, comparisons: StateComparisons, scores_key: str) -> None:
        """The batch's state comparisons, written before its batch file (an orphan file left
        by a crash in between is named by no record)."""
        document = comparisons.model_copy(update={"scores_key": scores_key})
        self.store.put(key, document.model_dump_json().encode(), "application/json")

    def newest(self, run: str, limit: int = 100) -> list[ScoreRecord]:
        """The run's newest `limit` records (each record key once), oldest first."""
        keys = sorted(
            key for key in self.store.list(f"scores/{run}/batches/") if key.endswith(".jsonl")
        )
        newest: list[ScoreRecord] = []
        seen: set[str] = set()
        for key in reversed(keys):
            for record in reversed(self._read(key)):
                if record.record_key not in seen:
                    seen.add(record.record_key)
                    newest.append(record)
            if len(newest) >= limit:
                break
        return list(reversed(newest[:limit]))

    def _read(self, key: str) -> list[ScoreRecord]:
        """The file's valid records; a line that is no record (written by an older evaluator
        that let NaN through, or damaged) is logged and left out, never a 500."""
        try:
            lines = self.store.get(key).decode("utf-8").splitlines()
        except (ObjectNotFoundError, ChecksumMismatchError, UnicodeDecodeError) as error:
            logger.warning("unreadable scores file %s: %s", key, error,
                           extra={"event": "scores_unreadable"})  # fmt: skip
            return []
        records = []
        for number, line in enumerate(lines, 1):
            if not line:
                continue
            try:
                records.append(ScoreRecord.model_validate_json(line))
            except ValueError as error:
                logger.warning("%s line %d is no score record: %s", key, number, error,
                               extra={"event": "score_record_invalid"})  # fmt: skip
        return records


def scores_event(
    run: str, scores_key: str, records: list[ScoreRecord], kappa: float | None
) -> ScoresEvent:
    first = records[0]
    return ScoresEvent(
        run=run, scores_key=scores_key, judge_config_hash=first.judge_config_hash,
        backend=first.backend, kappa=kappa, judge_accuracy=first.judge_accuracy,
        comparisons_key=first.comparisons_key,
        records=[
            ScoredSegment(prefix=r.prefix, record_key=r.record_key, label=r.label, score=r.score)
            for r in records
        ],
    )  # fmt: skip

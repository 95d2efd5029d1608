"""Episode export: segments of N steps (PNG frames, ram.jsonl, manifest) into the object store.

Layout: ``episodes/<run>/<episode>/<segment>/`` with ``frames/<t>.png``, ``ram.jsonl`` (one
line per step: action, reward and its components, the observation vector after the step and
the structured state) and ``manifest.json`` (``schema_version``, the observation's
``encoder_version`` and the sha256 of every file). ``read_segment`` reads one back, refusing
versions it does not know. When a bus is given,
each written segment is announced on ``koholint.segments`` with its keys.

Export never stalls sampling: ``SegmentRecorder`` hands finished segments to an
``ExportQueue`` (bounded) whose thread PNG-encodes their frames and writes them; when the
queue is full the segment is dropped, counted in ``dropped`` and logged. A segment of 256
raw frames holds ~24 MB until written (RGBA screens), so a full queue of 16 holds ~380 MB.
"""

from __future__ import annotations

import hashlib
import json
import logging
import queue
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from koholint.bus import STREAM_SEGMENTS, Bus
from koholint.env.encoding import encoder_version
from koholint.game.png import encode_png
from koholint.store import ObjectStore, put_json

EXPORT_SCHEMA_VERSION = 2
"""1: no observations; 2: each step's line carries ``observation`` (the 128 floats)."""
EXPORT_COUNTS = ("written", "dropped", "failed")
"""What an export queue counts: segments written, dropped (queue full) and failed to write."""
logger = logging.getLogger("koholint.env.export")


@dataclass
class Segment:
    run: str
    episode: str
    index: int
    steps: list[dict[str, Any]] = field(default_factory=list)
    frames: list[bytes | np.ndarray] = field(default_factory=list)
    """PNG bytes, or screens as (144, 160, 3 or 4) uint8 arrays (RGB or RGBA: the alpha is
    dropped) that ``write_segment`` encodes: the recorder leaves encoding to the queue's
    thread, off the sampling path"""
    encoding: str = "observation"
    """how the steps' observations are encoded (``koholint.env.encoding.ENCODINGS``)"""

    @property
    def prefix(self) -> str:
        return f"episodes/{self.run}/{self.episode}/{self.index:05d}"


def write_segment(store: ObjectStore, segment: Segment) -> dict[str, Any]:
    """Write the segment's files and its manifest; returns the manifest."""
    files: dict[str, bytes] = {}
    for offset, frame in enumerate(segment.frames):
        png = frame if isinstance(frame, bytes) else encode_png(frame[:, :, :3])
        files[f"frames/{segment.steps[offset]['t']:06d}.png"] = png
    files["ram.jsonl"] = "".join(
        json.dumps(step, separators=(",", ":")) + "\n" for step in segment.steps
    ).encode()
    for name, data in files.items():
        store.put(
            f"{segment.prefix}/{name}",
            data,
            "image/png" if name.endswith(".png") else "application/x-ndjson",
        )
    manifest = {
        "schema_version": EXPORT_SCHEMA_VERSION,
        "run": segment.run,
        "episode": segment.episode,
        "segment": segment.index,
        "steps": len(segment.steps),
        "encoder_version": encoder_version(segment.encoding),
        "first_step": segment.steps[0]["t"] if segment.steps else None,
        "files": {name: hashlib.sha256(data).hexdigest() for name, data in sorted(files.items())},
    }
    put_json(store, f"{segment.prefix}/manifest.json", manifest)
    return manifest


class SegmentFormatError(ValueError):
    """A stored segment this reader cannot use; the message names the segment and the fix."""


@dataclass(frozen=True)
class StoredSegment:
    prefix: str
    manifest: dict[str, Any]
    steps: list[dict[str, Any]]


def read_segment(store: ObjectStore, prefix: str) -> StoredSegment:
    """The manifest and steps of the segment at `prefix`, its ram.jsonl checked against the
    manifest's sha256. Refuses export schema versions other than this reader's."""
    manifest = json.loads(store.get(f"{prefix}/manifest.json"))
    version = manifest.get("schema_version")
    if version != EXPORT_SCHEMA_VERSION:
        raise SegmentFormatError(
            f"{prefix}: export schema_version {version!r}, this reader knows {EXPORT_SCHEMA_VERSION}"
            " (version 1 segments carry no observations): re-export with this version of koholint"
            " or read them with the version that wrote them"
        )
    data = store.get(f"{prefix}/ram.jsonl")
    if hashlib.sha256(data).hexdigest() != manifest.get("files", {}).get("ram.jsonl"):
        raise SegmentFormatError(
            f"{prefix}: ram.jsonl does not match the manifest's sha256; re-export it"
        )
    steps = [json.loads(line) for line in data.decode().splitlines() if line]
    return StoredSegment(prefix, manifest, steps)


class ExportQueue:
    """A bounded queue of segments, written to the store (and announced on the bus) by a thread."""

    def __init__(self, store: ObjectStore, *, bus: Bus | None = None, capacity: int = 16) -> None:
        self.store = store
        self.bus = bus
        self.dropped = 0
        self.written = 0
        self.failed = 0
        self._queue: queue.Queue[Segment | None] = queue.Queue(maxsize=capacity)
        self._thread = threading.Thread(target=self._drain, name="segment-export", daemon=True)
        self._thread.start()

    def offer(self, segment: Segment) -> bool:
        try:
            self._queue.put_nowait(segment)
        except queue.Full:
            self.dropped += 1
            logger.warning("export queue full: segment dropped", extra={"event": "segment_dropped"})
            return False
        return True

    def _drain(self) -> None:
        while (segment := self._queue.get()) is not None:
            try:
                write_segment(self.store, segment)
                if self.bus is not None:
                    self.bus.publish(STREAM_SEGMENTS, {
                        "schema_version": EXPORT_SCHEMA_VERSION, "run": segment.run,
                        "episode": segment.episode, "segment": segment.index,
                        "manifest_key": f"{segment.prefix}/manifest.json", "prefix": segment.prefix,
                    })  # fmt: skip
                self.written += 1
            except Exception:
                self.failed += 1
                logger.exception("segment export failed", extra={"event": "segment_failed"})
            finally:
                self._queue.task_done()

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until every queued segment is written (or has failed); False if `timeout`
        seconds passed first."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._queue.all_tasks_done:
            while self._queue.unfinished_tasks:
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    return False
                self._queue.all_tasks_done.wait(remaining)
        return True

    def close(self) -> None:
        self.flush()
        self._queue.put(None)
        self._thread.join(timeout=30)

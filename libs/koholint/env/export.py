"""Episode export: segments of N steps (PNG frames, ram.jsonl, manifest) into the object store.

Layout: ``episodes/<run>/<episode>/<segment>/`` with ``frames/<t>.png``, ``ram.jsonl`` (one
line per step: action, reward and its components, the observation vector after the step and
the structured state) and ``manifest.json`` (``schema_version``, the observation's
``encoder_version`` and the sha256 of every file). ``read_segment`` reads one back, refusing
versions it does not know. When a bus is given, each written segment is announced on
``koholint.segments`` with its keys.

Export goes through an outbox, so a stalled neighbour loses nothing the store accepted.
``SegmentRecorder`` hands finished segments to an ``ExportQueue`` (bounded): its writer thread
PNG-encodes a segment's frames and writes its files, the manifest last; its announcer thread
then announces the segment on the stream with ``publish_once`` (idempotent), retrying with
backoff until Redis answers. When the queue is full the producer waits (bounded, the wait
counted) rather than drop. The store is the record and the stream the notice:
``announce_stored`` announces again every stored segment whose notice never went out, after
a restart too. A segment of 256 raw frames holds ~24 MB until written (RGBA screens), so a
full queue of 16 holds ~380 MB.
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
EXPORT_COUNTS = ("written", "announced", "dropped", "failed", "abandoned")
"""What an export queue counts: segments written to the store, announced on the stream,
dropped (the queue stayed full past the producer's wait), failed (the store refused them) and
abandoned (still queued, unwritten, when the queue closed)."""
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


def announcement(prefix: str) -> dict[str, Any]:
    """The stream's notice of the segment at `prefix` (``episodes/<run>/<episode>/<index>``)."""
    _, run, episode, index = prefix.split("/")
    return {
        "schema_version": EXPORT_SCHEMA_VERSION, "run": run, "episode": episode,
        "segment": int(index), "manifest_key": f"{prefix}/manifest.json", "prefix": prefix,
    }  # fmt: skip


def announce_stored(store: ObjectStore, bus: Bus, run: str) -> dict[str, int]:
    """Announce every stored segment of `run` (those with a manifest) whose notice never went
    out; segments already announced are left alone (``publish_once``). Returns how many were
    found and how many were announced now."""
    prefixes = [
        key.removesuffix("/manifest.json")
        for key in store.list(f"episodes/{run}/")
        if key.endswith("/manifest.json") and key.count("/") == 4
    ]
    announced = sum(
        bus.publish_once(STREAM_SEGMENTS, prefix, announcement(prefix)) is not None
        for prefix in prefixes
    )
    return {"stored": len(prefixes), "announced": announced}


class ExportQueue:
    """A bounded queue of segments: a writer thread writes them to the store, an announcer
    thread announces the written ones on the bus until it answers.

    `offer_wait_s` bounds how long a producer waits for room; `retry_s` is the announcer's
    first backoff, doubled up to `retry_max_s` while the bus fails."""

    def __init__(self, store: ObjectStore, *, bus: Bus | None = None, capacity: int = 16,
                 offer_wait_s: float = 60.0, retry_s: float = 0.2, retry_max_s: float = 10.0) -> None:  # fmt: skip
        self.store = store
        self.bus = bus
        self.offer_wait_s = offer_wait_s
        self.retry_s, self.retry_max_s = retry_s, retry_max_s
        self.counts = dict.fromkeys(EXPORT_COUNTS, 0)
        self.wait_seconds = 0.0
        """time producers spent waiting for room in the queue"""
        self._store_failing = False  # the last write failed: a full queue drops at once
        self._queue: queue.Queue[Segment] = queue.Queue(maxsize=capacity)
        self._outbox: list[str] = []  # written, not yet announced: segment prefixes
        self._changed = threading.Condition()
        self._closed = threading.Event()
        self._threads = [
            threading.Thread(target=self._write_loop, name="segment-export", daemon=True),
            threading.Thread(target=self._announce_loop, name="segment-announce", daemon=True),
        ]
        for thread in self._threads:
            thread.start()

    @property
    def unannounced(self) -> int:
        """Segments written to the store whose announcement has not gone out yet."""
        with self._changed:
            return len(self._outbox)

    def offer(self, segment: Segment) -> bool:
        """Queue the segment, waiting up to `offer_wait_s` for room (not at all while the store
        refuses writes); False if it was dropped."""
        if self._closed.is_set():
            raise RuntimeError("the export queue is closed: open a new one for a new run")
        started = time.monotonic()
        try:
            self._queue.put(segment, timeout=0.001 if self._store_failing else self.offer_wait_s)
        except queue.Full:
            self._count("dropped")
            logger.warning("export queue full for %.0f s: segment %s dropped", self.offer_wait_s,
                           segment.prefix, extra={"event": "segment_dropped"})  # fmt: skip
            return False
        finally:
            self.wait_seconds += time.monotonic() - started
        return True

    def _count(self, name: str) -> None:
        with self._changed:
            self.counts[name] += 1
            self._changed.notify_all()

    def _write_loop(self) -> None:
        while not self._closed.is_set():
            try:
                segment = self._queue.get(timeout=0.2)
            except queue.Empty:
                continue
            try:
                write_segment(self.store, segment)
                self._store_failing = False
                with self._changed:
                    self.counts["written"] += 1
                    if self.bus is not None:
                        self._outbox.append(segment.prefix)
                    self._changed.notify_all()
            except Exception:
                self._store_failing = True
                self._count("failed")
                logger.exception("segment export failed", extra={"event": "segment_failed"})
            finally:
                self._queue.task_done()
                with self._changed:
                    self._changed.notify_all()

    def _announce_loop(self) -> None:
        backoff = self.retry_s
        while not self._closed.is_set():
            with self._changed:
                if not self._outbox:
                    self._changed.wait(0.2)
                    continue
                prefix = self._outbox[0]
            try:
                assert self.bus is not None  # nothing reaches the outbox without a bus
                self.bus.publish_once(STREAM_SEGMENTS, prefix, announcement(prefix))
            except Exception as error:
                logger.warning("announcing %s failed, retrying in %.1f s: %s", prefix, backoff,
                               error, extra={"event": "segment_announce_retry"})  # fmt: skip
                self._closed.wait(backoff)
                backoff = min(backoff * 2, self.retry_max_s)
                continue
            backoff = self.retry_s
            with self._changed:
                self._outbox.pop(0)
                self.counts["announced"] += 1
                self._changed.notify_all()

    def flush(self, timeout: float | None = None, *, announced: bool = True) -> bool:
        """Wait until every queued segment is written (or has failed) and, with `announced`,
        every written one announced; False if `timeout` seconds passed first."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._changed:
            while self._queue.unfinished_tasks or (announced and self._outbox):
                remaining = None if deadline is None else deadline - time.monotonic()
                if self._closed.is_set() or (remaining is not None and remaining <= 0):
                    return False
                self._changed.wait(0.2 if remaining is None else min(remaining, 0.2))
        return True

    def close(self, timeout: float | None = None) -> dict[str, int]:
        """Flush (up to `timeout`), stop the threads and count what never left: segments still
        queued are abandoned; written ones left unannounced stay in the store for
        ``announce_stored``. Returns the counts with ``unannounced``."""
        self.flush(timeout)
        self._closed.set()
        for thread in self._threads:
            thread.join(timeout=30)
        while True:
            try:
                self._queue.get_nowait()
            except queue.Empty:
                break
            self._queue.task_done()
            self.counts["abandoned"] += 1
        return {**self.counts, "unannounced": self.unannounced}

"""The consumer of ``koholint.segments`` (group ``evaluator``): score, write, publish, then ack.

At-least-once delivery, idempotent results: a message is acknowledged only once its segment
has a score record (new or found), or once it was dead-lettered. A segment that can never be
scored (foreign message, missing or unknown manifest, files that do not match it) goes to
``koholint.segments.dead`` with the reason. When the judges or the store are unreachable the
messages stay pending and the consumer pauses before reading more: they are scored once the
dependencies are back (another consumer, or this one after a restart, reclaims them).
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from typing import Any

from evaluator.scoring import BatchReport, Evaluator, PrefixResult
from koholint.bus import DEAD_LETTER_SUFFIX, Bus, Message, dead_letter_payload

logger = logging.getLogger("evaluator.ingest")
MAX_PREFIX_CHARS = 512


@dataclass
class IngestCounts:
    batches: int = 0
    scored: int = 0
    already_scored: int = 0
    dead_lettered: int = 0
    deferred: int = 0


def message_prefix(payload: dict[str, Any]) -> str:
    """The segment prefix a koholint.segments message names; ValueError if it names none."""
    if payload.get("schema_version") not in (1, 2):
        raise ValueError(f"unknown message schema_version {payload.get('schema_version')!r}")
    prefix = payload.get("prefix")
    if not isinstance(prefix, str) or not 0 < len(prefix) <= MAX_PREFIX_CHARS:
        raise ValueError("the message has no segment prefix")
    manifest = payload.get("manifest_key")
    if manifest is not None and manifest != f"{prefix}/manifest.json":
        raise ValueError(f"manifest_key {manifest!r} is not under the prefix {prefix!r}")
    return prefix


class Ingestor:
    """Reads segment messages in batches and settles each one (ack, dead-letter or leave)."""

    def __init__(
        self,
        bus: Bus,
        evaluator: Evaluator,
        *,
        stream: str,
        group: str,
        consumer: str,
        batch_size: int = 16,
        block_ms: int = 2000,
        unavailable_pause_s: float = 5.0,
    ) -> None:
        self.bus, self.evaluator = bus, evaluator
        self.stream, self.group, self.consumer = stream, group, consumer
        self.batch_size, self.block_ms = batch_size, block_ms
        self.unavailable_pause_s = unavailable_pause_s
        self.counts = IngestCounts()
        self.last_error: str | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self.bus.ensure_group(self.stream, self.group)
        self._thread = threading.Thread(target=self._loop, name="evaluator-ingest", daemon=True)
        self._thread.start()

    def stop(self, timeout_s: float = 30.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=timeout_s)

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                deferred = self.poll()
            except Exception as error:  # the bus is down: keep trying, never die
                self.last_error = f"{type(error).__name__}: {error}"
                logger.warning("ingest failed: %s", error, extra={"event": "ingest_error"})
                deferred = True
            if deferred:
                self._stop.wait(self.unavailable_pause_s)

    def poll(self) -> bool:
        """One batch: read, settle; True when some messages were deferred (pause before more)."""
        messages = self.bus.consume(
            self.stream, self.group, self.consumer, count=self.batch_size, block_ms=self.block_ms
        )
        if not messages:
            return False
        self.last_error = None  # settle() records the reason when something is deferred
        report = self.settle(messages)
        return bool(report.by_outcome("deferred"))

    def settle(self, messages: list[Message]) -> BatchReport:
        """Score the messages' segments; ack what is scored, dead-letter what never will be."""
        by_prefix: dict[str, list[Message]] = {}
        for message in messages:
            try:
                by_prefix.setdefault(message_prefix(message.payload), []).append(message)
            except ValueError as error:
                self._dead_letter(message, f"foreign message: {error}")
        report = self.evaluator.evaluate(list(by_prefix))
        for result in report.results:
            self._settle_one(result, by_prefix.get(result.prefix, []))
        self.counts.batches += 1
        return report

    def _settle_one(self, result: PrefixResult, messages: list[Message]) -> None:
        ids = [message.id for message in messages]
        if result.outcome == "scored":
            self.counts.scored += 1
            self.bus.ack(self.stream, self.group, ids)
        elif result.outcome == "already_scored":
            self.counts.already_scored += 1
            self.evaluator.republish(result.prefix)
            self.bus.ack(self.stream, self.group, ids)
        elif result.outcome == "rejected":
            for message in messages:
                self._dead_letter(message, result.detail)
        else:
            self.counts.deferred += 1
            self.last_error = result.detail

    def _dead_letter(self, message: Message, reason: str) -> None:
        logger.warning("dead-lettered %s: %s", message.id, reason, extra={"event": "dead_letter"})
        self.bus.publish(self.stream + DEAD_LETTER_SUFFIX, dead_letter_payload(message, reason))
        self.bus.ack(self.stream, self.group, [message.id])
        self.counts.dead_lettered += 1
        self.evaluator.metrics.dead_letters.inc()


def consumer_lag(bus: Bus, stream: str, group: str) -> int | None:
    """Messages of the stream the group has not acknowledged (not yet read + pending)."""
    redis = getattr(bus, "redis", None)
    if redis is not None:
        for info in redis.xinfo_groups(stream):
            name = info.get("name")
            if (name.decode() if isinstance(name, bytes) else name) == group:
                return int(info.get("lag") or 0) + int(info.get("pending") or 0)
        return None
    groups = getattr(bus, "_groups", None)  # MemoryBus: the same numbers from its state
    entries = getattr(bus, "_entries", {})
    if groups is None or (stream, group) not in groups:
        return None
    state = groups[(stream, group)]
    return int(len(entries.get(stream, [])) - state["next"] + len(state["pending"]))

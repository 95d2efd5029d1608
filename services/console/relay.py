"""The relay: koholint.positions (Redis) to browsers over Server-Sent Events, with bounded fan-out.

One reader task follows the stream and hands each valid event to every subscriber; handing over
never waits (a dict assignment). Each browser's subscriber keeps only the newest event per env
(older ones are coalesced away), and its connection sends at most ``max_events_per_second`` in
``flush_hz`` batches. A browser whose send does not finish within ``send_timeout_seconds``, or
that lags behind more than ``max_pending`` envs, is dropped; at ``max_clients`` new streams get
429. A browser that joins late first gets the recent history (trails and heat).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import itertools
import json
import logging
import time
from typing import Any

from pydantic import ValidationError
from starlette.types import Receive, Scope, Send

from console.metrics import Metrics
from koholint.bus import PAYLOAD_FIELD
from koholint.schemas.positions import PositionEvent
from koholint.web.problems import TooManyError
from koholint.web.streaming import send_chunk, start_stream, until_disconnect

logger = logging.getLogger("console.relay")
KEEPALIVE_SECONDS = 15.0
READ_BLOCK_MS = 1000
READ_COUNT = 1000

EnvKey = tuple[str, str, str]


class Subscriber:
    """One browser's queue: the newest event of each env, waiting to be sent."""

    _ids = itertools.count(1)

    def __init__(self, max_pending: int, metrics: Metrics) -> None:
        self.id = next(self._ids)
        self.max_pending = max_pending
        self.metrics = metrics
        self.pending: dict[EnvKey, str] = {}
        self.wake = asyncio.Event()
        self.dropped: str | None = None
        self.delivered = 0

    def offer(self, key: EnvKey, text: str) -> None:
        """Never waits: replaces the env's previous event if the browser has not had it yet."""
        if self.dropped:
            return
        if self.pending.pop(key, None) is not None:
            self.metrics.coalesced.inc()
        self.pending[key] = text
        if len(self.pending) > self.max_pending:
            self.drop("backlog")
        self.wake.set()

    def drop(self, reason: str) -> None:
        if self.dropped is None:
            self.dropped = reason
            self.pending.clear()
            self.metrics.dropped_clients.labels(reason).inc()
        self.wake.set()

    def take(self, budget: int) -> list[str]:
        """Up to `budget` events, the longest-waiting envs first."""
        batch = []
        for key in itertools.islice(list(self.pending), budget):
            batch.append(self.pending.pop(key))
        if not self.pending:
            self.wake.clear()
        return batch


class PositionHub:
    """Recent history and the subscribers; fed by `follow` (Redis) or `dispatch` (tests, local)."""

    def __init__(
        self, *, max_clients: int, max_pending: int, history_size: int, metrics: Metrics
    ) -> None:
        self.max_clients = max_clients
        self.max_pending = max_pending
        self.metrics = metrics
        self.history: collections.deque[str] = collections.deque(maxlen=history_size)
        self.subscribers: set[Subscriber] = set()
        self.last_id = "$"
        self.connected = False
        self._last_batch: list[str] = []
        self._last_chunk = b""

    def chunk(self, batch: list[str]) -> bytes:
        """The SSE chunk of a batch, encoded once per tick: browsers that keep up are handed
        the same events (the same objects) at the same tick, so they share one payload."""
        last = self._last_batch
        if len(batch) != len(last) or any(a is not b for a, b in zip(batch, last, strict=True)):
            self._last_batch, self._last_chunk = (
                batch,
                sse("positions", "[" + ",".join(batch) + "]"),
            )
        return self._last_chunk

    def subscribe(self) -> Subscriber:
        if len(self.subscribers) >= self.max_clients:
            self.metrics.refused_clients.inc()
            raise TooManyError(
                f"{self.max_clients} live-map streams are open (KOHOLINT_CONSOLE_MAX_CLIENTS); "
                "close one or retry later",
                limit=self.max_clients,
            )
        subscriber = Subscriber(self.max_pending, self.metrics)
        self.subscribers.add(subscriber)
        self.metrics.clients.set(len(self.subscribers))
        return subscriber

    def unsubscribe(self, subscriber: Subscriber) -> None:
        self.subscribers.discard(subscriber)
        self.metrics.clients.set(len(self.subscribers))

    def dispatch(self, raw: str | bytes) -> bool:
        """Validate one stream entry and hand it to every subscriber; False if it is invalid."""
        try:
            event = PositionEvent.model_validate_json(raw)
        except ValidationError:
            self.metrics.invalid.inc()
            return False
        text = raw.decode() if isinstance(raw, bytes) else raw
        key = (event.source, event.run, event.env)
        self.history.append(text)
        self.metrics.received.inc()
        for subscriber in self.subscribers:
            subscriber.offer(key, text)
        return True

    async def follow(self, client: Any, stream: str) -> None:
        """Read the stream forever: the recent history first, then each new entry."""
        await self._load_history(client, stream)
        while True:
            try:
                response = await client.xread(
                    {stream: self.last_id}, count=READ_COUNT, block=READ_BLOCK_MS
                )
                self.connected = True
            except Exception:  # Redis restarting: the page keeps its map, the dots pause
                self.connected = False
                logger.warning("reading %s failed; retrying in 1 s", stream, exc_info=True)
                await asyncio.sleep(1.0)
                continue
            for _, entries in response or []:
                for entry_id, fields in entries:
                    self.last_id = _text(entry_id)
                    self.dispatch(fields.get(PAYLOAD_FIELD.encode(), b"{}"))

    async def _load_history(self, client: Any, stream: str) -> None:
        with contextlib.suppress(Exception):  # no Redis yet: follow() retries
            entries = await client.xrevrange(stream, count=self.history.maxlen or 1)
            self.connected = True
            if entries:
                self.last_id = _text(entries[0][0])
            for _, fields in reversed(entries):
                self.dispatch(fields.get(PAYLOAD_FIELD.encode(), b"{}"))


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def sse(event: str, data: str) -> bytes:
    return f"event: {event}\ndata: {data}\n\n".encode()


class PositionStream:
    """The SSE response of one browser: history, then paced batches; slow browsers are dropped."""

    def __init__(
        self, hub: PositionHub, *, max_events_per_second: int, flush_hz: int, send_timeout: float
    ) -> None:
        self.hub = hub
        self.subscriber = hub.subscribe()
        self.interval = 1.0 / flush_hz
        self.budget = max(1, max_events_per_second // flush_hz)
        self.send_timeout = send_timeout

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await until_disconnect(receive, self._send_all(send))
        finally:
            self.hub.unsubscribe(self.subscriber)

    async def _send_all(self, send: Send) -> None:
        await start_stream(send, b"text/event-stream")
        history = "[" + ",".join(self.hub.history) + "]"
        if not await self._send(send, sse("history", history)):
            return
        subscriber = self.subscriber
        while subscriber.dropped is None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(subscriber.wake.wait(), KEEPALIVE_SECONDS)
            if subscriber.dropped is not None:
                break
            batch = subscriber.take(self.budget)
            chunk = self.hub.chunk(batch) if batch else b": keepalive\n\n"
            if not await self._send(send, chunk):
                return
            subscriber.delivered += len(batch)
            self.hub.metrics.delivered.inc(len(batch))
            # Every stream waits for the same tick of the clock: the process (and the browsers'
            # machine) wakes once per tick for all of them, not once per stream.
            await asyncio.sleep(self.interval - time.monotonic() % self.interval)
        if await self._send(send, sse("dropped", json.dumps({"reason": subscriber.dropped}))):
            await send({"type": "http.response.body", "body": b"", "more_body": False})

    async def _send(self, send: Send, body: bytes) -> bool:
        outcome = await send_chunk(send, body, self.send_timeout)
        if outcome == "slow":
            self.subscriber.drop("slow")
        return outcome == "sent"

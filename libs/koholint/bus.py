"""The bus: Redis streams with consumer groups, and an in-process twin with the same semantics.

Producers ``publish`` small JSON messages (a ``schema_version`` and object-store keys, never
large payloads). Consumers in a group ``consume``: new messages, plus messages another
consumer took but did not ``ack`` within ``reclaim_after_ms`` (it crashed or stalled). A
message delivered more than ``max_deliveries`` times goes to the stream's dead-letter stream
(``<stream>.dead``) with the reason, and is acknowledged on the original stream.

    bus = RedisBus(redis.Redis(), reclaim_after_ms=30_000, max_deliveries=5)
    bus = MemoryBus()  # one machine, no server: the embedded default
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from typing import Any, Protocol

STREAM_SEGMENTS = "koholint.segments"
STREAM_SCORES = "koholint.scores"
STREAM_REWARD_MODELS = "koholint.reward-models"
# Live positions for the console: capped (oldest trimmed) and lossy by design.
STREAM_POSITIONS = "koholint.positions"
POSITIONS_MAX_LENGTH = 10_000
DEAD_LETTER_SUFFIX = ".dead"
MAX_MESSAGE_BYTES = 64 * 1024
PAYLOAD_FIELD = "payload"
# How long publish_once remembers a key: far longer than any retry of one announcement.
ONCE_TTL_SECONDS = 7 * 24 * 3600
# The default of RedisSettings.redis_timeout_s: connect and socket timeouts of every client.
REDIS_TIMEOUT_SECONDS = 5.0


class BusError(RuntimeError):
    """The bus refused a message or an operation; the message says why."""


@dataclass(frozen=True)
class Message:
    stream: str
    id: str
    payload: dict[str, Any]
    deliveries: int


class Bus(Protocol):
    def publish(self, stream: str, payload: dict[str, Any]) -> str: ...

    def publish_once(self, stream: str, key: str, payload: dict[str, Any]) -> str | None:
        """Publish unless a message with this `key` was published on `stream` before: the
        entry id, or None when it was. Retrying after a timeout never publishes twice."""
        ...

    def ensure_group(self, stream: str, group: str) -> None: ...

    def consume(
        self, stream: str, group: str, consumer: str, *, count: int = 10, block_ms: int = 0
    ) -> list[Message]: ...

    def ack(self, stream: str, group: str, ids: list[str]) -> int: ...

    def dead_letters(self, stream: str) -> list[Message]: ...


def encode_payload(payload: dict[str, Any]) -> str:
    if "schema_version" not in payload:
        raise BusError("every bus message carries a schema_version; add it to the payload")
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"))
    if len(text.encode()) > MAX_MESSAGE_BYTES:
        raise BusError(
            f"message of {len(text.encode())} bytes exceeds {MAX_MESSAGE_BYTES}: put the data in the "
            "object store and send its keys"
        )
    return text


def connect_redis(url: str, *, timeout_s: float = REDIS_TIMEOUT_SECONDS, block_ms: int = 0) -> Any:
    """A Redis client whose connects and reads give up after `timeout_s` (plus `block_ms` for
    clients that block on XREADGROUP): a stalled Redis fails a call, it never hangs a thread."""
    import redis

    return redis.Redis.from_url(
        url, socket_connect_timeout=timeout_s, socket_timeout=timeout_s + block_ms / 1000
    )


def connect_redis_async(
    url: str, *, timeout_s: float = REDIS_TIMEOUT_SECONDS, block_ms: int = 0
) -> Any:
    """``connect_redis`` for asyncio callers."""
    import redis.asyncio

    return redis.asyncio.Redis.from_url(
        url, socket_connect_timeout=timeout_s, socket_timeout=timeout_s + block_ms / 1000
    )


def once_key(stream: str, key: str) -> str:
    """The Redis key that remembers `key` was published on `stream`."""
    return f"{stream}.once:{key}"


def dead_letter_payload(message: Message, reason: str) -> dict[str, Any]:
    return {
        "schema_version": 1,
        "original_stream": message.stream,
        "original_id": message.id,
        "deliveries": message.deliveries,
        "reason": reason,
        "payload": message.payload,
    }


class RedisBus:
    """Redis streams: XADD, XREADGROUP, XACK, XAUTOCLAIM for stalled entries, XPENDING counts."""

    def __init__(
        self,
        client: Any,
        *,
        reclaim_after_ms: int = 30_000,
        max_deliveries: int = 5,
        max_length: int = 100_000,
    ) -> None:
        self.redis = client
        self.reclaim_after_ms = reclaim_after_ms
        self.max_deliveries = max_deliveries
        self.max_length = max_length

    def publish(self, stream: str, payload: dict[str, Any]) -> str:
        message_id = self.redis.xadd(
            stream,
            {PAYLOAD_FIELD: encode_payload(payload)},
            maxlen=self.max_length,
            approximate=True,
        )
        return _text(message_id)

    # SET NX and XADD in one script: atomic, so a retry after a lost reply is a no-op.
    _PUBLISH_ONCE = """
    if redis.call('SET', KEYS[1], '1', 'NX', 'EX', ARGV[3]) then
      return redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[2], '*', ARGV[4], ARGV[1])
    end
    return false
    """

    def publish_once(self, stream: str, key: str, payload: dict[str, Any]) -> str | None:
        message_id = self.redis.eval(
            self._PUBLISH_ONCE, 2, once_key(stream, key), stream, encode_payload(payload),
            self.max_length, ONCE_TTL_SECONDS, PAYLOAD_FIELD,
        )  # fmt: skip
        return _text(message_id) if message_id else None

    def ensure_group(self, stream: str, group: str) -> None:
        import redis

        try:
            self.redis.xgroup_create(stream, group, id="0", mkstream=True)
        except redis.ResponseError as error:
            if "BUSYGROUP" not in str(error):
                raise

    def consume(
        self, stream: str, group: str, consumer: str, *, count: int = 10, block_ms: int = 0
    ) -> list[Message]:
        self.ensure_group(stream, group)
        messages = self._reclaim(stream, group, consumer, count)
        if len(messages) < count:
            response = self.redis.xreadgroup(
                group, consumer, {stream: ">"}, count=count - len(messages), block=block_ms or None
            )
            for _, entries in response or []:
                messages += [
                    self._message(stream, entry_id, fields, 1) for entry_id, fields in entries
                ]
        return messages

    def _reclaim(self, stream: str, group: str, consumer: str, count: int) -> list[Message]:
        """Take over entries idle longer than reclaim_after_ms; dead-letter those delivered too often."""
        _, claimed, *_ = self.redis.xautoclaim(
            stream, group, consumer, self.reclaim_after_ms, "0-0", count=count
        )
        if not claimed:
            return []
        deliveries = self._deliveries(stream, group, [entry_id for entry_id, _ in claimed])
        messages = []
        for entry_id, fields in claimed:
            if fields is None:  # deleted from the stream while pending
                self.redis.xack(stream, group, entry_id)
                continue
            message = self._message(stream, entry_id, fields, deliveries.get(_text(entry_id), 1))
            if message.deliveries > self.max_deliveries:
                self.publish(
                    stream + DEAD_LETTER_SUFFIX,
                    dead_letter_payload(
                        message, f"delivered {message.deliveries} times without ack"
                    ),
                )
                self.redis.xack(stream, group, entry_id)
            else:
                messages.append(message)
        return messages

    def _deliveries(self, stream: str, group: str, ids: list[Any]) -> dict[str, int]:
        counts = {}
        for entry_id in ids:
            for pending in self.redis.xpending_range(
                stream, group, min=entry_id, max=entry_id, count=1
            ):
                counts[_text(pending["message_id"])] = int(pending["times_delivered"])
        return counts

    @staticmethod
    def _message(stream: str, entry_id: Any, fields: dict[Any, Any], deliveries: int) -> Message:
        raw = fields.get(PAYLOAD_FIELD) or fields.get(PAYLOAD_FIELD.encode())
        return Message(stream, _text(entry_id), json.loads(_text(raw)), deliveries)

    def ack(self, stream: str, group: str, ids: list[str]) -> int:
        return int(self.redis.xack(stream, group, *ids)) if ids else 0

    def dead_letters(self, stream: str) -> list[Message]:
        entries = self.redis.xrange(stream + DEAD_LETTER_SUFFIX)
        return [
            self._message(stream + DEAD_LETTER_SUFFIX, entry_id, fields, 0)
            for entry_id, fields in entries
        ]


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


@dataclass
class _Pending:
    consumer: str
    delivered_at: float
    deliveries: int


class MemoryBus:
    """The same semantics in one process, for the embedded default and logic tests."""

    def __init__(self, *, reclaim_after_ms: int = 30_000, max_deliveries: int = 5) -> None:
        self.reclaim_after_ms = reclaim_after_ms
        self.max_deliveries = max_deliveries
        self._entries: dict[str, list[tuple[str, str]]] = {}
        self._groups: dict[tuple[str, str], dict[str, Any]] = {}
        self._sequence = 0
        self._once: set[tuple[str, str]] = set()
        self._changed = threading.Condition()

    def publish(self, stream: str, payload: dict[str, Any]) -> str:
        text = encode_payload(payload)
        with self._changed:
            self._sequence += 1
            entry_id = f"{int(time.time() * 1000)}-{self._sequence}"
            self._entries.setdefault(stream, []).append((entry_id, text))
            self._changed.notify_all()
        return entry_id

    def publish_once(self, stream: str, key: str, payload: dict[str, Any]) -> str | None:
        encode_payload(payload)  # a refused message marks nothing
        with self._changed:
            if (stream, key) in self._once:
                return None
            self._once.add((stream, key))
        return self.publish(stream, payload)

    def ensure_group(self, stream: str, group: str) -> None:
        with self._changed:
            self._entries.setdefault(stream, [])
            self._groups.setdefault((stream, group), {"next": 0, "pending": {}})

    def consume(
        self, stream: str, group: str, consumer: str, *, count: int = 10, block_ms: int = 0
    ) -> list[Message]:
        self.ensure_group(stream, group)
        deadline = time.monotonic() + block_ms / 1000
        with self._changed:
            while True:
                messages = self._reclaim(stream, group, consumer, count)
                messages += self._read_new(stream, group, consumer, count - len(messages))
                remaining = deadline - time.monotonic()
                if messages or block_ms <= 0 or remaining <= 0:
                    return messages
                self._changed.wait(remaining)

    def _reclaim(self, stream: str, group: str, consumer: str, count: int) -> list[Message]:
        state = self._groups[(stream, group)]
        now = time.monotonic()
        texts = dict(self._entries[stream])
        messages: list[Message] = []
        for entry_id, pending in list(state["pending"].items()):
            if (
                len(messages) >= count
                or (now - pending.delivered_at) * 1000 < self.reclaim_after_ms
            ):
                continue
            pending.consumer, pending.delivered_at = consumer, now
            pending.deliveries += 1
            message = Message(stream, entry_id, json.loads(texts[entry_id]), pending.deliveries)
            if pending.deliveries > self.max_deliveries:
                del state["pending"][entry_id]
                self._append_dead(message)
            else:
                messages.append(message)
        return messages

    def _append_dead(self, message: Message) -> None:
        dead = message.stream + DEAD_LETTER_SUFFIX
        reason = f"delivered {message.deliveries} times without ack"
        self._sequence += 1
        self._entries.setdefault(dead, []).append(
            (
                f"{int(time.time() * 1000)}-{self._sequence}",
                encode_payload(dead_letter_payload(message, reason)),
            )
        )

    def _read_new(self, stream: str, group: str, consumer: str, count: int) -> list[Message]:
        state = self._groups[(stream, group)]
        entries = self._entries[stream][state["next"] : state["next"] + max(count, 0)]
        state["next"] += len(entries)
        now = time.monotonic()
        for entry_id, _ in entries:
            state["pending"][entry_id] = _Pending(consumer, now, 1)
        return [Message(stream, entry_id, json.loads(text), 1) for entry_id, text in entries]

    def ack(self, stream: str, group: str, ids: list[str]) -> int:
        with self._changed:
            pending = self._groups.get((stream, group), {"pending": {}})["pending"]
            return sum(1 for entry_id in ids if pending.pop(entry_id, None) is not None)

    def dead_letters(self, stream: str) -> list[Message]:
        dead = stream + DEAD_LETTER_SUFFIX
        with self._changed:
            return [
                Message(dead, entry_id, json.loads(text), 0)
                for entry_id, text in self._entries.get(dead, [])
            ]

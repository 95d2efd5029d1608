"""The relay: bounded fan-out, per-browser rate, coalescing, slow and lagging browsers dropped."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import pytest

from console.metrics import Metrics
from console.relay import PositionHub, PositionStream
from koholint.schemas.positions import position_event
from koholint.web.problems import TooManyError

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _event(env: str, x: int = 10, run: str = "r") -> str:
    event = position_event(
        "trainer", run, env, (0, 0, 33), x, 20, progress=0, episode_step=1, rooms=1
    )
    return json.dumps(event)


def _hub(**limits: int) -> PositionHub:
    settings = {"max_clients": 4, "max_pending": 64, "history_size": 100, **limits}
    return PositionHub(metrics=Metrics(), **settings)


def test_max_clients_then_429():
    hub = _hub(max_clients=2)
    first, _ = hub.subscribe(), hub.subscribe()
    with pytest.raises(TooManyError) as refused:
        hub.subscribe()
    assert refused.value.extra["limit"] == 2
    hub.unsubscribe(first)
    hub.subscribe()  # a place freed


def test_invalid_events_are_counted_not_relayed():
    hub = _hub()
    subscriber = hub.subscribe()
    assert not hub.dispatch(b'{"schema_version": 1, "run": "../etc"}')
    assert not hub.dispatch(b"not json")
    assert hub.dispatch(_event("0"))
    assert len(subscriber.take(10)) == 1
    assert len(hub.history) == 1


def test_newest_event_per_env_wins_and_backlog_drops():
    hub = _hub(max_pending=16)
    subscriber = hub.subscribe()
    for x in range(5):
        hub.dispatch(_event("same", x=x))
    batch = subscriber.take(10)
    assert [json.loads(text)["x"] for text in batch] == [4]
    for env in range(17):
        hub.dispatch(_event(str(env)))
    assert subscriber.dropped == "backlog"
    assert subscriber.take(100) == []


def test_browsers_that_keep_up_share_one_encoded_batch():
    hub = _hub()
    first, second = hub.subscribe(), hub.subscribe()
    for env in range(3):
        hub.dispatch(_event(str(env)))
    chunk = hub.chunk(first.take(10))
    assert hub.chunk(second.take(10)) is chunk  # encoded once for both
    assert chunk.startswith(b"event: positions\ndata: [")
    assert [event["env"] for event in json.loads(chunk.split(b"data: ")[1])] == ["0", "1", "2"]
    hub.dispatch(_event("0", x=99))
    later = hub.chunk(first.take(10))
    assert later is not chunk
    assert json.loads(later.split(b"data: ")[1])[0]["x"] == 99


class _Wire:
    """An ASGI `send` that records bodies; after `block_after` bodies it never returns (a stuck
    browser whose TCP window is full)."""

    def __init__(self, block_after: int | None = None) -> None:
        self.bodies: list[bytes] = []
        self.block_after = block_after

    async def send(self, message: dict[str, Any]) -> None:
        if message["type"] == "http.response.body":
            if self.block_after is not None and len(self.bodies) >= self.block_after:
                await asyncio.Event().wait()
            self.bodies.append(message["body"])

    def events(self, name: str) -> list[list[dict[str, Any]]]:
        found = []
        for body in self.bodies:
            text = body.decode()
            if text.startswith(f"event: {name}\n"):
                found.append(json.loads(text.split("data: ", 1)[1]))
        return found


async def _never_disconnect() -> dict[str, Any]:
    await asyncio.Event().wait()
    return {}


async def test_rate_per_browser_is_bounded():
    hub = _hub(max_pending=10_000)
    stream = PositionStream(hub, max_events_per_second=40, flush_hz=10, send_timeout=1.0)
    wire = _Wire()
    task = asyncio.ensure_future(stream({}, _never_disconnect, wire.send))
    await asyncio.sleep(0.05)
    for env in range(400):  # 400 envs at once: far over 40 per second
        hub.dispatch(_event(str(env)))
    await asyncio.sleep(1.0)
    task.cancel()
    sent = sum(len(batch) for batch in wire.events("positions"))
    assert 30 <= sent <= 48  # about 40 in the second: 4 per batch, 10 batches
    assert max(len(batch) for batch in wire.events("positions")) == 4
    assert wire.events("history") == [[]]


async def test_a_stuck_browser_is_dropped_and_never_blocks_the_relay():
    hub = _hub()
    stuck = PositionStream(hub, max_events_per_second=100, flush_hz=10, send_timeout=0.3)
    healthy = PositionStream(hub, max_events_per_second=100, flush_hz=10, send_timeout=0.3)
    stuck_wire, healthy_wire = _Wire(block_after=1), _Wire()
    tasks = [asyncio.ensure_future(stuck({}, _never_disconnect, stuck_wire.send)),
             asyncio.ensure_future(healthy({}, _never_disconnect, healthy_wire.send))]  # fmt: skip
    await asyncio.sleep(0.05)
    started = time.perf_counter()
    for step in range(50):
        hub.dispatch(_event("0", x=step))
        await asyncio.sleep(0.02)
    dispatch_seconds = time.perf_counter() - started
    await asyncio.sleep(0.3)  # the healthy browser's next batch
    assert stuck.subscriber.dropped == "slow"
    assert stuck.subscriber not in hub.subscribers  # its place is free again
    assert healthy.subscriber.dropped is None
    assert healthy_wire.events("positions")[-1][-1]["x"] == 49
    assert dispatch_seconds < 2.0
    for task in tasks:
        task.cancel()


async def test_late_browser_gets_the_history():
    hub = _hub(history_size=3)
    for step in range(5):
        hub.dispatch(_event("0", x=step))
    stream = PositionStream(hub, max_events_per_second=100, flush_hz=10, send_timeout=1.0)
    wire = _Wire()
    task = asyncio.ensure_future(stream({}, _never_disconnect, wire.send))
    await asyncio.sleep(0.05)
    task.cancel()
    assert [event["x"] for event in wire.events("history")[0]] == [2, 3, 4]

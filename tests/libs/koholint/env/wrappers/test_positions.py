"""The positions wrapper: events every N steps from the real env, never blocking, frames on demand."""

from __future__ import annotations

import threading
import time
import uuid
from typing import Any

import pytest

from koholint.bus import POSITIONS_MAX_LENGTH, MemoryBus, RedisBus
from koholint.env.wrappers import PositionPublisher, PositionPublisherWrapper
from koholint.env.wrappers.positions import RedisFrameChannel
from koholint.env.zelda import ZeldaEnv
from koholint.schemas.positions import PositionEvent, frame_key, watch_key

STREAM = "test.positions"


def _wait(condition: Any, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def _events(bus: MemoryBus, stream: str = STREAM) -> list[PositionEvent]:
    messages = bus.consume(stream, "test", "reader", count=1000)
    return [PositionEvent.model_validate(message.payload) for message in messages]


def test_publishes_real_positions_every_n_steps():
    bus = MemoryBus()
    publisher = PositionPublisher(bus, stream=STREAM)
    env = PositionPublisherWrapper(
        ZeldaEnv(start_state="start_of_play", frame_skip=4), publisher, run="r1", env_id="0",
        every=8,
    )  # fmt: skip
    env.reset(seed=1)
    for _ in range(64):
        env.step(4)  # right: Link walks, x grows
    publisher.close()
    events = _events(bus)
    assert [event.episode_step for event in events] == list(range(0, 65, 8))
    raw = env.unwrapped.raw_state
    assert (events[-1].x, events[-1].y) == (raw.x, raw.y)
    assert events[-1].room_key == raw.room_key
    assert events[-1].x > events[0].x
    assert {event.run for event in events} == {"r1"}
    assert publisher.published == len(events)
    assert publisher.dropped == 0


class _StalledBus(MemoryBus):
    """A bus whose publish blocks until released: Redis hung."""

    def __init__(self) -> None:
        super().__init__()
        self.release = threading.Event()

    def publish(self, stream: str, payload: dict[str, Any]) -> str:
        self.release.wait()
        return super().publish(stream, payload)


def test_a_stalled_bus_never_stalls_stepping():
    bus = _StalledBus()
    publisher = PositionPublisher(bus, max_queue=4, stream=STREAM)
    env = PositionPublisherWrapper(
        ZeldaEnv(start_state="start_of_play"), publisher, run="r", env_id="0", every=1
    )
    env.reset(seed=0)
    started = time.perf_counter()
    for _ in range(50):
        env.step(0)
    elapsed = time.perf_counter() - started
    assert elapsed < 5.0  # 50 steps run although nothing could be published
    assert publisher.dropped >= 50 - 4 - 1
    bus.release.set()
    publisher.close()
    assert publisher.published + publisher.dropped == 51


class _FailingBus(MemoryBus):
    def publish(self, stream: str, payload: dict[str, Any]) -> str:
        raise ConnectionError("redis down")


def test_a_failing_bus_is_counted_and_the_thread_goes_on():
    publisher = PositionPublisher(_FailingBus(), stream=STREAM)
    for step in range(3):
        publisher.offer({"run": "r", "env": "0", "episode_step": step, "schema_version": 1})
    publisher.close()
    assert publisher.failed == 3
    assert publisher.published == 0


def test_arguments_are_checked():
    publisher = PositionPublisher(MemoryBus(), stream=STREAM)
    with pytest.raises(ValueError, match="every 0"):
        PositionPublisherWrapper(ZeldaEnv(), publisher, run="r", env_id="0", every=0)
    with pytest.raises(ValueError, match="source"):
        PositionPublisherWrapper(ZeldaEnv(), publisher, run="r", env_id="0", source="nope")
    with pytest.raises(ValueError, match="max_queue"):
        PositionPublisher(MemoryBus(), max_queue=0)
    publisher.close()


def test_redis_stream_is_capped_and_frames_follow_the_watch_key():
    import redis

    client = redis.Redis()
    stream = f"test.positions.{uuid.uuid4().hex}"
    run = f"run-{uuid.uuid4().hex[:8]}"
    publisher = PositionPublisher(
        RedisBus(client, max_length=POSITIONS_MAX_LENGTH),
        frames=RedisFrameChannel(client),
        stream=stream,
    )
    env = PositionPublisherWrapper(
        ZeldaEnv(start_state="start_of_play"), publisher, run=run, env_id="7", every=2
    )
    try:
        env.reset(seed=0)
        env.step(0)
        env.step(0)
        assert client.get(frame_key(run, "7")) is None  # nobody watches: no frames
        client.set(watch_key(run, "7"), 1, ex=5)
        _wait(lambda: publisher.is_watched(run, "7"))
        for _ in range(4):
            env.step(0)
        _wait(lambda: client.get(frame_key(run, "7")) is not None)
        assert client.get(frame_key(run, "7")).startswith(b"\x89PNG")
        _wait(lambda: client.xlen(stream) == 4)
        _, fields = client.xrange(stream)[-1]
        assert PositionEvent.model_validate_json(fields[b"payload"]).episode_step == 6
    finally:
        publisher.close()
        client.delete(stream, frame_key(run, "7"), watch_key(run, "7"))

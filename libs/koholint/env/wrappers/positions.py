"""Positions: every N-th step an env's position goes to ``koholint.positions`` for the console.

The wrapper only builds a small dict and offers it to a bounded queue; a background thread
publishes. When the queue is full the event is dropped (and counted): a live view may lose
points, sampling may never wait for Redis. While a browser watches an env (its watch key is
set), the wrapper also hands over a frame every N steps, which the thread stores as PNG under
the env's frame key with a short TTL.

    publisher = PositionPublisher(RedisBus(client, max_length=POSITIONS_MAX_LENGTH), frames=...)
    env = PositionPublisherWrapper(env, publisher, run="r1", env_id="3", every=32)
"""

from __future__ import annotations

import json
import logging
import queue
import threading
import time
from typing import Any, Protocol, SupportsFloat

import gymnasium as gym
import numpy as np

from koholint.bus import (
    POSITIONS_MAX_LENGTH,
    REDIS_TIMEOUT_SECONDS,
    STREAM_POSITIONS,
    Bus,
    RedisBus,
    connect_redis,
)
from koholint.env.zelda import progress_level
from koholint.game.png import encode_png
from koholint.schemas.positions import (
    FRAME_TTL_SECONDS,
    MAX_TAKEOVERS,
    POSITIONS_SCHEMA_VERSION,
    SOURCES,
    TAKEOVERS_TTL_SECONDS,
    frame_key,
    position_event,
    takeovers_key,
    watch_key,
)

logger = logging.getLogger("koholint.env.wrappers.positions")
WATCH_POLL_SECONDS = 1.0


class FrameChannel(Protocol):
    """Where watched envs' frames go, and who is watched (Redis keys with TTLs)."""

    def watched(self, keys: list[tuple[str, str]]) -> set[tuple[str, str]]: ...

    def put_frame(self, run: str, env: str, png: bytes) -> None: ...

    def put_takeover(self, run: str, env: str, record: dict[str, Any]) -> None: ...


class RedisFrameChannel:
    def __init__(self, client: Any) -> None:
        self.redis = client

    def watched(self, keys: list[tuple[str, str]]) -> set[tuple[str, str]]:
        if not keys:
            return set()
        flags = self.redis.mget([watch_key(run, env) for run, env in keys])
        return {key for key, flag in zip(keys, flags, strict=True) if flag is not None}

    def put_frame(self, run: str, env: str, png: bytes) -> None:
        self.redis.set(frame_key(run, env), png, ex=FRAME_TTL_SECONDS)

    def put_takeover(self, run: str, env: str, record: dict[str, Any]) -> None:
        key = takeovers_key(run, env)
        pipeline = self.redis.pipeline(transaction=False)
        pipeline.lpush(key, json.dumps(record, separators=(",", ":")))
        pipeline.ltrim(key, 0, MAX_TAKEOVERS - 1)
        pipeline.expire(key, TAKEOVERS_TTL_SECONDS)
        pipeline.execute()


class PositionPublisher:
    """A bounded queue and one thread that publishes what the envs of a process offer."""

    def __init__(
        self,
        bus: Bus,
        *,
        frames: FrameChannel | None = None,
        max_queue: int = 1024,
        stream: str = STREAM_POSITIONS,
    ) -> None:
        if max_queue < 1:
            raise ValueError(f"max_queue {max_queue} must be >= 1")
        self.bus, self.frames, self.stream = bus, frames, stream
        self.published = self.dropped = self.failed = 0
        self._queue: queue.Queue[tuple[str, Any]] = queue.Queue(max_queue)
        self._envs: set[tuple[str, str]] = set()
        self._envs_lock = threading.Lock()
        self._watched: frozenset[tuple[str, str]] = frozenset()
        self._closed = threading.Event()
        self._thread = threading.Thread(target=self._work, name="positions", daemon=True)
        self._thread.start()

    def offer(self, event: dict[str, Any]) -> bool:
        """Queue an event without waiting; False (and counted as dropped) when the queue is full."""
        key = (event["run"], event["env"])
        if key not in self._envs:
            with self._envs_lock:
                self._envs.add(key)
        return self._put(("event", event))

    def offer_frame(self, run: str, env: str, rgb: np.ndarray) -> bool:
        return self._put(("frame", (run, env, rgb)))

    def offer_takeover(self, record: dict[str, Any]) -> bool:
        """A PlannerTakeover (rare: the switch fired), kept next to the env's frames."""
        return self._put(("takeover", record))

    def is_watched(self, run: str, env: str) -> bool:
        return (run, env) in self._watched

    def _put(self, item: tuple[str, Any]) -> bool:
        try:
            self._queue.put_nowait(item)
        except queue.Full:
            self.dropped += 1
            return False
        return True

    def _work(self) -> None:
        next_poll = 0.0
        while not self._closed.is_set() or not self._queue.empty():
            if self.frames is not None and time.monotonic() >= next_poll:
                next_poll = time.monotonic() + WATCH_POLL_SECONDS
                self._guard(self._poll_watched)
            try:
                kind, item = self._queue.get(timeout=0.2)
            except queue.Empty:
                continue
            self._guard(self._publish, kind, item)

    def _poll_watched(self) -> None:
        assert self.frames is not None
        with self._envs_lock:
            envs = sorted(self._envs)
        self._watched = frozenset(self.frames.watched(envs))

    def _publish(self, kind: str, item: Any) -> None:
        if kind == "event":
            self.bus.publish(self.stream, item)
            self.published += 1
        elif self.frames is None:
            return
        elif kind == "frame":
            run, env, rgb = item
            self.frames.put_frame(run, env, encode_png(rgb))
        else:
            self.frames.put_takeover(item["run"], item["env"], item)

    def _guard(self, work: Any, *args: Any) -> None:
        """Redis down or slow must not end the thread: count, log the first failure, go on."""
        try:
            work(*args)
        except Exception:
            self.failed += 1
            if self.failed == 1:
                logger.exception("publishing positions failed; the live view will miss events")

    def close(self, timeout: float = 5.0) -> None:
        """Publish what is queued (up to `timeout`), then stop the thread."""
        self._closed.set()
        self._thread.join(timeout)


class PositionPublisherWrapper(gym.Wrapper[np.ndarray, Any, np.ndarray, Any]):
    """Offers the env's position to a PositionPublisher after reset and every `every` steps."""

    def __init__(
        self,
        env: gym.Env[np.ndarray, Any],
        publisher: PositionPublisher,
        *,
        run: str,
        env_id: str,
        every: int = 32,
        source: str = "trainer",
    ) -> None:
        super().__init__(env)
        if every < 1:
            raise ValueError(f"every {every} must be >= 1 (publish every N-th step)")
        if source not in SOURCES:
            raise ValueError(f"source {source!r}: use one of {SOURCES}")
        self.publisher, self.run, self.env_id = publisher, run, env_id
        self.every, self.source = every, source
        self._episode_step = 0

    def reset(self, **kwargs: Any) -> tuple[np.ndarray, dict[str, Any]]:
        observation, info = self.env.reset(**kwargs)
        self._episode_step = 0
        self._offer(info)
        return observation, info

    def step(self, action: Any) -> tuple[np.ndarray, SupportsFloat, bool, bool, dict[str, Any]]:
        observation, reward, terminated, truncated, info = self.env.step(action)
        self._episode_step += 1
        if self._episode_step % self.every == 0:
            self._offer(info)
        if "planner" in info:  # the switch fired (hybrid control): its decisions, for a watcher
            self.publisher.offer_takeover(
                takeover_record(info["planner"], self.run, self.env_id, self._episode_step)
            )
        return observation, reward, terminated, truncated, info

    def _offer(self, info: dict[str, Any]) -> None:
        offer_position(
            self.publisher, self.env.unwrapped, info, source=self.source, run=self.run,
            env_id=self.env_id, episode_step=self._episode_step,
        )  # fmt: skip


def offer_position(
    publisher: PositionPublisher,
    game: Any,
    info: dict[str, Any],
    *,
    source: str,
    run: str,
    env_id: str,
    episode_step: int,
) -> None:
    """Offer the position of `game` (a ZeldaEnv after a step or reset that returned `info`),
    and a frame when a browser watches it; never waits."""
    raw = game.raw_state
    publisher.offer(
        position_event(
            source, run, env_id, info["room_key"], raw.x, raw.y,
            progress=progress_level(raw), episode_step=episode_step, rooms=info["rooms"],
        )
    )  # fmt: skip
    if publisher.is_watched(run, env_id):
        publisher.offer_frame(run, env_id, game.gameboy.render_now())


def takeover_record(
    planner: dict[str, Any], run: str, env_id: str, episode_step: int
) -> dict[str, Any]:
    """A PlannerTakeover as plain data, from the planner wrapper's ``info["planner"]``."""
    return {
        "schema_version": POSITIONS_SCHEMA_VERSION, "run": run, "env": env_id,
        "episode_step": episode_step, "started_in": planner["started_in"],
        "stopped": planner["stopped"], "macros": planner["macros"], "frames": planner["frames"],
        "decisions": planner.get("decisions", []), "sent_at": time.time(),
    }  # fmt: skip


_publishers: dict[str, PositionPublisher] = {}
_publishers_lock = threading.Lock()


def process_position_publisher(
    redis_url: str, stream: str = STREAM_POSITIONS, *, timeout_s: float = REDIS_TIMEOUT_SECONDS
) -> PositionPublisher:
    """One publisher per process, Redis and stream: the envs of an env runner share its queue
    and thread."""
    with _publishers_lock:
        key = f"{redis_url} {stream}"
        if key not in _publishers:
            client = connect_redis(redis_url, timeout_s=timeout_s)
            _publishers[key] = PositionPublisher(
                RedisBus(client, max_length=POSITIONS_MAX_LENGTH),
                frames=RedisFrameChannel(client),
                stream=stream,
            )
        return _publishers[key]

"""A session live: its frames as it advances (a multipart PNG stream), and a player that makes it
advance at the game's real speed with a baseline policy, for showing it to people.

The frames are produced where the session is stepped: by the player, or by clients' steps while
someone streams. Each frame is encoded once and shared by every stream of the session; a stream
sends the newest frame it has not sent, at most ``max_fps`` a second, so a slow viewer misses
frames instead of queueing them, and one that does not take a frame within ``send_timeout`` is
dropped. The producer never waits for a viewer.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from datetime import UTC, datetime
from typing import Any, Literal, Protocol

from pydantic import BaseModel, Field
from starlette.types import Receive, Scope, Send

from koholint.baselines.policies import make_policy
from koholint.game.png import encode_png
from koholint.schemas.env_sim import PlayRequest
from koholint.web.problems import UnprocessableError
from koholint.web.streaming import StreamSlots, send_chunk, start_stream, until_disconnect


class PlayedSession(Protocol):
    """What a player needs of a session (env_sim.sessions.Session, whose module imports this
    one: the protocol keeps the two from importing each other)."""

    id: str
    env: Any
    lock: threading.Lock
    last_used: float
    last_used_at: datetime

    def step_plain(self, action: int) -> tuple[Any, bool, bool, dict[str, Any]]: ...

    def new_episode(self, seed: int | None) -> tuple[Any, dict[str, Any]]: ...


logger = logging.getLogger("env_sim.live")
# The Game Boy's frame rate: 4,194,304 Hz / 70,224 cycles per frame.
GAME_FPS = 4_194_304 / 70_224
BOUNDARY = "frame"
# A player behind its schedule (a busy machine) catches up without rendering the frames the
# streams' rate leaves out; further behind than this, it starts a new schedule from now.
MAX_BEHIND_SECONDS = 1.0
# Live frames are made 60 times a second and sent once: zlib's fastest level is 4x faster
# than the default (0.4 vs 1.5 ms a frame here) for twice the bytes (~3.5 KB).
LIVE_PNG_LEVEL = 1
__all__ = ["BOUNDARY", "FrameFeed", "FrameStream", "Player", "PlayRequest", "PlayStatus"]


class PlayStatus(BaseModel):
    """A session's player: what it plays, how far, and at what pace."""

    session_id: str
    state: Literal["idle", "playing", "stopped"]
    policy: str | None = None
    speed: float | None = None
    started_at: datetime | None = None
    steps: int = 0
    episodes: int = 0
    game_frames: int = Field(0, description="frames the game advanced while playing")
    game_fps: float = Field(0.0, description="game frames per wall-clock second so far")
    stopped_reason: str | None = None


class FrameFeed:
    """The newest frame of one session, shared by its streams; published from any thread."""

    def __init__(self, loop: asyncio.AbstractEventLoop, max_fps: int) -> None:
        self.loop = loop
        self.min_interval = 1.0 / max_fps
        self.latest: tuple[int, int, bytes] | None = None  # (sequence, game frame, png)
        self.closed = False
        self._wakers: set[asyncio.Event] = set()
        self._next_due = 0.0

    def wanted(self) -> bool:
        """Someone streams this session (producers render and encode only then)."""
        return bool(self._wakers)

    def due(self) -> bool:
        """A client's step should render a frame: someone streams and the last is old enough."""
        return bool(self._wakers) and time.monotonic() >= self._next_due

    def publish_rgb(self, rgb: Any, game_frame: int) -> None:
        self.publish(encode_png(rgb, LIVE_PNG_LEVEL), game_frame)

    def publish(self, png: bytes, game_frame: int) -> None:
        sequence = self.latest[0] + 1 if self.latest else 1
        self.latest = (sequence, game_frame, png)
        self._next_due = next_slot(self._next_due, self.min_interval)
        self.loop.call_soon_threadsafe(self._wake_all)

    def close(self) -> None:
        self.closed = True
        with contextlib.suppress(RuntimeError):  # the loop is gone at shutdown
            self.loop.call_soon_threadsafe(self._wake_all)

    def _wake_all(self) -> None:
        for waker in self._wakers:
            waker.set()

    def attach(self) -> asyncio.Event:
        waker = asyncio.Event()
        self._wakers.add(waker)
        return waker

    def detach(self, waker: asyncio.Event) -> None:
        self._wakers.discard(waker)


class LiveStreams(StreamSlots):
    """The server's open streams (a bounded fan-out) and the highest frame rate one may ask."""

    def __init__(self, max_clients: int, max_fps: int, send_timeout: float) -> None:
        super().__init__(max_clients, "KOHOLINT_ENV_SIM_MAX_LIVE_CLIENTS", send_timeout)
        self.max_fps = max_fps


def next_slot(previous: float, interval: float) -> float:
    """The next time a frame may go: one interval after the previous slot, so that frames that
    come a little early (a sleep's jitter) still go, while the rate stays at most 1/interval
    on average; after a pause the schedule restarts from now (no burst)."""
    return max(previous + interval, time.monotonic() - interval / 2)


def part(png: bytes, game_frame: int) -> bytes:
    head = (
        f"--{BOUNDARY}\r\nContent-Type: image/png\r\nContent-Length: {len(png)}\r\n"
        f"X-Game-Frame: {game_frame}\r\n\r\n"
    )
    return head.encode() + png + b"\r\n"


class FrameStream:
    """One viewer's multipart/x-mixed-replace response: the newest frame, paced, never queued."""

    def __init__(self, feed: FrameFeed, streams: LiveStreams, fps: int) -> None:
        self.feed, self.streams = feed, streams
        self.interval = 1.0 / min(fps, streams.max_fps)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        waker = self.feed.attach()
        try:
            await until_disconnect(receive, self._send_all(send, waker))
        finally:
            self.feed.detach(waker)
            self.streams.release()

    async def _send_all(self, send: Send, waker: asyncio.Event) -> None:
        await start_stream(send, f"multipart/x-mixed-replace; boundary={BOUNDARY}".encode())
        sent, next_at = 0, 0.0
        while not self.feed.closed:
            latest = self.feed.latest
            if latest is None or latest[0] == sent:
                waker.clear()
                await waker.wait()
                continue
            sent = latest[0]
            if not await self._send(send, part(latest[2], latest[1])):
                return
            next_at = next_slot(next_at, self.interval)
            await asyncio.sleep(max(0.0, next_at - time.monotonic()))
        await send({"type": "http.response.body", "body": f"--{BOUNDARY}--\r\n".encode()})

    async def _send(self, send: Send, body: bytes) -> bool:
        outcome = await send_chunk(send, body, self.streams.send_timeout)
        if outcome == "slow":
            self.streams.dropped += 1
            logger.info("a slow live viewer was dropped", extra={"event": "live_drop"})
        return outcome == "sent"


class Player:
    """Steps a session with a baseline policy in its own thread, at `speed` x real time.

    It holds the session's lock while it plays: other requests that would step the session get
    409 until it stops (DELETE .../play), ends at `max_seconds`, or the session is closed.
    """

    def __init__(self, session: PlayedSession, request: PlayRequest, max_seconds: float) -> None:
        self.session, self.request = session, request
        self.max_seconds = min(request.max_seconds or max_seconds, max_seconds)
        self.policy = make_policy(request.policy)
        self.stop_event = threading.Event()
        self.started_at = datetime.now(UTC)
        self.state: Literal["playing", "stopped"] = "playing"
        self.steps = self.episodes = self.game_frames = 0
        self.elapsed = 0.0
        self.stopped_reason: str | None = None
        self.last_state: dict[str, Any] | None = None
        self.thread = threading.Thread(target=self._run, name=f"play-{session.id[:8]}", daemon=True)

    def prepare(self) -> tuple[Any, dict[str, Any]]:
        """Reset the episode (if asked) and the policy; a policy that cannot play this session
        is a 422. Runs under the session's lock, before the thread starts."""
        env = self.session.env
        if self.request.reset:
            self.session.new_episode(self.request.seed)
        try:
            self.policy.reset(env, self.request.seed)
        except ValueError as error:
            raise UnprocessableError(
                f"policy {self.request.policy!r} cannot play this session: {error}",
                field="policy",
            ) from None
        observation, _, _, info = self.session.step_plain(0)
        self.last_state = info["state"]
        return observation, info

    def start(self, observation: Any, info: dict[str, Any]) -> None:
        self._first = (observation, info)
        self.thread.start()

    def stop(self, reason: str, timeout: float = 10.0) -> None:
        self.stopped_reason = self.stopped_reason or reason
        self.stop_event.set()
        if threading.current_thread() is not self.thread:
            self.thread.join(timeout)

    def _run(self) -> None:
        try:
            self._play(*self._first)
        except Exception as error:  # a failing policy or emulator ends the play, not the server
            logger.exception("player of session %s failed", self.session.id)
            self.stopped_reason = self.stopped_reason or f"failed: {error}"
        finally:
            self.state = "stopped"
            self.session.last_used = time.monotonic()
            self.session.last_used_at = datetime.now(UTC)
            self.session.lock.release()

    def _play(self, observation: Any, info: dict[str, Any]) -> None:
        session, env = self.session, self.session.env
        seconds_per_frame = 1.0 / (GAME_FPS * self.request.speed)
        started = anchor = time.monotonic()
        anchor_frame = env.gameboy.frame
        while not self.stop_event.is_set():
            if time.monotonic() - started >= self.max_seconds:
                self.stopped_reason = f"played max_seconds ({self.max_seconds:g} s)"
                break
            before = env.gameboy.frame
            action = self.policy.act(observation, info)
            observation, terminated, truncated, info = session.step_plain(action)
            self.steps += 1
            self.game_frames += env.gameboy.frame - before
            self.last_state = info["state"]
            if terminated or truncated:
                self.episodes += 1
                observation, info = session.new_episode(self.request.seed + self.episodes)
                self.policy.reset(env, self.request.seed + self.episodes)
            anchor, anchor_frame = self._pace(anchor, anchor_frame, seconds_per_frame)
            self.elapsed = time.monotonic() - started
        self.elapsed = time.monotonic() - started
        self.stopped_reason = self.stopped_reason or "stopped"

    def _pace(
        self, anchor: float, anchor_frame: int, seconds_per_frame: float
    ) -> tuple[float, int]:
        """Sleep until the game's frame count is due on the wall clock; far behind (a loaded
        machine), start a new schedule from now rather than rushing to catch up."""
        frame = self.session.env.gameboy.frame
        due = anchor + (frame - anchor_frame) * seconds_per_frame
        delay = due - time.monotonic()
        if delay > 0:
            self.stop_event.wait(delay)
        elif -delay > MAX_BEHIND_SECONDS:
            return time.monotonic(), frame
        return anchor, anchor_frame

    def status(self) -> PlayStatus:
        elapsed = self.elapsed or 1e-9
        return PlayStatus(
            session_id=self.session.id, state=self.state, policy=self.request.policy,
            speed=self.request.speed, started_at=self.started_at, steps=self.steps,
            episodes=self.episodes, game_frames=self.game_frames,
            game_fps=round(self.game_frames / elapsed, 2), stopped_reason=self.stopped_reason,
        )  # fmt: skip

"""Sessions: one environment each, stepped in a worker pool, never by two requests at once.

A request for a session that is busy gets 409 (it is not queued): a client should wait
for its previous call. Idle sessions are evicted after the TTL.
"""

from __future__ import annotations

import asyncio
import base64
import ctypes
import ctypes.util
import functools
import json
import logging
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from env_sim.metrics import Metrics
from koholint.env.wrappers.positions import PositionPublisher, offer_position
from koholint.env.zelda import ZeldaEnv
from koholint.game.emulator import GameBoy
from koholint.game.png import encode_png
from koholint.game.savestate import SaveStateError, unpack_state
from koholint.game.state import GameState
from koholint.game.states import UnknownStateError
from koholint.schemas.env_sim import (
    Observation,
    SessionInfo,
    SessionSettings,
)
from koholint.web.problems import ConflictError, NotFoundError, TooManyError, UnprocessableError

if TYPE_CHECKING:
    from env_sim.live import FrameFeed, Player

T = TypeVar("T")
logger = logging.getLogger("env_sim.sessions")


@dataclass
class Session:
    id: str
    rom_id: str
    settings: SessionSettings
    env: ZeldaEnv
    created_at: datetime
    last_used: float = field(default_factory=time.monotonic)
    last_used_at: datetime = field(default_factory=lambda: datetime.now(UTC))
    steps: int = 0
    episode_steps: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)
    positions: PositionPublisher | None = None
    positions_every: int = 8
    feed: FrameFeed | None = None  # made by the first live stream of the session
    player: Player | None = None  # the latest player (POST .../play)

    def step_plain(self, action: int) -> tuple[np.ndarray, bool, bool, dict[str, Any]]:
        """One step for the player: observation, terminated, truncated, info."""
        observation, transition, info = _step(self, action, False)
        return observation, transition["terminated"], transition["truncated"], info

    def new_episode(self, seed: int | None) -> tuple[np.ndarray, dict[str, Any]]:
        """A new episode from the session's own start (the player's reset)."""
        observation, info = self.env.reset(seed=seed)
        self.episode_steps = 0
        return observation, info

    def playing(self) -> Player | None:
        return self.player if self.player is not None and self.player.state == "playing" else None

    def busy_detail(self) -> str:
        if (player := self.playing()) is not None:
            return (
                f"session {self.id} is playing ({player.request.policy}); "
                f"DELETE /v1/sessions/{self.id}/play to stop it"
            )
        return f"session {self.id} is busy with another request; retry when it finishes"

    def info(self) -> SessionInfo:
        return SessionInfo(
            id=self.id, rom_id=self.rom_id, created_at=self.created_at, last_used_at=self.last_used_at,
            steps=self.steps, episode_steps=self.episode_steps, settings=self.settings,
        )  # fmt: skip


def _frame_b64(env: ZeldaEnv) -> str:
    return base64.b64encode(encode_png(env.gameboy.screen_rgb())).decode()


def _observation(observation: np.ndarray, info: dict[str, Any]) -> dict[str, Any]:
    return {"observation": observation.tolist(), "state": info["state"]}


class SessionManager:
    def __init__(
        self, *, max_sessions: int, ttl_seconds: float, workers: int, metrics: Metrics
    ) -> None:
        self.max_sessions = max_sessions
        self.ttl_seconds = ttl_seconds
        self.pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="emulator")
        self.metrics = metrics
        self._sessions: dict[str, Session] = {}
        self._create_lock = asyncio.Lock()
        self.positions: PositionPublisher | None = None  # set when Redis is configured
        self.positions_every = 8

    # -- lifecycle --------------------------------------------------------------
    async def create(
        self, settings: SessionSettings, rom_path: str, rom_id: str, start: Any
    ) -> Session:
        async with self._create_lock:
            self.evict_idle()
            if len(self._sessions) >= self.max_sessions:
                raise TooManyError(
                    f"{self.max_sessions} sessions are open; DELETE one or wait for idle ones to expire",
                    limit=self.max_sessions,
                )
            env = await self.in_pool(lambda: self._make_env(settings, rom_path, start))
            session = Session(uuid.uuid4().hex, rom_id, settings, env, datetime.now(UTC))
            session.positions, session.positions_every = self.positions, self.positions_every
            self._sessions[session.id] = session
        self.metrics.sessions.set(len(self._sessions))
        logger.info(
            "session created", extra={"session": session.id, "rom": rom_id, "event": "create"}
        )
        return session

    @staticmethod
    def _make_env(settings: SessionSettings, rom_path: str, start: Any) -> ZeldaEnv:
        if isinstance(start, bytes):
            check_state(rom_path, start)
        env = ZeldaEnv({**settings.env_settings(), "rom": rom_path, "start_state": start})
        try:
            env.reset(seed=settings.seed)
        except (UnknownStateError, SaveStateError) as error:
            env.close()
            raise UnprocessableError(str(error)) from error
        return env

    def get(self, session_id: str) -> Session:
        session = self._sessions.get(session_id)
        if session is None:
            raise NotFoundError(
                f"no session {session_id!r}; it may have expired (GET /v1/sessions lists them)"
            )
        return session

    def list(self) -> list[Session]:
        return list(self._sessions.values())

    async def delete(self, session_id: str) -> None:
        session = self.get(session_id)
        if (player := session.playing()) is not None:  # closing a session ends its play
            await self.in_pool(lambda: player.stop("the session was closed"))
        if not session.lock.acquire(blocking=False):
            raise ConflictError(f"session {session_id} is busy; retry when its request finishes")
        try:
            self._sessions.pop(session_id, None)
            if session.feed is not None:
                session.feed.close()
            await self.in_pool(lambda: close_env(session.env))
        finally:
            session.lock.release()
        self.metrics.sessions.set(len(self._sessions))

    def evict_idle(self) -> int:
        now = time.monotonic()
        evicted = 0
        for session in list(self._sessions.values()):
            if now - session.last_used > self.ttl_seconds and session.lock.acquire(blocking=False):
                try:
                    self._sessions.pop(session.id, None)
                    if session.feed is not None:
                        session.feed.close()
                    close_env(session.env)
                    evicted += 1
                    logger.info("session evicted", extra={"session": session.id, "event": "evict"})
                finally:
                    session.lock.release()
        if evicted:
            self.metrics.evictions.inc(evicted)
            self.metrics.sessions.set(len(self._sessions))
        return evicted

    async def evict_forever(self) -> None:
        while True:
            await asyncio.sleep(max(self.ttl_seconds / 4, 0.05))
            self.evict_idle()

    def close(self) -> None:
        for session in list(self._sessions.values()):
            if (player := session.playing()) is not None:
                player.stop("the server is shutting down")
            if session.feed is not None:
                session.feed.close()
            session.env.close()
        self._sessions.clear()
        self.pool.shutdown(wait=True)

    # -- running work on a session ------------------------------------------------
    async def in_pool(self, work: Callable[[], T]) -> T:
        return await asyncio.get_running_loop().run_in_executor(self.pool, work)

    async def run(self, session_id: str, operation: str, work: Callable[[Session], T]) -> T:
        """Run `work` on the session in the pool; 409 if another request holds the session."""
        session = self.get(session_id)
        if not session.lock.acquire(blocking=False):
            raise ConflictError(session.busy_detail())
        started = time.perf_counter()
        try:
            return await self.in_pool(lambda: work(session))
        finally:
            session.last_used = time.monotonic()
            session.last_used_at = datetime.now(UTC)
            session.lock.release()
            self.metrics.latency.labels(operation).observe(time.perf_counter() - started)


def close_env(env: ZeldaEnv) -> None:
    """Close the emulator and hand the freed heap back to the system.

    An emulator is a few MiB of small native allocations made in a pool thread; once freed,
    glibc keeps them in that thread's arena, so RSS grew with every create/delete cycle
    (96 -> 311 MiB after ~900) though nothing was alive. ``malloc_trim`` returns them.
    """
    env.close()
    if _LIBC is not None:
        _LIBC.malloc_trim(0)


def _glibc() -> Any:
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return libc if hasattr(libc, "malloc_trim") else None
    except OSError:  # not glibc (macOS, musl): nothing to trim
        return None


_LIBC = _glibc()


# -- operations (run in the pool, under the session lock) ----------------------------
def reset(session: Session, seed: int | None, start: Any) -> Observation:
    """Start a new episode; a state that does not load leaves the session as it was."""
    options = {} if start is None else {"start_state": start}
    if isinstance(start, bytes):
        check_state(session.env.config.rom, start)
    before = session.env.gameboy.save_state()
    try:
        observation, info = session.env.reset(seed=seed, options=options)
    except (UnknownStateError, SaveStateError) as error:
        raise UnprocessableError(str(error)) from error
    except Exception as error:  # PyBoy refusing bytes that passed every check: put it back
        session.env.gameboy.load_state(before)
        logger.warning("state failed to load; session %s restored", session.id, exc_info=True)
        raise UnprocessableError(f"the state does not load: {error}") from error
    session.episode_steps = 0
    return Observation.model_validate(_observation(observation, info))


def check_state(rom_path: str | None, blob: bytes) -> None:
    """Refuse (422) a state that is not a complete state of this ROM, before any emulator
    loads it: PyBoy reads states field by field, so a short one would load half-way."""
    rom_sha256, payload_bytes = _state_shape(rom_path)
    try:
        unpack_state(blob, expected_rom_sha256=rom_sha256, expected_payload_bytes=payload_bytes)
    except SaveStateError as error:
        raise UnprocessableError(str(error)) from error


@functools.cache
def _state_shape(rom_path: str | None) -> tuple[str, int]:
    """The ROM's sha256 and the size of its states (fixed per ROM and PyBoy version)."""
    with GameBoy(rom=rom_path) as gameboy:
        return gameboy.rom.sha256, len(unpack_state(gameboy.save_state()).payload)


def _transition(
    action: int, reward: float, terminated: bool, truncated: bool, info: dict[str, Any]
) -> dict[str, Any]:
    """A Transition as plain data (responses are built straight from dicts on the hot path)."""
    return {
        "action": action, "applied_action": info["action"], "reward": reward,
        "reward_components": info["reward_components"], "terminated": terminated, "truncated": truncated,
    }  # fmt: skip


def _step(
    session: Session, action: int, render: bool
) -> tuple[np.ndarray, dict[str, Any], dict[str, Any]]:
    # While someone streams the session, a step renders (at most the streams' frame rate).
    live = session.feed is not None and session.feed.due()
    session.env.render_mode = "rgb_array" if render or live else None
    try:
        observation, reward, terminated, truncated, info = session.env.step(action)
    finally:
        session.env.render_mode = None
    if live:
        session.feed.publish_rgb(session.env.gameboy.screen_rgb(), session.env.gameboy.frame)  # type: ignore[union-attr]
    session.steps += 1
    session.episode_steps += 1
    if session.positions is not None and session.episode_steps % session.positions_every == 0:
        offer_position(
            session.positions, session.env, info, source="env-sim", run="env-sim",
            env_id=session.id, episode_step=session.episode_steps,
        )  # fmt: skip
    return observation, _transition(action, float(reward), terminated, truncated, info), info


def step(session: Session, action: int, frame: bool) -> bytes:
    """The StepResult as JSON bytes: built straight from plain data, the hot path of the API
    (the state dict's agreement with GameState is tested in koholint's env tests)."""
    observation, transition, info = _step(session, action, frame)
    document = _observation(observation, info)
    document["frame_png"] = _frame_b64(session.env) if frame else None
    document["transition"] = transition
    return _json(document)


def _json(document: dict[str, Any]) -> bytes:
    return json.dumps(document, separators=(",", ":")).encode()


def steps(session: Session, actions: list[int], frames: bool) -> tuple[bytes, int]:
    """Step through the batch; stop early when the episode ends (the rest is not applied)."""
    transitions, images = [], []
    observation, info = None, None
    for action in actions:
        observation, transition, info = _step(session, action, frames)
        transitions.append(transition)
        if frames:
            images.append(_frame_b64(session.env))
        if transition["terminated"] or transition["truncated"]:
            break
    if observation is None or info is None:
        raise UnprocessableError("a batch needs at least one action")
    document = {
        **_observation(observation, info),
        "frame_png": None,
        "steps": transitions,
        "frames_png": images if frames else None,
    }
    return _json(document), len(transitions)


def state(session: Session) -> GameState:
    return GameState.model_validate(session.env.sync())


def frame_png(session: Session) -> bytes:
    return encode_png(session.env.gameboy.render_now())


def load(session: Session, blob: bytes) -> Observation:
    """Start a new episode from the state; a state from another ROM or corrupt bytes leave
    the session as it was."""
    return reset(session, None, blob)


def tick(session: Session, buttons: int, frames: int) -> int:
    session.env.gameboy.hold(buttons)
    session.env.gameboy.tick(frames)
    session.env.sync()
    return session.env.gameboy.frame


def memory(session: Session, address: int, count: int) -> bytes:
    return session.env.gameboy.read_memory(address, count)

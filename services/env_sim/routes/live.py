"""/v1/sessions/{id}/live and /play: a session's frames as it advances, and playing it at the
game's real speed with a baseline policy (for showing it to people)."""

from __future__ import annotations

import asyncio
from typing import Annotated, Any

from fastapi import APIRouter, Query, Response

from env_sim.deps import LiveDep, SessionsDep, SettingsDep
from env_sim.live import BOUNDARY, FrameFeed, FrameStream, Player, PlayRequest, PlayStatus
from env_sim.sessions import Session
from koholint.web.auth import ControlDep
from koholint.web.problems import ConflictError, TooManyError, problem_responses

router = APIRouter(prefix="/v1/sessions", tags=["live"])
MULTIPART = f"multipart/x-mixed-replace; boundary={BOUNDARY}"


class _FrameStreamResponse(Response):
    """Hands the connection to the stream's own sender (paced, dropped when slow)."""

    def __init__(self, stream: FrameStream) -> None:
        super().__init__(media_type=MULTIPART)
        self.stream = stream

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        await self.stream(scope, receive, send)


def _feed(session: Session, max_fps: int) -> FrameFeed:
    if session.feed is None:
        session.feed = FrameFeed(asyncio.get_running_loop(), max_fps)
    return session.feed


@router.get(
    "/{session_id}/live",
    response_class=Response,
    responses={
        200: {
            "description": "PNG parts, each with Content-Length and X-Game-Frame (the emulator's "
            "frame number), sent as the session advances",
            "content": {MULTIPART: {"schema": {"type": "string", "format": "binary"}}},
        },
        **problem_responses(404, 429),
    },
)
async def stream_live(
    session_id: str,
    sessions: SessionsDep,
    live: LiveDep,
    fps: Annotated[int, Query(ge=1, le=60, description="frames per second at most")] = 60,
) -> Response:
    """The session's frames as it advances (by steps or by its player), newest first."""
    session = sessions.get(session_id)
    live.admit()
    feed = _feed(session, live.max_fps)
    if feed.latest is None and session.lock.acquire(blocking=False):
        try:  # an idle session: its screen now, so the viewer has a first frame
            feed.publish_rgb(*await sessions.in_pool(lambda: _screen(session)))
        finally:
            session.lock.release()
    return _FrameStreamResponse(FrameStream(feed, live, fps))


def _screen(session: Session) -> tuple[Any, int]:
    return session.env.gameboy.render_now(), session.env.gameboy.frame


@router.post(
    "/{session_id}/play",
    status_code=202,
    dependencies=[ControlDep],
    responses=problem_responses(401, 404, 409, 429),
)
async def play_session(
    session_id: str, body: PlayRequest, sessions: SessionsDep, settings: SettingsDep
) -> PlayStatus:
    """Play the session with a baseline policy at the game's real speed (x `speed`)."""
    session = sessions.get(session_id)
    if session.playing() is None and (
        sum(s.playing() is not None for s in sessions.list()) >= settings.max_players
    ):
        raise TooManyError(
            f"{settings.max_players} sessions are playing (KOHOLINT_ENV_SIM_MAX_PLAYERS); "
            "stop one first", limit=settings.max_players,
        )  # fmt: skip
    if not session.lock.acquire(blocking=False):
        raise ConflictError(session.busy_detail())
    player = Player(session, body, settings.max_play_seconds)
    try:
        first = await sessions.in_pool(player.prepare)
    except BaseException:
        session.lock.release()
        raise
    session.player = player
    player.start(*first)  # the player releases the session's lock when it stops
    return player.status()


@router.get("/{session_id}/play", responses=problem_responses(404))
async def get_play(session_id: str, sessions: SessionsDep) -> PlayStatus:
    """The session's player: playing or stopped (and why), steps and the game's pace."""
    session = sessions.get(session_id)
    if session.player is None:
        return PlayStatus(session_id=session_id, state="idle")
    return session.player.status()


@router.delete(
    "/{session_id}/play", dependencies=[ControlDep], responses=problem_responses(401, 404)
)
async def stop_play(session_id: str, sessions: SessionsDep) -> PlayStatus:
    """Stop the session's player (nothing to do when it does not play)."""
    session = sessions.get(session_id)
    player = session.player
    if player is None:
        return PlayStatus(session_id=session_id, state="idle")
    await sessions.in_pool(lambda: player.stop("stopped by a request"))
    return player.status()

"""/v1/watch: one env's live frames and state — an env-sim session, or a trainer env on demand."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path, Response

from console.deps import FleetDep, RedisDep
from console.fleet import ID_PATTERN
from koholint.schemas.positions import WATCH_TTL_SECONDS, frame_key, watch_key
from koholint.web.problems import NotFoundError, UnavailableError, problem_responses

router = APIRouter(prefix="/v1/watch", tags=["watch"])
Id = Annotated[str, Path(pattern=ID_PATTERN)]
PNG: dict[int | str, dict[str, Any]] = {200: {"content": {"image/png": {}}}}
NO_STORE = {"cache-control": "no-store"}


@router.get("/env-sim", responses=problem_responses(503))
async def list_sessions(fleet: FleetDep) -> dict[str, Any]:
    """env-sim's open sessions (each can be watched)."""
    return await fleet.sessions()


@router.get(
    "/env-sim/{session_id}/frame.png",
    response_class=Response,
    responses={**PNG, **problem_responses(404, 503)},
)
async def get_session_frame(session_id: Id, fleet: FleetDep) -> Response:
    """The session's screen now (PNG), from env-sim."""
    return Response(await fleet.session_frame(session_id), media_type="image/png", headers=NO_STORE)


@router.get("/env-sim/{session_id}/state", responses=problem_responses(404, 503))
async def get_session_state(session_id: Id, fleet: FleetDep) -> dict[str, Any]:
    """The session's structured game state now, from env-sim."""
    return await fleet.session_state(session_id)


@router.get(
    "/trainer/{run}/{env}/frame.png",
    response_class=Response,
    responses={**PNG, **problem_responses(404, 503)},
)
async def get_trainer_frame(run: Id, env: Id, redis: RedisDep) -> Response:
    """A trainer env's latest frame: asking marks it watched, its env sends frames for a while."""
    if redis is None:
        raise UnavailableError("no Redis: set KOHOLINT_CONSOLE_REDIS_URL to watch trainer envs")
    await redis.set(watch_key(run, env), 1, ex=WATCH_TTL_SECONDS)
    png = await redis.get(frame_key(run, env))
    if png is None:
        raise NotFoundError(
            f"no frame of {run}/{env} yet: the env sends one at its next published step",
            retry_after_seconds=1,
        )
    return Response(png, media_type="image/png", headers=NO_STORE)

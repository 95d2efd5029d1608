"""/v1/watch: one env's live frames and state — an env-sim session, or a trainer env on demand."""

from __future__ import annotations

import logging
from typing import Annotated, Any

from fastapi import APIRouter, Path, Query, Response
from pydantic import ValidationError

from console.deps import ControlDep, FleetDep, LiveDep, RedisDep
from console.live import LiveProxy
from koholint.schemas.env_sim import PlayRequest
from koholint.schemas.fields import PATH_ID_PATTERN
from koholint.schemas.positions import (
    MAX_TAKEOVERS,
    WATCH_TTL_SECONDS,
    PlannerTakeover,
    frame_key,
    takeovers_key,
    watch_key,
)
from koholint.web.problems import NotFoundError, UnavailableError, problem_responses

logger = logging.getLogger("console.watch")
MULTIPART = "multipart/x-mixed-replace; boundary=frame"

router = APIRouter(prefix="/v1/watch", tags=["watch"])
# The library's one rule for an id in another service's path (never '.', '..', '/', '%'):
# the console's 422 names the field before any call leaves it.
Id = Annotated[str, Path(pattern=PATH_ID_PATTERN)]
PNG: dict[int | str, dict[str, Any]] = {200: {"content": {"image/png": {}}}}
NO_STORE = {"cache-control": "no-store"}


@router.get("/env-sim", responses=problem_responses(503))
async def list_sessions(fleet: FleetDep) -> dict[str, Any]:
    """env-sim's open sessions (each can be watched)."""
    return await fleet.sessions()


@router.get(
    "/env-sim/{session_id}/frame.png",
    response_class=Response,
    responses={**PNG, **problem_responses(404, 422, 503)},
)
async def get_session_frame(session_id: Id, fleet: FleetDep) -> Response:
    """The session's screen now (PNG), from env-sim."""
    return Response(await fleet.session_frame(session_id), media_type="image/png", headers=NO_STORE)


@router.get("/env-sim/{session_id}/state", responses=problem_responses(404, 422, 503))
async def get_session_state(session_id: Id, fleet: FleetDep) -> dict[str, Any]:
    """The session's structured game state now, from env-sim."""
    return await fleet.session_state(session_id)


@router.get(
    "/trainer/{run}/{env}/frame.png",
    response_class=Response,
    responses={**PNG, **problem_responses(404, 422, 503)},
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


class _LiveResponse(Response):
    """Hands the connection to the proxy (dropped when slow, closed with the viewer)."""

    def __init__(self, proxy: LiveProxy) -> None:
        super().__init__(media_type=MULTIPART)
        self.proxy = proxy

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        await self.proxy(scope, receive, send)


@router.get(
    "/env-sim/{session_id}/live",
    response_class=Response,
    responses={
        200: {
            "description": "env-sim's live frames: PNG parts with Content-Length and "
            "X-Game-Frame, as the session advances",
            "content": {MULTIPART: {"schema": {"type": "string", "format": "binary"}}},
        },
        **problem_responses(404, 422, 429, 503),
    },
)
async def stream_session_live(
    session_id: Id,
    fleet: FleetDep,
    viewers: LiveDep,
    fps: Annotated[int, Query(ge=1, le=60, description="frames per second at most")] = 60,
) -> Response:
    """The session's frames as it advances (up to the game's 60 a second), from env-sim."""
    viewers.admit()
    try:
        upstream = await fleet.open_live(session_id, fps)
    except BaseException:
        viewers.release()
        raise
    return _LiveResponse(LiveProxy(upstream, viewers))


@router.post(
    "/env-sim/{session_id}/play", status_code=202, dependencies=[ControlDep],
    responses=problem_responses(401, 404, 409, 422, 429, 503),
)  # fmt: skip
async def play_session(
    session_id: Id,
    fleet: FleetDep,
    body: PlayRequest,
) -> dict[str, Any]:
    """Make the session play at the game's real speed (env-sim's PlayRequest: policy, seed,
    speed, reset, max_seconds); needs the token beyond localhost."""
    sent = body.model_dump(mode="json", exclude_unset=True)
    return await fleet.send("env-sim", "POST", fleet.play_path(session_id), sent)  # type: ignore[no-any-return]


@router.get("/env-sim/{session_id}/play", responses=problem_responses(404, 422, 503))
async def get_play(session_id: Id, fleet: FleetDep) -> dict[str, Any]:
    """The session's player: playing or stopped, its steps and the game's pace."""
    return await fleet.send("env-sim", "GET", fleet.play_path(session_id))  # type: ignore[no-any-return]


@router.delete(
    "/env-sim/{session_id}/play", dependencies=[ControlDep],
    responses=problem_responses(401, 404, 422, 503),
)  # fmt: skip
async def stop_play(session_id: Id, fleet: FleetDep) -> dict[str, Any]:
    """Stop the session's player; needs the token beyond localhost."""
    return await fleet.send("env-sim", "DELETE", fleet.play_path(session_id))  # type: ignore[no-any-return]


@router.get("/trainer/{run}/{env}/takeovers", responses=problem_responses(422, 503))
async def list_takeovers(run: Id, env: Id, redis: RedisDep) -> dict[str, Any]:
    """The planner's latest takeovers of a trainer env (hybrid control), newest first: each
    with the decisions it made until control came back to the policy."""
    if redis is None:
        raise UnavailableError("no Redis: set KOHOLINT_CONSOLE_REDIS_URL to watch trainer envs")
    takeovers = []
    for raw in await redis.lrange(takeovers_key(run, env), 0, MAX_TAKEOVERS - 1):
        try:
            takeovers.append(PlannerTakeover.model_validate_json(raw).model_dump())
        except ValidationError:
            logger.warning("an invalid takeover record of %s/%s was skipped", run, env)
    return {"run": run, "env": env, "takeovers": takeovers}

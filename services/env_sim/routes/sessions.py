"""/v1/sessions: create, list, reset, step, state, frames, save and load."""

from __future__ import annotations

import uuid
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request, Response

from env_sim import sessions as ops
from env_sim.deps import RomsDep, SessionsDep, SettingsDep, StoreDep
from koholint.game.opening import check_named_state
from koholint.game.rom import RomInfo
from koholint.game.state import GameState
from koholint.game.states import UnknownStateError
from koholint.schemas.env_sim import (
    ADDRESS_SPACE,
    MAX_MEMORY_READ,
    BatchResult,
    LoadRequest,
    MemoryRead,
    Observation,
    ResetRequest,
    SavedState,
    SessionInfo,
    SessionList,
    SessionSettings,
    StepRequest,
    StepResult,
    StepsRequest,
    TickRequest,
    TickResult,
)
from koholint.store import ObjectNotFoundError, ObjectStore
from koholint.web.auth import ControlDep
from koholint.web.problems import (
    NotFoundError,
    PayloadTooLargeError,
    UnprocessableError,
    problem_responses,
)

router = APIRouter(prefix="/v1/sessions", tags=["sessions"])
# Every route on one session: 404 (no such session, or it expired), 409 (busy with another request).
ON_SESSION = problem_responses(404, 409)
CONTROLLED = problem_responses(401, 404, 409)
"""Routes that change a session (open, drive, save, load, close): koholint.web.auth's rule."""
OCTET_STREAM = "application/octet-stream"


def _state_key(state_id: str) -> str:
    return f"states/{state_id}.state"


def _saved_state(store: ObjectStore, state_id: str) -> bytes:
    try:
        return store.get(_state_key(state_id))
    except ObjectNotFoundError:
        raise NotFoundError(f"no saved state {state_id!r}", saved_state_id=state_id) from None


def check_start_state(rom: RomInfo, name: str) -> None:
    """Named states: all on the bundled cartridge, the opening's on any engine world (422)."""
    try:
        check_named_state(name, rom)
    except UnknownStateError as error:
        raise UnprocessableError(str(error), field="start_state") from None


def _start(body: SessionSettings | ResetRequest, store: ObjectStore) -> Any:
    if body.saved_state_id:
        return _saved_state(store, body.saved_state_id)
    return body.start_state


@router.post(
    "", status_code=201, dependencies=[ControlDep], responses=problem_responses(401, 404, 429)
)
async def create_session(
    body: SessionSettings,
    sessions: SessionsDep,
    roms: RomsDep,
    store: StoreDep,
    settings: SettingsDep,
) -> SessionInfo:
    """Create a session (its environment is reset and ready to step)."""
    if body.frame_skip > settings.max_frame_skip:
        raise UnprocessableError(
            f"frame_skip {body.frame_skip} exceeds this server's {settings.max_frame_skip}",
            limit=settings.max_frame_skip, field="frame_skip",
        )  # fmt: skip
    rom = roms.resolve(body.rom_id)
    if isinstance(body.start_state, str) and not body.saved_state_id:
        check_start_state(rom, body.start_state)
    start = await sessions.in_pool(lambda: _start(body, store))
    session = await sessions.create(body, str(rom.path), rom.sha256, start)
    return session.info()


@router.get("")
async def list_sessions(sessions: SessionsDep) -> SessionList:
    """List the open sessions."""
    return SessionList(
        sessions=[s.info() for s in sessions.list()], max_sessions=sessions.max_sessions
    )


@router.get("/{session_id}", responses=problem_responses(404))
async def get_session(session_id: str, sessions: SessionsDep) -> SessionInfo:
    """Describe one session."""
    return sessions.get(session_id).info()


@router.delete("/{session_id}", status_code=204, dependencies=[ControlDep], responses=CONTROLLED)
async def delete_session(session_id: str, sessions: SessionsDep) -> Response:
    """Close a session and free its emulator."""
    await sessions.delete(session_id)
    return Response(status_code=204)


@router.post("/{session_id}/reset", dependencies=[ControlDep], responses=CONTROLLED)
async def reset_session(
    session_id: str, sessions: SessionsDep, store: StoreDep, body: ResetRequest | None = None
) -> Observation:
    """Start a new episode (from the session's start state unless the body names another)."""
    request = body or ResetRequest()
    start = (
        await sessions.in_pool(lambda: _start(request, store))
        if (request.saved_state_id or request.start_state)
        else None
    )
    return await sessions.run(session_id, "reset", lambda s: ops.reset(s, request.seed, start))


@router.post(
    "/{session_id}/step", response_model=StepResult, dependencies=[ControlDep], responses=CONTROLLED
)
async def step_session(session_id: str, body: StepRequest, sessions: SessionsDep) -> Response:
    """Take one action."""
    result = await sessions.run(session_id, "step", lambda s: ops.step(s, body.action, body.frame))
    sessions.metrics.steps.inc()
    return Response(result, media_type="application/json")


@router.post(
    "/{session_id}/steps",
    response_model=BatchResult,
    dependencies=[ControlDep],
    responses=CONTROLLED,
)
async def step_session_batch(
    session_id: str, body: StepsRequest, sessions: SessionsDep, settings: SettingsDep
) -> Response:
    """Take a batch of actions; stops early when the episode ends."""
    if len(body.actions) > settings.max_batch:
        raise PayloadTooLargeError(
            f"{len(body.actions)} actions exceed the batch limit", limit=settings.max_batch
        )
    result, count = await sessions.run(
        session_id, "steps", lambda s: ops.steps(s, body.actions, body.frames)
    )
    sessions.metrics.steps.inc(count)
    return Response(result, media_type="application/json")


@router.get("/{session_id}/state", responses=ON_SESSION)
async def get_state(session_id: str, sessions: SessionsDep) -> GameState:
    """The structured game state now (while the session plays: after its player's last step)."""
    player = sessions.get(session_id).playing()
    if player is not None and player.last_state is not None:
        return GameState.model_validate(player.last_state)
    return await sessions.run(session_id, "state", ops.state)


@router.get(
    "/{session_id}/frame.png",
    response_class=Response,
    responses={200: {"content": {"image/png": {}}}, **ON_SESSION},
)
async def get_frame(session_id: str, sessions: SessionsDep) -> Response:
    """The screen now, as PNG (the game does not advance; while it plays and is streamed:
    the newest streamed frame)."""
    session = sessions.get(session_id)
    if session.playing() is not None and session.feed is not None and session.feed.latest:
        return Response(session.feed.latest[2], media_type="image/png")
    png = await sessions.run(session_id, "frame", ops.frame_png)
    return Response(png, media_type="image/png")


@router.post("/{session_id}/save", status_code=201, dependencies=[ControlDep], responses=CONTROLLED)
async def save_state(session_id: str, sessions: SessionsDep, store: StoreDep) -> SavedState:
    """Save the emulator state into the object store; returns its id."""
    blob = await sessions.run(session_id, "save", lambda s: s.env.gameboy.save_state())
    state_id = uuid.uuid4().hex
    info = await sessions.in_pool(lambda: store.put(_state_key(state_id), blob))
    return SavedState(
        id=state_id,
        rom_id=sessions.get(session_id).rom_id,
        size=info.size,
        sha256=info.sha256,
        key=info.key,
    )


LOAD_BODY = {
    "requestBody": {
        "content": {
            "application/json": {"schema": LoadRequest.model_json_schema()},
            OCTET_STREAM: {"schema": {"type": "string", "format": "binary"}},
        },
        "required": True,
    }
}


@router.post(
    "/{session_id}/load",
    openapi_extra=LOAD_BODY,
    dependencies=[ControlDep],
    responses=CONTROLLED,
)
async def load_state(
    session_id: str, request: Request, sessions: SessionsDep, store: StoreDep, settings: SettingsDep
) -> Observation:
    """Start a new episode from a saved state: by id (JSON) or uploaded bytes (octet-stream)."""
    if request.headers.get("content-type", "").startswith(OCTET_STREAM):
        blob = await request.body()
        if len(blob) > settings.max_state_bytes:
            raise PayloadTooLargeError(
                f"state of {len(blob)} bytes exceeds the limit",
                limit_bytes=settings.max_state_bytes,
            )
    else:
        try:
            body = LoadRequest.model_validate_json(await request.body())
        except ValueError as error:
            raise UnprocessableError(
                f"expected {{'saved_state_id': ...}} or {OCTET_STREAM} bytes ({error})".replace(
                    "\n", " "
                )
            ) from None
        blob = await sessions.in_pool(lambda: _saved_state(store, body.saved_state_id))
    return await sessions.run(session_id, "load", lambda s: ops.load(s, blob))


@router.post("/{session_id}/tick", dependencies=[ControlDep], responses=CONTROLLED)
async def tick_session(session_id: str, body: TickRequest, sessions: SessionsDep) -> TickResult:
    """Frame-level control: hold buttons for some frames (for Emulator-protocol clients)."""
    frame = await sessions.run(session_id, "tick", lambda s: ops.tick(s, body.buttons, body.frames))
    return TickResult(frame=frame)


@router.get("/{session_id}/memory", responses=ON_SESSION)
async def read_memory(
    session_id: str,
    sessions: SessionsDep,
    address: Annotated[int, Query(ge=0, le=ADDRESS_SPACE - 1)],
    count: Annotated[int, Query(ge=1, le=MAX_MEMORY_READ)] = 1,
) -> MemoryRead:
    """Read `count` bytes from `address`; the read stops at 0xFFFF (fewer bytes come back)."""
    count = min(count, ADDRESS_SPACE - address)
    data = await sessions.run(session_id, "memory", lambda s: ops.memory(s, address, count))
    return MemoryRead(address=address, data_hex=data.hex())

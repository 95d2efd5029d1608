"""/v1/archive: a run's Go-Explore archive as a heat layer for the map."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path, Request
from starlette.concurrency import run_in_threadpool

from console.archive import archive_heat
from koholint.schemas.trainer import RUN_NAME_PATTERN
from koholint.web.problems import UnavailableError, problem_responses

router = APIRouter(prefix="/v1/archive", tags=["archive"])


@router.get("/{run}", responses=problem_responses(404, 422, 503))
async def get_archive_heat(
    run: Annotated[str, Path(pattern=RUN_NAME_PATTERN)], request: Request
) -> dict[str, Any]:
    """Visits per archive cell (room, 16-pixel bin) of a run, the most visited first."""
    store = request.app.state.store
    if store is None:
        raise UnavailableError("no object store: set KOHOLINT_CONSOLE_STORE_URL (the trainer's)")
    return await run_in_threadpool(archive_heat, store, run)

"""Liveness and readiness."""

from __future__ import annotations

import asyncio

from fastapi import APIRouter

from env_sim.deps import RomsDep, StoreDep
from koholint.problems import UnavailableError
from koholint.store import StoreError

router = APIRouter(tags=["health"])


@router.get("/healthz")
async def healthz() -> dict[str, str]:
    """The process is alive."""
    return {"status": "ok"}


@router.get("/readyz")
async def readyz(store: StoreDep, roms: RomsDep) -> dict[str, str]:
    """The object store is reachable and writable, and the ROMs are loaded."""
    try:
        await asyncio.to_thread(store.check)
    except StoreError as error:
        raise UnavailableError(f"object store not ready: {error}") from error
    return {"status": "ready", "roms": str(len(roms.describe()))}

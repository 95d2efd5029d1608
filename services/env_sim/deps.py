"""FastAPI dependencies of env-sim: the objects the lifespan made, as Annotated aliases."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from env_sim.config import Settings
from env_sim.live import LiveStreams
from env_sim.roms import RomRegistry
from env_sim.sessions import SessionManager
from koholint.store import ObjectStore


async def get_settings(request: Request) -> Settings:
    return request.app.state.settings  # type: ignore[no-any-return]


async def get_sessions(request: Request) -> SessionManager:
    return request.app.state.sessions  # type: ignore[no-any-return]


async def get_store(request: Request) -> ObjectStore:
    return request.app.state.store  # type: ignore[no-any-return]


async def get_roms(request: Request) -> RomRegistry:
    return request.app.state.roms  # type: ignore[no-any-return]


async def get_live(request: Request) -> LiveStreams:
    return request.app.state.live  # type: ignore[no-any-return]


SettingsDep = Annotated[Settings, Depends(get_settings)]
SessionsDep = Annotated[SessionManager, Depends(get_sessions)]
StoreDep = Annotated[ObjectStore, Depends(get_store)]
RomsDep = Annotated[RomRegistry, Depends(get_roms)]
LiveDep = Annotated[LiveStreams, Depends(get_live)]

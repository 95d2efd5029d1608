"""FastAPI dependencies of the console: the objects the lifespan made, as Annotated aliases."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Depends, Request

from console.config import Settings
from console.fleet import Fleet
from console.relay import PositionHub
from console.worldmap import MapCache
from koholint.web.auth import ControlDep
from koholint.web.streaming import StreamSlots


async def get_settings(request: Request) -> Settings:
    return request.app.state.settings  # type: ignore[no-any-return]


async def get_hub(request: Request) -> PositionHub:
    return request.app.state.hub  # type: ignore[no-any-return]


async def get_fleet(request: Request) -> Fleet:
    return request.app.state.fleet  # type: ignore[no-any-return]


async def get_map(request: Request) -> MapCache:
    return request.app.state.map  # type: ignore[no-any-return]


async def get_live(request: Request) -> StreamSlots:
    return request.app.state.live  # type: ignore[no-any-return]


async def get_redis(request: Request) -> Any:
    return request.app.state.redis


SettingsDep = Annotated[Settings, Depends(get_settings)]
HubDep = Annotated[PositionHub, Depends(get_hub)]
FleetDep = Annotated[Fleet, Depends(get_fleet)]
MapDep = Annotated[MapCache, Depends(get_map)]
RedisDep = Annotated[Any, Depends(get_redis)]
LiveDep = Annotated[StreamSlots, Depends(get_live)]

__all__ = ["ControlDep", "FleetDep", "HubDep", "LiveDep", "MapDep", "RedisDep", "SettingsDep"]

"""FastAPI dependencies of the console: the objects the lifespan made, as Annotated aliases."""

from __future__ import annotations

from typing import Annotated, Any

from console.config import Settings
from console.fleet import Fleet
from console.relay import PositionHub
from console.worldmap import MapCache
from koholint.web.auth import ControlDep
from koholint.web.state import from_state
from koholint.web.streaming import StreamSlots

SettingsDep = Annotated[Settings, from_state("settings")]
HubDep = Annotated[PositionHub, from_state("hub")]
FleetDep = Annotated[Fleet, from_state("fleet")]
MapDep = Annotated[MapCache, from_state("map")]
RedisDep = Annotated[Any, from_state("redis")]
LiveDep = Annotated[StreamSlots, from_state("live")]

__all__ = ["ControlDep", "FleetDep", "HubDep", "LiveDep", "MapDep", "RedisDep", "SettingsDep"]

"""FastAPI dependencies of env-sim: the objects the lifespan made, as Annotated aliases."""

from __future__ import annotations

from typing import Annotated

from env_sim.config import Settings
from env_sim.live import LiveStreams
from env_sim.roms import RomRegistry
from env_sim.sessions import SessionManager
from koholint.store import ObjectStore
from koholint.web.state import from_state

SettingsDep = Annotated[Settings, from_state("settings")]
SessionsDep = Annotated[SessionManager, from_state("sessions")]
StoreDep = Annotated[ObjectStore, from_state("store")]
RomsDep = Annotated[RomRegistry, from_state("roms")]
LiveDep = Annotated[LiveStreams, from_state("live")]

"""The env-sim service's request and response bodies (API version v1)."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from koholint.game.state import GameState

ENV_SIM_SCHEMA_VERSION = 1
MAX_SEED = 2**31 - 1
CARTRIDGE_ROM_ID = "cartridge"
STATE_ID_PATTERN = r"^[0-9a-f]{32}$"
ROM_ID_PATTERN = r"^(cartridge|[0-9a-f]{64})$"
STATE_NAME_PATTERN = r"^[a-z][a-z0-9_]{0,63}$"


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SessionSettings(_Body):
    """How a session's environment is made."""

    rom_id: str = Field(
        CARTRIDGE_ROM_ID,
        pattern=ROM_ID_PATTERN,
        description="'cartridge' or a ROM sha256 from GET /v1/roms",
    )
    start_state: str | None = Field(
        "start_of_play", pattern=STATE_NAME_PATTERN, description="a named state; null = power-on"
    )
    saved_state_id: str | None = Field(
        None,
        pattern=STATE_ID_PATTERN,
        description="a state saved with POST .../save; overrides start_state",
    )
    seed: int = Field(0, ge=0, le=MAX_SEED)
    frame_skip: int = Field(4, ge=1, le=60)
    sticky_action_probability: float = Field(0.0, ge=0.0, lt=1.0)
    latch_steps: int = Field(1, ge=1, le=64)
    max_episode_steps: int = Field(4096, ge=1, le=10_000_000)
    reward_mode: Literal["sparse", "progress", "progress+coverage"] = "progress+coverage"
    cartridge_seed: int | None = Field(0, ge=0, le=255)


class SessionInfo(_Body):
    schema_version: int = ENV_SIM_SCHEMA_VERSION
    id: str
    rom_id: str
    created_at: datetime
    last_used_at: datetime
    steps: int = Field(ge=0, description="steps taken in this session, all episodes")
    episode_steps: int = Field(ge=0)
    settings: SessionSettings


class SessionList(_Body):
    sessions: list[SessionInfo]
    max_sessions: int


class ResetRequest(_Body):
    seed: int | None = Field(None, ge=0, le=MAX_SEED)
    start_state: str | None = Field(
        None, pattern=STATE_NAME_PATTERN, description="a named state (default: the session's)"
    )
    saved_state_id: str | None = Field(None, pattern=STATE_ID_PATTERN)


class StepRequest(_Body):
    action: int = Field(ge=0, le=8, description="koholint.env.zelda.Action")
    frame: bool = Field(False, description="include the frame as base64 PNG")


class StepsRequest(_Body):
    actions: list[int] = Field(
        min_length=1, description="at most the server's max_batch actions, each 0..8"
    )
    frames: bool = Field(False, description="include every step's frame as base64 PNG")


class Transition(_Body):
    action: int
    applied_action: int
    reward: float
    reward_components: dict[str, float]
    terminated: bool
    truncated: bool


class Observation(_Body):
    observation: list[float] = Field(min_length=128, max_length=128)
    state: GameState
    frame_png: str | None = None


class StepResult(Observation):
    transition: Transition


class BatchResult(Observation):
    steps: list[Transition]
    frames_png: list[str] | None = None


class SavedState(_Body):
    schema_version: int = ENV_SIM_SCHEMA_VERSION
    id: str
    rom_id: str
    size: int
    sha256: str
    key: str = Field(description="object-store key of the state bytes")


class LoadRequest(_Body):
    saved_state_id: str = Field(pattern=STATE_ID_PATTERN)


class TickRequest(_Body):
    """Frame-level control, for clients that drive the emulator directly (the Emulator protocol)."""

    buttons: int = Field(0, ge=0, le=255, description="koholint.game.emulator.Button mask held")
    frames: int = Field(1, ge=1, le=600)


class TickResult(_Body):
    frame: int


class MemoryRead(_Body):
    address: int
    data_hex: str


class RomInfo(_Body):
    id: str
    title: str
    sha256: str
    size: int
    cgb: bool
    source: Literal["bundled", "configured", "uploaded"]


class RomList(_Body):
    roms: list[RomInfo]

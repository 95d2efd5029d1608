"""The env-sim service's request and response bodies (API version v1).

Request bodies take JSON types as JSON Schema does (``{"action": "1"}`` or ``true`` is refused,
naming the field; ``1.0`` is the integer 1) and
carry every limit the server enforces, so the OpenAPI spec states them; the environment's
limits come from ``koholint.schemas.env``, where they are declared once.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, StrictBool

from koholint.game.state import GameState
from koholint.game.states import STATE_NAMES
from koholint.schemas.env import Action, EnvSettings
from koholint.schemas.fields import JsonFloat, JsonInt, Seed, number_not_text

ENV_SIM_SCHEMA_VERSION = 1

CARTRIDGE_ROM_ID = "cartridge"
STATE_ID_PATTERN = r"^[0-9a-f]{32}$"
ROM_ID_PATTERN = r"^(cartridge|[0-9a-f]{64})$"
STATE_NAME_PATTERN = "^(" + "|".join(STATE_NAMES) + ")$"
LAST_ACTION = len(Action) - 1
MAX_BATCH = 10_000
"""Actions per batch at most; a server may set a lower limit (its spec then says so)."""
MAX_TICK_FRAMES = 600
ADDRESS_SPACE = 0x10000
MAX_MEMORY_READ = 4096


# Constraints before the validator, so that pydantic writes them into the schema as limits.
ActionId = Annotated[
    int,
    Field(ge=0, le=LAST_ACTION, description="koholint.env.zelda.Action"),
    BeforeValidator(number_not_text),
]


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class _Request(BaseModel):
    """A request body: unknown fields refused; numbers, booleans and strings as JSON types."""

    model_config = ConfigDict(extra="forbid")


class SessionSettings(EnvSettings):
    """How a session's environment is made: the game's settings (``EnvSettings``), the ROM,
    a saved state to start from and the seed."""

    rom_id: str = Field(CARTRIDGE_ROM_ID, pattern=ROM_ID_PATTERN)
    """'cartridge' or a ROM sha256 from GET /v1/roms"""
    saved_state_id: str | None = Field(None, pattern=STATE_ID_PATTERN)
    """a state saved with POST .../save; overrides start_state"""
    seed: Seed = 0
    """seeds the episode's randomness (sticky actions, a drawn cartridge seed)"""

    def env_settings(self) -> dict[str, Any]:
        """The game's settings alone, to hand to the environment."""
        return {name: getattr(self, name) for name in EnvSettings.model_fields}


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


class ResetRequest(_Request):
    seed: Seed | None = None
    start_state: str | None = Field(
        None, pattern=STATE_NAME_PATTERN, description="a named state (default: the session's)"
    )
    saved_state_id: str | None = Field(None, pattern=STATE_ID_PATTERN)


class StepRequest(_Request):
    action: ActionId
    frame: StrictBool = Field(False, description="include the frame as base64 PNG")


class StepsRequest(_Request):
    actions: list[ActionId] = Field(
        min_length=1, max_length=MAX_BATCH, description="at most the server's max_batch actions"
    )
    frames: StrictBool = Field(False, description="include every step's frame as base64 PNG")


PlayPolicy = Literal["noop", "random", "walkthrough", "explorer"]
"""The baseline policies env-sim plays a session with (koholint.baselines.policies)."""


class PlayRequest(_Request):
    """Play the session with a baseline policy, paced to the game's real speed (env-sim's
    ``POST /v1/sessions/{id}/play``, and the console's, which passes it on)."""

    policy: PlayPolicy = Field("explorer", description="a baseline policy: noop, random, "
                               "walkthrough (needs reset) or explorer")  # fmt: skip
    seed: Seed = Field(0, description="the policy's seed")
    speed: JsonFloat = Field(
        1.0, ge=0.25, le=4.0, description="times the game's real speed (59.73 frames/s)"
    )
    reset: StrictBool = Field(
        False,
        description="start a new episode first (the walkthrough needs one, from power-on); "
        "otherwise play goes on from where the session is",
    )
    # The bound on the number itself, not on the optional: JSON Schema's exclusiveMinimum.
    max_seconds: Annotated[float, Field(gt=0), BeforeValidator(number_not_text)] | None = Field(
        None, description="stop after this long (at most the server's max_play_seconds)"
    )


class Transition(_Body):
    action: int
    applied_action: int
    reward: float
    reward_components: dict[str, float]
    terminated: bool
    truncated: bool


class Observation(_Body):
    observation: list[float] = Field(
        min_length=128,
        max_length=144,
        description="the agent's vector: 128 floats; 144 or 142 with the session's observation "
        "'memory' or 'flags'",
    )
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


class LoadRequest(_Request):
    saved_state_id: str = Field(pattern=STATE_ID_PATTERN)


class TickRequest(_Request):
    """Frame-level control, for clients that drive the emulator directly (the Emulator protocol)."""

    buttons: JsonInt = Field(0, ge=0, le=255, description="koholint.game.emulator.Button mask held")
    frames: JsonInt = Field(1, ge=1, le=MAX_TICK_FRAMES)


class TickResult(_Body):
    frame: int


class MemoryRead(_Body):
    address: int
    data_hex: str = Field(description="the bytes read; fewer than asked where 0xFFFF is reached")


class RomInfo(_Body):
    id: str
    title: str
    sha256: str
    size: int
    cgb: bool
    source: Literal["bundled", "configured", "world", "uploaded"] = Field(
        description="the bundled cartridge, the operator's ROM, a world of the operator's "
        "worlds folder, or an upload"
    )


class RomList(_Body):
    roms: list[RomInfo]

"""The planner service's contract (API version v1): what a decision is made from
(``Situation``) and the request bodies; its answers are ``koholint.planning.backends.Decision``
and ``koholint.planning.autopilot.AutopilotReport``.

The service validates these and ``koholint.clients.planner`` sends them, so a field is
defined once for both sides.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, field_validator

from koholint.game.ram import ROOM_HEIGHT, ROOM_WIDTH
from koholint.game.state import GameState
from koholint.schemas.fields import Seed, number_not_text

PLANNER_SCHEMA_VERSION = 1
SESSION_PATTERN = r"^[A-Za-z0-9_.-]{1,64}$"
MAX_FRAME_BASE64 = 256 * 1024
BASE64_PATTERN = r"^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$"
MAX_AUTOPILOT_MACROS = 10_000
"""Macros per autopilot run at most; a server may set a lower limit (its spec then says so)."""
MAX_AUTOPILOT_FRAMES = 1_000_000


Json = BeforeValidator(number_not_text)


Tiles = tuple[tuple[int, ...], ...]
"""A room's metatile ids as read from RAM: 8 rows of 10."""
# The row's shape in the schema too, so that the planner's OpenAPI spec states it.
TileRow = Annotated[
    list[Annotated[int, Field(ge=0, le=255), BeforeValidator(number_not_text)]],
    Field(min_length=ROOM_WIDTH, max_length=ROOM_WIDTH),
]


class Situation(BaseModel):
    """What a decision is made from: the structured state and the room's tiles (8 x 10)."""

    model_config = ConfigDict(extra="forbid")

    state: GameState
    tiles: list[TileRow] = Field(
        min_length=ROOM_HEIGHT,
        max_length=ROOM_HEIGHT,
        description="wRoomObjects metatile ids, 8 rows of 10 (koholint.game.navigation.Metatile)",
    )

    @field_validator("tiles")
    @classmethod
    def rows_of_ten(cls, tiles: list[list[int]]) -> list[list[int]]:
        for row in tiles:
            if len(row) != ROOM_WIDTH or not all(0 <= tile <= 255 for tile in row):
                raise ValueError(f"each row needs {ROOM_WIDTH} tile ids in 0..255")
        return tiles

    def tile_tuple(self) -> Tiles:
        return tuple(tuple(row) for row in self.tiles)


class DecideRequest(BaseModel):
    """A situation to decide on; `session` keys the planner's memory of earlier decisions."""

    model_config = ConfigDict(extra="forbid")

    situation: Situation
    session: str | None = Field(
        None, pattern=SESSION_PATTERN, description="memory key; none = no memory kept"
    )
    frame_png_base64: str | None = Field(
        None, max_length=MAX_FRAME_BASE64, pattern=BASE64_PATTERN,
        description="the screen as base64 PNG (for /vision)",
    )  # fmt: skip
    seed: Seed = 0

    @field_validator("situation", mode="before")
    @classmethod
    def json_typed(cls, value: Any) -> Any:
        """The situation as JSON Schema types it: "3" or true for an integer is refused (the
        state model is lax, as it is also read from RAM), an integral 3.0 is the integer 3."""
        if not isinstance(value, dict):
            return value
        try:
            return Situation.model_validate(integral_floats_as_ints(value), strict=True)
        except ValidationError as error:
            raise ValueError(_first_error(error)) from None


def integral_floats_as_ints(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {key: integral_floats_as_ints(item) for key, item in value.items()}
    if isinstance(value, list):
        return [integral_floats_as_ints(item) for item in value]
    return value


def _first_error(error: ValidationError) -> str:
    first = error.errors()[0]
    return f"{'.'.join(str(part) for part in first['loc'])}: {first['msg']}"


class AutopilotRequest(BaseModel):
    """The budget of one autopilot run on an env-sim session."""

    model_config = ConfigDict(extra="forbid")

    max_macros: Annotated[int, Field(ge=1, le=MAX_AUTOPILOT_MACROS), Json] = 64
    max_frames: Annotated[int, Field(ge=1, le=MAX_AUTOPILOT_FRAMES), Json] = 20_000
    seed: Seed = 0

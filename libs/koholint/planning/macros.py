"""Macros: the planner's actions, as validated data (the wire format of decisions too)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from koholint.game.ram import ROOM_HEIGHT, ROOM_WIDTH, InventoryItem

Direction = Literal["up", "down", "left", "right"]
ItemName = Literal["sword", "bombs", "power_bracelet", "shield"]
ITEM_IDS: dict[str, int] = {
    "sword": InventoryItem.SWORD,
    "bombs": InventoryItem.BOMBS,
    "power_bracelet": InventoryItem.POWER_BRACELET,
    "shield": InventoryItem.SHIELD,
}
MAX_TIMEOUT_FRAMES = 10_000


def _timeout(default: int) -> object:
    return Field(default, ge=1, le=MAX_TIMEOUT_FRAMES, description="give up after this many frames")


class _Macro(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class MoveTo(_Macro):
    """Walk to the centre of a tile of the current room (path finding over walkable tiles)."""

    kind: Literal["MOVE_TO"] = "MOVE_TO"
    x: int = Field(ge=0, lt=ROOM_WIDTH)
    y: int = Field(ge=0, lt=ROOM_HEIGHT)
    timeout_frames: int = _timeout(900)  # type: ignore[assignment]


class PushBlock(_Macro):
    """Walk behind the room's block and push it one tile in `direction`."""

    kind: Literal["PUSH_BLOCK"] = "PUSH_BLOCK"
    direction: Direction
    timeout_frames: int = _timeout(900)  # type: ignore[assignment]


class UseItem(_Macro):
    """Press the button of the slot (A or B) holding `item`."""

    kind: Literal["USE_ITEM"] = "USE_ITEM"
    item: ItemName
    timeout_frames: int = _timeout(60)  # type: ignore[assignment]


class AdvanceDialog(_Macro):
    """Press A through the dialog's pages until it closes or shows a question."""

    kind: Literal["ADVANCE_DIALOG"] = "ADVANCE_DIALOG"
    timeout_frames: int = _timeout(1800)  # type: ignore[assignment]


class Choose(_Macro):
    """Answer the question on screen: move the cursor to `option` (0 = first) and confirm."""

    kind: Literal["CHOOSE"] = "CHOOSE"
    option: int = Field(ge=0, le=1)
    timeout_frames: int = _timeout(300)  # type: ignore[assignment]


class Interact(_Macro):
    """Face `direction` and press A: talk to someone or open a chest."""

    kind: Literal["INTERACT"] = "INTERACT"
    direction: Direction
    timeout_frames: int = _timeout(60)  # type: ignore[assignment]


class StartGame(_Macro):
    """From power-on to play, read from RAM: START on the title, the first file on the file
    select (a new one named on the name entry when there is none), until the world takes
    input (``koholint.game.opening``; LA DX's screens, docs/environment.md)."""

    kind: Literal["START_GAME"] = "START_GAME"
    timeout_frames: int = _timeout(1200)  # type: ignore[assignment]


Macro = Annotated[
    MoveTo | PushBlock | UseItem | AdvanceDialog | Choose | Interact | StartGame,
    Field(discriminator="kind"),
]


class MacroResult(BaseModel):
    """What executing a macro did. `refused` means nothing was pressed."""

    kind: str
    ok: bool
    refused: bool = False
    frames: int = Field(ge=0)
    reason: str = Field(max_length=300)

"""What the planner sees (a ``koholint.schemas.planner.Situation``), read from RAM, and the
dialog and puzzle tests on it.

``read_view`` works through the ``Emulator`` protocol only (three ``read_memory`` calls), so
the same code reads a local GameBoy and an env-sim session.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from koholint.game.emulator import Emulator
from koholint.game.ram import (
    DIALOG_BOX_AT_BOTTOM,
    GAMEPLAY_SUBTYPE_INTERACTIVE,
    ROOM_HEIGHT,
    ROOM_OBJECTS_STRIDE,
    ROOM_WIDTH,
    GameplayType,
    RamAddress,
    RoomFlag,
)
from koholint.game.state import GameState, RawState, count_visited_rooms
from koholint.game.tiles import Metatile
from koholint.schemas.planner import Situation, Tiles

# Everything RawState, the room tiles and the visited-room count read: link/dialog/entity
# tables (C1xx-C3xx), room tiles to inventory (D7xx-DBxx), OAM and HRAM. Each read stays
# under env-sim's 4 KiB limit per memory request.
_REGIONS = ((0xC100, 0x300), (0xD700, 0x500), (0xFE00, 0xA0), (0xFF80, 0x80))


class MemorySnapshot:
    """RAM read in a few calls, indexable like PyBoy's ``memory`` (ints and slices)."""

    def __init__(self, emulator: Emulator) -> None:
        self._regions = [(start, emulator.read_memory(start, size)) for start, size in _REGIONS]

    def _region(self, address: int, end: int) -> tuple[int, bytes]:
        for start, data in self._regions:
            if start <= address and end <= start + len(data):
                return start, data
        raise IndexError(f"0x{address:04X}..0x{end:04X} is outside the snapshot")

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, slice):
            start, data = self._region(key.start, key.stop)
            return data[key.start - start : key.stop - start]
        start, data = self._region(key, key + 1)
        return data[key - start]


def room_tiles(memory: Any) -> Tiles:
    """The current room's metatiles, 8 rows of 10 (wRoomObjects)."""
    base = int(RamAddress.ROOM_OBJECTS)
    return tuple(
        tuple(
            memory[base + row * ROOM_OBJECTS_STRIDE : base + row * ROOM_OBJECTS_STRIDE + ROOM_WIDTH]
        )
        for row in range(ROOM_HEIGHT)
    )


def dialog_open(dialog_state: int) -> bool:
    """`is_dialog_state` from the raw wDialogState byte: any state but closed."""
    return (dialog_state & ~DIALOG_BOX_AT_BOTTOM & 0xFF) != 0


def puzzle_unsolved(tiles: Tiles, room_status: int) -> bool:
    """`is_puzzle_state` from RAM: the room holds a pushable block, an empty plate and a
    closed gate, and its status lacks the puzzle-solved bit."""
    if room_status & RoomFlag.PUZZLE_SOLVED:
        return False
    present = {tile for row in tiles for tile in row}
    return {Metatile.BLOCK, Metatile.PLATE, Metatile.GATE} <= present


@dataclass(frozen=True)
class View:
    """One frame as the executor reads it: fast fields, tiles, and the full state on demand."""

    raw: RawState
    tiles: Tiles
    memory: Any

    @property
    def in_world(self) -> bool:
        return bool(self.raw.gameplay_type == GameplayType.WORLD)

    @property
    def in_play(self) -> bool:
        """In the world and taking input (not a map fade or a menu)."""
        return self.in_world and self.raw.gameplay_subtype == GAMEPLAY_SUBTYPE_INTERACTIVE

    @property
    def dialog(self) -> int:
        return int(self.raw.dialog) & ~DIALOG_BOX_AT_BOTTOM & 0xFF

    def situation(self) -> Situation:
        rooms = count_visited_rooms(self.memory)
        state = GameState.model_validate(self.raw.to_dict(rooms))
        return Situation(state=state, tiles=[list(row) for row in self.tiles])


def read_view(emulator: Emulator) -> View:
    memory = MemorySnapshot(emulator)
    return View(raw=RawState(memory), tiles=room_tiles(memory), memory=memory)


def is_title_state(situation: Situation) -> bool:
    return situation.state.mode == "title"


def is_dialog_state(situation: Situation) -> bool:
    return situation.state.mode == "world" and dialog_open(situation.state.dialog.raw_state)


def is_puzzle_state(situation: Situation) -> bool:
    return (
        situation.state.mode == "world"
        and not dialog_open(situation.state.dialog.raw_state)
        and puzzle_unsolved(situation.tile_tuple(), situation.state.room_status)
    )

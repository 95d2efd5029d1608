"""The cartridge's metatile ids (``cartridge/tools/gfx.py``, read from wRoomObjects) and
their classes: solid, walkable, pickups, stairs. Shared by navigation, the encoder and the
compiled fast path, none of which needs the others."""

from __future__ import annotations

from collections.abc import Sequence
from enum import IntEnum


class Metatile(IntEnum):
    FLOOR = 0
    WALL = 1
    TREE = 2
    CHEST = 3
    CHEST_OPEN = 4
    BLOCK = 5
    PLATE = 6
    BLOCK_ON_PLATE = 7
    GATE = 8
    LOCKED_DOOR = 9
    KEY = 10
    RUPEE = 11
    HEART = 12
    STAIRS_DOWN = 13
    STAIRS_UP = 14
    INSTRUMENT = 15
    DUNGEON_FLOOR = 16
    DUNGEON_WALL = 17
    WATER = 18
    SIGN = 19


SOLID = frozenset(
    {
        Metatile.WALL, Metatile.TREE, Metatile.CHEST, Metatile.CHEST_OPEN, Metatile.BLOCK,
        Metatile.BLOCK_ON_PLATE, Metatile.GATE, Metatile.LOCKED_DOOR, Metatile.DUNGEON_WALL,
        Metatile.WATER, Metatile.SIGN,
    }
)  # fmt: skip
# Safe to walk over; stairs and the instrument also are walkable but trigger something.
WALKABLE = frozenset(
    {
        Metatile.FLOOR,
        Metatile.PLATE,
        Metatile.KEY,
        Metatile.RUPEE,
        Metatile.HEART,
        Metatile.DUNGEON_FLOOR,
    }
)
PICKUPS = frozenset({Metatile.KEY, Metatile.RUPEE, Metatile.HEART})
STAIRS = frozenset({Metatile.STAIRS_DOWN, Metatile.STAIRS_UP})


def cells_of(tiles: Sequence[Sequence[int]], kind: Metatile) -> list[tuple[int, int]]:
    """The (column, row) cells of a room's metatiles that are `kind`, row by row."""
    return [(x, y) for y, row in enumerate(tiles) for x, tile in enumerate(row) if tile == kind]

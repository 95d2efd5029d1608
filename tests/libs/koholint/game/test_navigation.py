"""Room navigation: which overworld rooms are neighbours, and on which side."""

from __future__ import annotations

import pytest

from koholint.game.emulator import Button
from koholint.game.navigation import door_step, edge_side, neighbour_side
from koholint.game.tiles import Metatile


@pytest.mark.parametrize(
    ("room", "other", "side"),
    [
        ((0, 0, 0x01), (0, 0, 0x11), "down"),
        ((0, 0, 0x11), (0, 0, 0x01), "up"),
        ((0, 0, 0x01), (0, 0, 0x00), "left"),
        ((0, 0, 0x10), (0, 0, 0x11), "right"),
        ((0, 0, 0x0F), (0, 0, 0x10), None),  # the next row's first room, not a neighbour
        ((0, 0, 0x01), (0, 0, 0x22), None),
        ((1, 0, 0x10), (1, 0, 0x11), None),  # indoor maps are not on the overworld's grid
    ],
)
def test_overworld_neighbours_are_one_row_or_one_column_apart(room, other, side):
    assert neighbour_side(room, other) == side


def room_with(cells: dict[tuple[int, int], int]) -> list[list[int]]:
    """A 10 x 8 room of floor walled round, with `cells` set."""
    tiles = [[Metatile.WALL if x in (0, 9) or y in (0, 7) else Metatile.FLOOR for x in range(10)]
             for y in range(8)]  # fmt: skip
    for (x, y), tile in cells.items():
        tiles[y][x] = tile
    return tiles


@pytest.mark.parametrize(
    ("door", "position", "button"),
    [
        ((4, 0), (72, 24), Button.UP),  # centred inside the top door: into it
        ((4, 0), (72, 88), Button.UP),  # below it: walk up to it
        ((4, 0), (76, 24), Button.LEFT),  # inside it, off its centre: centre first
        ((9, 3), (136, 56), Button.RIGHT),  # the east door, from inside it
        ((0, 4), (120, 72), Button.LEFT),  # the west door, from across the room
    ],
)
def test_the_step_to_a_locked_door_walks_inside_it_then_into_it(door, position, button):
    assert door_step(room_with({door: Metatile.LOCKED_DOOR}), position, tolerance=2) == button


def test_no_step_without_a_locked_door_on_the_edge_or_a_path_to_it():
    assert door_step(room_with({}), (72, 72)) is None
    assert door_step(room_with({(4, 3): Metatile.LOCKED_DOOR}), (72, 72)) is None  # not an edge
    walled = room_with({(4, 0): Metatile.LOCKED_DOOR, **{(x, 4): Metatile.WALL for x in range(10)}})
    assert door_step(walled, (72, 100)) is None
    assert edge_side((4, 0)) == "up"
    assert edge_side((4, 4)) is None

"""Room navigation: which overworld rooms are neighbours, and on which side."""

from __future__ import annotations

import pytest

from koholint.game.navigation import neighbour_side


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

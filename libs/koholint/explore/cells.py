"""Phase 1's cells: where Link stands, how far along the route, what is left in the room and
what Link holds.

A cell is ``(room key, x // bin, y // bin, level, enemies left, block tile, items, keys)``. The
first four are the archive's cells (``koholint.explore.archive``); the next two are the room's
own progress, which the level cannot see because it resets when Link leaves: a room may
hide its key until its enemies are beaten, so a state with one enemy left must be kept
apart from one with three; and a puzzle's block may have to travel several tiles, so each
place it has reached is kept too (and a block pushed into a corner does not erase a good
one). Both are read from the entity tables, the same on Link's Awakening. The last two are
what Link holds (the items as a bit mask, the small keys), as Go-Explore's cells count the
keys held: without them a level that does not count an item yet (none, or an R_phi fitted
before any state held it) files the first state with the sword under a cell already reached
without it, and drops it as a slower visit before the judges ever see it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from koholint.env.zelda import MILESTONES, milestones, progress_level
from koholint.explore.archive import Cell
from koholint.game.ram import EntityStatus, EntityType, GameplayType, MotionState
from koholint.game.state import RawState

_ACTIVE = int(EntityStatus.ACTIVE)
_BLOCK = int(EntityType.BLOCK)
_ENEMIES = frozenset({int(EntityType.OCTOROK), int(EntityType.KEESE)})
_STEADY_MOTION = frozenset({int(MotionState.NORMAL)})
NO_BLOCK = 0xFF
LOOP_TILE = 8
"""pixels per tile of the cells the shortening compares: a loop must return to one, a
shortcut's walk must reach one (koholint.teachers.shorten, koholint.teachers.shortcuts)"""


def room_detail(raw: RawState) -> tuple[int, int]:
    """(enemies alive in the room, tile of the pushable block or NO_BLOCK)."""
    enemies, block = 0, NO_BLOCK
    for slot, status in enumerate(raw.entity_status):
        if status != _ACTIVE:
            continue
        kind = raw.entity_type[slot]
        if kind in _ENEMIES:
            enemies += 1
        elif kind == _BLOCK:
            block = ((raw.entity_y[slot] >> 4) << 4) | (raw.entity_x[slot] >> 4)
    return enemies, block


def cell_of(
    raw: RawState, tile_bin: int, level_of: Callable[[RawState], int] = progress_level
) -> tuple[Cell, int]:
    """The cell a state belongs to, and its level (the hand-written progress level unless
    `level_of` says otherwise: ``koholint.explore.levels``)."""
    level = level_of(raw)
    enemies, block = room_detail(raw)
    cell = (raw.room_key, raw.x // tile_bin, raw.y // tile_bin, level, enemies, block,
            raw.items_mask, int(raw.keys))  # fmt: skip
    return cell, level


def restartable(raw: RawState) -> bool:
    """Whether a state saved now restarts in the cell it was read in: not mid-transition
    (it would restart in the next room), not fading through stairs, not passing out."""
    return not raw.transition and raw.motion in _STEADY_MOTION


def won(raw: RawState) -> bool:
    """The instrument is taken: the credits state."""
    return bool(raw.gameplay_type == GameplayType.CREDITS)


def reached_milestones(memory: Any, raw: RawState) -> set[str]:
    """The names in MILESTONES this state has reached."""
    return {name for name, reached in milestones(memory, raw).items() if reached}


__all__ = [
    "LOOP_TILE",
    "MILESTONES",
    "NO_BLOCK",
    "cell_of",
    "reached_milestones",
    "restartable",
    "room_detail",
    "won",
]

"""Shortcuts for a winning trajectory: a path-finder's walk into a neighbouring room the
trajectory reaches only later, by way of other rooms.

Cutting loops and runs only removes steps: it cannot invent a way the random walk never
took, and a detour through other rooms costs a demonstration more than its steps (rooms
crossed with less than the route needs). ``with_shortcuts`` looks, from each state at
rest, for the last later state in a neighbouring overworld room with the same progress
(level, items, keys); walks there with the path-finder (to the edge on that side, then to
that state's 8-pixel tile); and keeps the trajectory with the walk in place of what lay
between when it still wins.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from koholint.env.zelda import BUTTON_ACTIONS
from koholint.explore.cells import LOOP_TILE, cell_of, restartable
from koholint.game.navigation import (
    NoPathError,
    edge_cells,
    find_path,
    neighbour_side,
    next_step,
    steer,
)
from koholint.game.ram import ROOM_HEIGHT, ROOM_WIDTH, RamReader
from koholint.schemas.env import Action
from koholint.teachers.walks import Exit, walk_action

if TYPE_CHECKING:
    from koholint.env.zelda import ZeldaEnv
    from koholint.explore.archive import Cell

MIN_SAVED = 32
"""the fewest steps a shortcut must save to be tried"""
MAX_WALK = 200
"""the most steps a shortcut's walk may take"""


class WinCheck(Protocol):
    """What the shortcuts use of ``koholint.teachers.shorten.WinCheck``."""

    env: Any
    zelda: ZeldaEnv
    steps: int

    @property
    def spent(self) -> bool: ...
    def __call__(self, actions: bytes, track: Any = None) -> bool: ...
    def track_after_win(self, before: Any) -> list[Cell | None]: ...
    def cells(self, actions: bytes, tile: int = ...) -> list[Cell | None]: ...
    def play(self, prefix: bytes) -> None: ...
    def rebase(self, prefix: bytes) -> None: ...


def same_progress(cell: Cell, other: Cell) -> bool:
    """The same level, items and keys (the cell's fields 3, 6 and 7)."""
    return (cell[3], cell[6], cell[7]) == (other[3], other[6], other[7])


def inside(cell: Cell) -> bool:
    """Whether the cell's tile is clear of the room's edges by a 16-pixel cell (a walk that
    ends on an edge tile can start the scroll to the next room instead)."""
    margin = 16 // LOOP_TILE
    return bool(margin <= cell[1] < ROOM_WIDTH * margin - margin
                and margin <= cell[2] < ROOM_HEIGHT * margin - margin)  # fmt: skip


def shortcut_target(cells: list[Cell | None], start: int) -> tuple[int, str] | None:
    """The last state at rest inside its room, at least MIN_SAVED steps after `start`, in
    a neighbouring overworld room with `start`'s progress, and the side it lies on; or
    None."""
    here = cells[start]
    if here is None:
        return None
    for index in range(len(cells) - 1, start + MIN_SAVED, -1):
        there = cells[index]
        if there is None or not inside(there) or not same_progress(here, there):
            continue
        side = neighbour_side(here[0], there[0])
        if side is not None:
            return index, side
    return None


def with_shortcuts(actions: bytes, check: WinCheck) -> tuple[bytes, int]:
    """`actions` with the shortcuts that still win (from the start on); the checks it took."""
    if check.spent:
        return actions, 0
    current, checks, cursor = actions, 0, 0
    cells = check.cells(current)
    while cursor < len(current) and not check.spent:
        target = shortcut_target(cells, cursor)
        if target is not None:
            end, side = target
            goal = cells[end]
            assert goal is not None  # shortcut_target picks states at rest
            prefix = current[: cursor + 1]
            check.rebase(prefix)
            walk = walk_into(check, prefix, side, goal)
            if walk is not None and len(walk) <= end - cursor - MIN_SAVED:
                candidate = prefix + walk + current[end + 1 :]
                track = [*cells[: cursor + 1], *[None] * len(walk), *cells[end + 1 :]]
                checks += 1
                if check(candidate, track):
                    current, cells = candidate, check.track_after_win(track)
        cursor += 1
    return current, checks


def walk_into(check: WinCheck, prefix: bytes, side: str, goal: Cell) -> bytes | None:
    """The path-finder's actions from the state after `prefix`: out of the room on `side`,
    then to `goal`'s tile in the room there; None when it does not reach `goal` in MAX_WALK
    steps (a wall, another room, a planner that took over)."""
    check.play(prefix)
    zelda = check.zelda
    start_room = zelda.raw_state.room_key
    walked = bytearray()
    for _ in range(MAX_WALK):
        raw = zelda.raw_state
        if not restartable(raw):
            action: int | None = int(Action.NOOP)
        elif raw.room_key == goal[0]:
            if cell_of(raw, LOOP_TILE)[0] == goal:
                return bytes(walked)
            centre = LOOP_TILE // 2
            action = toward(check, (goal[1] * LOOP_TILE + centre, goal[2] * LOOP_TILE + centre))
        elif raw.room_key == start_room:
            action = exit_action(check, side)
        else:
            return None
        if not take(check, walked, action):
            return None
    return None


def take(check: WinCheck, walked: bytearray, action: int | None) -> bool:
    """Step `action` and add it to `walked`; whether the walk goes on (no action, or the
    credits reached mid-walk, end it)."""
    if action is None:
        return False
    walked.append(action)
    check.steps += 1
    _, _, terminated, _, _ = check.env.step(action)
    return not terminated


def exit_action(check: WinCheck, side: str) -> int | None:
    """The step toward the nearest walkable cell on the room's `side`, then across it."""
    zelda = check.zelda
    tiles = RamReader(zelda.gameboy.memory, banked=zelda.gameboy.rom.cgb).room_objects()
    raw = zelda.raw_state
    here = (raw.x // 16, raw.y // 16)
    reachable = []
    for cell in edge_cells(tiles, side):
        try:
            reachable.append((len(find_path(tiles, here, cell)), cell))
        except NoPathError:
            continue
    if not reachable:
        return None
    cell = min(reachable)[1]
    return walk_action(zelda, Exit(raw.room_key, raw.room_key, 0, cell, side))


def toward(
    check: WinCheck, target: tuple[int, int], tolerance: int = LOOP_TILE // 2 - 1
) -> int | None:
    """The step toward pixel `target` in this room (the path, then the last pixels, to
    within `tolerance`)."""
    zelda = check.zelda
    tiles = RamReader(zelda.gameboy.memory, banked=zelda.gameboy.rom.cgb).room_objects()
    raw = zelda.raw_state
    goal = (target[0] // 16, target[1] // 16)
    try:
        if (raw.x // 16, raw.y // 16) != goal:
            button = next_step(tiles, (raw.x, raw.y), goal, tolerance=zelda.config.frame_skip // 2)
        else:
            button = steer((raw.x, raw.y), target, "x", tolerance=tolerance)
    except NoPathError:
        return None
    action = BUTTON_ACTIONS.get(button)
    return None if action is None else int(action)

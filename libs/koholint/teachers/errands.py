"""Errands first: a winning trajectory's item errand taken before a detour that did not
need it, where the trajectory still wins that way.

Phase 1's random walk does the route's errands in whatever order it stumbled on them.
Seeds 0 and 2 solve the puzzle before they fetch the sword: up from the first room through
overworld 0x11 to the puzzle in 0x01, back down the same rooms to the sword glade (0x20),
and up them all again to the dungeon's stairs in 0x02. Cutting loops and taking shortcuts
cannot reorder that (no two states of the two crossings have the same progress), and as a
demonstration it costs twice over: ~150 more steps for phase 2 to walk back, and two
crossings of 0x21 and 0x11 that look the same to the policy but go opposite ways (seed 2's
losses from power-on ended there 14 times in 21).

``with_errands_first`` starts at the first state before the detour that holds what the
errand needs (the same items and keys) and walks with the path-finder through the rooms
the trajectory crossed: to the errand's room, up against its chest and A, then on to the
room of the dungeon's stairs (the planner solves the puzzle on the way, as everywhere) and
down them. It lands on the pixel where the trajectory's stairs put Link and keeps what the
trajectory did from there when that still wins: the cartridge seeds a room's RNG as Link
enters it, so the dungeon plays on as recorded.
"""

from __future__ import annotations

from collections import deque

from koholint.explore.archive import Cell
from koholint.explore.cells import LOOP_TILE, cell_of, restartable
from koholint.explore.fights import BUTTON_ACTIONS
from koholint.explore.shortcuts import (
    MIN_SAVED,
    WinCheck,
    exit_action,
    inside,
    neighbour_side,
    take,
)
from koholint.game.emulator import Button
from koholint.game.navigation import FACING, NoPathError, next_step, steer, tile_center
from koholint.game.ram import RamReader
from koholint.game.tiles import Metatile
from koholint.schemas.env import Action

Room = tuple[int, int, int]

MAX_ERRAND_WALK = 600
"""the most steps the walk to the errand and on to the kept state may take"""
WAITS = (0, 1, 2, 3)
"""steps stood still before the walk, tried in turn: the overworld's enemies move on while
Link walks, and a walk that takes a hit from one can pass it a step later"""


def item_gains(cells: list[Cell | None]) -> list[int]:
    """The steps of the first states at rest holding an item the state at rest before them
    did not (the items' bit mask grew), in overworld rooms."""
    gains, previous = [], None
    for index, cell in enumerate(cells):
        if cell is None:
            continue
        if previous is not None and cell[6] & ~previous[6] and not cell[0][0]:
            gains.append(index)
        previous = cell
    return gains


def _before(cells: list[Cell | None], step: int) -> Cell | None:
    return next(
        (cells[index] for index in range(step - 1, -1, -1) if cells[index] is not None), None
    )


def errand_start(cells: list[Cell | None], gain: int) -> int | None:
    """The first state at rest inside an overworld room with the items and keys the state
    before `gain` held but a lower level: the errand could have come before whatever
    raised the level; None when nothing did."""
    before = _before(cells, gain)
    if before is None:
        return None
    for index in range(gain):
        cell = cells[index]
        if (cell is not None and not cell[0][0] and inside(cell) and cell[3] < before[3]
                and (cell[6], cell[7]) == (before[6], before[7])):  # fmt: skip
            return index
    return None


def errand_target(cells: list[Cell | None], gain: int) -> int | None:
    """The first state at rest in the dungeon the trajectory goes down into from the last
    state at rest of an overworld room with `gain`'s progress (level, items, keys): where
    the stairs put Link, on the pixel, whatever way he came; None where there is none."""
    here = cells[gain]
    assert here is not None
    last = None
    for index in range(gain, len(cells)):
        there = cells[index]
        if there is None:
            continue
        if not there[0][0] and (there[3], there[6], there[7]) == (here[3], here[6], here[7]):
            last = index
        elif last is not None and there[0][0]:
            return index
    return None


def crossings(cells: list[Cell | None]) -> set[tuple[Room, Room]]:
    """The pairs of neighbouring overworld rooms the trajectory stepped between, both ways."""
    rooms = [cell[0] for cell in cells if cell is not None]
    found = set()
    for here, there in zip(rooms, rooms[1:], strict=False):
        if here != there and neighbour_side(here, there) is not None:
            found |= {(here, there), (there, here)}
    return found


def room_route(known: set[tuple[Room, Room]], start: Room, goal: Room) -> list[Room] | None:
    """The fewest crossings from `start` to `goal` over `known` ones, the rooms after
    `start`; None when they do not join."""
    previous: dict[Room, Room | None] = {start: None}
    queue = deque([start])
    while queue:
        room = queue.popleft()
        if room == goal:
            route = [room]
            while (back := previous[route[-1]]) is not None:
                route.append(back)
            return route[::-1][1:]
        for here, there in sorted(known):
            if here == room and there not in previous:
                previous[there] = room
                queue.append(there)
    return None


def with_errands_first(actions: bytes, check: WinCheck) -> tuple[bytes, int]:
    """`actions` with each overworld item errand taken first where that still wins (from
    the start on); the checks it took."""
    current, checks = actions, 0
    if check.spent:
        return current, checks
    pixels = check.cells(current, tile=1)  # one replay: the tiles are the pixels binned
    cells = [None if c is None else (c[0], c[1] // LOOP_TILE, c[2] // LOOP_TILE, *c[3:])
             for c in pixels]  # fmt: skip
    known = crossings(cells)
    for gain in item_gains(cells):
        start, target = errand_start(cells, gain), errand_target(cells, gain)
        if start is None or target is None:
            continue
        gained, stairs, goal = cells[gain], _before(cells, target), pixels[target]
        assert gained is not None
        assert stairs is not None
        assert goal is not None
        for wait in WAITS:
            if check.spent:
                break
            prefix = current[: start + 1] + bytes([Action.NOOP]) * wait
            check.rebase(current[: start + 1])
            walk = errand_walk(check, prefix, known, gained, stairs[0], goal)
            if walk is None or len(prefix) + len(walk) > target + 1 - MIN_SAVED:
                continue
            checks += 1
            candidate = prefix + walk + current[target + 1 :]
            if check(candidate):
                return candidate, checks  # one errand a pass: the cells moved
    return current, checks


def errand_walk(
    check: WinCheck, prefix: bytes, known: set[tuple[Room, Room]], gained: Cell,
    stairs: Room, goal: Cell,
) -> bytes | None:  # fmt: skip
    """The path-finder's actions from the state after `prefix`: through `known` crossings
    to `gained`'s room, to its chest and open it, then through them to room `stairs` and
    down its stairs; None unless the first state at rest below them is `goal` (a
    one-pixel cell) within MAX_ERRAND_WALK steps (where the stairs' fade ends a frame off
    the trajectory's, Link stands a pixel off its grid of 4-pixel steps, and no wall of
    the dungeon's first room puts him back on it: seed 0's 527-step demo).
    """
    check.play(prefix)
    zelda = check.zelda
    walked = bytearray()
    errand_done = False
    for _ in range(MAX_ERRAND_WALK):
        raw = zelda.raw_state
        action: int | None = int(Action.NOOP)
        if raw.indoor and not restartable(raw):  # the stairs' fade: its last frames walk
            button = steer((raw.x, raw.y), (goal[1], goal[2]), "x")
            action = int(BUTTON_ACTIONS.get(button, Action.NOOP))
        elif restartable(raw):
            cell = cell_of(raw, 1)[0]
            if raw.indoor:  # the first state at rest below the stairs: the goal or no use
                return bytes(walked) if errand_done and cell == goal else None
            else:
                errand_done = errand_done or cell[6] & gained[6] == gained[6]
                room = stairs if errand_done else gained[0]
                if raw.room_key != room:
                    action = _toward_room(check, known, raw.room_key, room)
                else:
                    action = stairs_action(check) if errand_done else chest_action(check)
        if not take(check, walked, action):
            return None
    return None


def _toward_room(
    check: WinCheck, known: set[tuple[Room, Room]], here: Room, room: Room
) -> int | None:
    route = room_route(known, here, room)
    if not route:
        return None
    side = neighbour_side(here, route[0])
    return None if side is None else exit_action(check, side)


def chest_action(check: WinCheck) -> int | None:
    """The step toward the tile below the room's closed chest, then up against it, then
    A (the cartridge opens a chest Link faces from below); None without a chest or a
    path to it."""
    tiles, chests = _tiles_of(check, Metatile.CHEST)
    if not chests:
        return None
    raw = check.zelda.raw_state
    below = (chests[0][0], chests[0][1] + 1)
    tolerance = check.zelda.config.frame_skip // 2
    try:
        if (raw.x // 16, raw.y // 16) != below:
            button = next_step(tiles, (raw.x, raw.y), below, tolerance=tolerance)
        else:
            centre = (tile_center(below[0]), tile_center(below[1]))
            button = steer((raw.x, raw.y), centre, "y", tolerance=tolerance)
    except NoPathError:
        return None
    if button != Button.NONE:
        return int(BUTTON_ACTIONS[button])
    return int(Action.A) if raw.direction == FACING["up"] else int(Action.UP)


def stairs_action(check: WinCheck) -> int | None:
    """The step toward the room's stairs down, onto them; None without stairs or a path."""
    tiles, stairs = _tiles_of(check, Metatile.STAIRS_DOWN)
    if not stairs:
        return None
    raw = check.zelda.raw_state
    tolerance = check.zelda.config.frame_skip // 2
    try:
        button = next_step(tiles, (raw.x, raw.y), stairs[0], tolerance=tolerance)
    except NoPathError:
        return None
    return int(BUTTON_ACTIONS.get(button, Action.DOWN))


def _tiles_of(check: WinCheck, kind: Metatile) -> tuple[list[list[int]], list[tuple[int, int]]]:
    """The room's metatiles, and the cells of those of `kind`."""
    zelda = check.zelda
    tiles = RamReader(zelda.gameboy.memory, banked=zelda.gameboy.rom.cgb).room_objects()
    return tiles, [
        (x, y) for y, row in enumerate(tiles) for x, tile in enumerate(row) if tile == kind
    ]

"""Errands first: a winning trajectory's item errand taken before a detour that did not
need it, where the trajectory still wins that way.

A random walk does the route's errands in whatever order it stumbled on them, and cutting
loops and taking shortcuts cannot reorder them (no two states of the two crossings of a
room have the same progress). As a demonstration that costs twice over: the steps to walk
back, and two crossings of the same rooms that look the same to the policy but go
opposite ways.

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

from koholint.env.zelda import BUTTON_ACTIONS
from koholint.explore.archive import Cell
from koholint.explore.cells import LOOP_TILE, cell_of, restartable
from koholint.game.navigation import chest_step, neighbour_side, stairs_step, steer
from koholint.game.ram import RamReader
from koholint.schemas.env import Action
from koholint.teachers.shortcuts import (
    MIN_SAVED,
    WinCheck,
    exit_action,
    inside,
    take,
)

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
    the trajectory's, Link stands a pixel off its grid of 4-pixel steps, and a room
    without a wall to walk into cannot put him back on it).
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
    """The step that opens the room's closed chest (``game.navigation.chest_step``); None
    without a chest or a path to it."""
    zelda = check.zelda
    raw = zelda.raw_state
    tiles = RamReader(zelda.gameboy.memory, banked=zelda.gameboy.rom.cgb).room_objects()
    button = chest_step(tiles, (raw.x, raw.y), raw.direction, zelda.config.frame_skip // 2)
    return None if button is None else int(BUTTON_ACTIONS[button])


def stairs_action(check: WinCheck) -> int | None:
    """The step toward the room's stairs down, onto them; None without stairs or a path."""
    zelda = check.zelda
    raw = zelda.raw_state
    tiles = RamReader(zelda.gameboy.memory, banked=zelda.gameboy.rom.cgb).room_objects()
    button = stairs_step(tiles, (raw.x, raw.y), zelda.config.frame_skip // 2)
    return None if button is None else int(BUTTON_ACTIONS.get(button, Action.DOWN))

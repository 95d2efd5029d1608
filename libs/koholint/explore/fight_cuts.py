"""Clean fights in a winning trajectory: the scripted fighter's fight in place of the random
walk's, where the trajectory still wins with it.

Cutting loops and runs cannot shorten a fight: the enemies move on the game's RNG, so no
two states of a fight share a cell (its enemies left differ, or its tiles do). Seed 2's
808-step demonstration spent 350 steps in the key hall, where the fighter
(``koholint.explore.fights``) clears it in 21-65; each demonstration step costs phase 2
thousands of env steps to walk back over, and a long fight is also a poor one to clone.
``with_clean_fights`` lets the fighter clear the room from a state at rest with enemies in
it, take the key it shows and walk to the pixel of the latest state of the same visit with
none left and the same items and keys; and keeps the trajectory with the fight in place of
what lay between when it reaches that state's cell and still wins (the shortest such win
of a few starts). The pixel, not the tile: the demonstration's later steps are exact, and
one step (4 pixels) off, seed 2's last room missed the instrument. A state a step cannot
reach (a pixel off the fight end's 4-pixel grid) may be reached after a walk into a wall,
which sets the pixel a step cannot.
"""

from __future__ import annotations

from collections.abc import Iterator

from koholint.env.encoding import encode
from koholint.explore.archive import Cell
from koholint.explore.cells import LOOP_TILE, cell_of, restartable
from koholint.explore.fights import KEY_WAIT_STEPS, MAX_FIGHT_STEPS, fight_action, loot_action
from koholint.explore.shortcuts import MIN_SAVED, WinCheck, inside, take, toward
from koholint.schemas.env import Action

MAX_WALK_AFTER = 96
"""the most steps the walk from the fight's end to the kept state's tile may take"""
STEP_PIXELS = 4
"""how far Link walks in a step (1 pixel a frame, 4 frames a step)"""
BUMPS = (Action.LEFT, Action.UP, Action.RIGHT, Action.DOWN)
"""walked into a wall, one after another, where no goal lies on the fight's end's pixel grid
(seed 1's key hall: the fighter ends a pixel off the grid of every state after it)"""
BUMP_STEPS = 32
"""the most steps of one walk into a wall"""
TRIES_PER_FIGHT = 4
"""the starts tried for one fight, the shortest win kept (a fight that wins from one start
can lose from the next, what follows it playing on the RNG the new fight left; and a
longer fight kept first leaves too little for a shorter one to save)"""
TRY_EVERY = 16
"""steps between the starts tried for one fight"""


def _visit(cells: list[Cell | None], start: int) -> Iterator[tuple[int, Cell]]:
    """(step, cell) of the states at rest from `start` on, while Link stays in `start`'s
    room; nothing where `start` is not at rest."""
    here = cells[start]
    for index in range(start, len(cells)):
        there = cells[index]
        if there is None:
            continue
        if here is None or there[0] != here[0]:
            return
        yield index, there


def fight_targets(cells: list[Cell | None], start: int) -> list[int]:
    """The states at rest inside the room, more than MIN_SAVED steps after `start`, in the
    visit `start` is in, with no enemy left and `start`'s items, the last first; none where
    `start` is not at rest or has no enemy to fight. The cells are of one pixel."""
    here = cells[start]
    if here is None or not here[4]:
        return []
    found = [index for index, there in _visit(cells, start)
             if index > start + MIN_SAVED and not there[4] and there[6] == here[6]
             and _inside(there)]  # fmt: skip
    return found[::-1]


def _inside(cell: Cell) -> bool:
    return inside((cell[0], cell[1] // LOOP_TILE, cell[2] // LOOP_TILE, *cell[3:]))


def fight_starts(cells: list[Cell | None], start: int) -> list[int]:
    """The states to fight from, `start`'s first: at rest in `start`'s visit with an
    enemy left, TRY_EVERY steps apart, TRIES_PER_FIGHT at most."""
    found: list[int] = []
    for index, there in _visit(cells, start):
        if len(found) == TRIES_PER_FIGHT:
            break
        if there[4] and (not found or index - found[-1] >= TRY_EVERY):
            found.append(index)
    return found


def visit_end(cells: list[Cell | None], start: int) -> int:
    """The step after the last state at rest of `start`'s visit."""
    return max((index for index, _ in _visit(cells, start)), default=start) + 1


def with_clean_fights(actions: bytes, check: WinCheck) -> tuple[bytes, int]:
    """`actions` with the fighter's fights in place of the ones that still win with them
    (from the start on; the shortest of TRIES_PER_FIGHT starts); the checks it took."""
    current, checks, cursor = actions, 0, 0
    cells = check.cells(current, tile=1) if not check.spent else []
    while cursor < len(current) and not check.spent:
        if not fight_targets(cells, cursor):
            cursor += 1
            continue
        best = current
        for start in fight_starts(cells, cursor):
            if check.spent:
                break
            prefix = current[: start + 1]
            check.rebase(prefix)
            goals = {index: cells[index] for index in fight_targets(cells, start)}
            fought = fight_into(check, prefix, goals) if goals else None
            candidate = b"" if fought is None else prefix + fought[1] + current[fought[0] + 1 :]
            if fought is None or len(candidate) > min(len(best), len(current) - MIN_SAVED):
                continue
            checks += 1
            if check(candidate):
                best = candidate
        if best is not current:
            current, cells = best, check.cells(best, tile=1)
        cursor = visit_end(cells, cursor)
    return current, checks


def fight_into(
    check: WinCheck, prefix: bytes, goals: dict[int, Cell | None]
) -> tuple[int, bytes] | None:
    """The fighter's actions from the state after `prefix`: clear the room, take the key it
    shows, then walk to the pixel of the first of `goals` (step -> one-pixel cell, the
    last first) with its keys that a walk of 4-pixel steps can reach; that goal's step and
    the actions, or None unless the walk ends in its cell (a death, another room, no goal
    a step can reach, too long)."""
    check.play(prefix)
    zelda = check.zelda
    room = zelda.raw_state.room_key
    fought, waited = bytearray(), 0
    chosen: tuple[int, Cell] | None = None
    bumps = [[int(action)] * BUMP_STEPS for action in BUMPS]
    previous: Cell | None = None
    for _ in range(MAX_FIGHT_STEPS + MAX_WALK_AFTER):
        raw = zelda.raw_state
        if raw.room_key != room:
            return None
        action: int | None = int(Action.NOOP)
        if restartable(raw):
            cell = cell_of(raw, 1)[0]
            if chosen is not None and cell == chosen[1]:
                return chosen[0], bytes(fought)
            action = fight_action(encode(raw)) if chosen is None else None
            action = loot_action(zelda) if action is None and chosen is None else action
            if action is None and waited < KEY_WAIT_STEPS:
                waited += 1  # the last enemy's puff: a key appears after it
                action = int(Action.NOOP)
            elif action is None:
                chosen = chosen or _reachable(goals, cell)
                if chosen is None and bumps:  # a wall sets the pixel a step cannot
                    action = _bump(bumps, cell, previous)
                elif chosen is None or _near(cell, chosen[1]):
                    return None  # no goal on this pixel grid; or a step off it after all
                else:
                    action = toward(check, (chosen[1][1], chosen[1][2]), tolerance=0)
            previous = cell
        if not take(check, fought, action):
            return None
    return None


def _reachable(goals: dict[int, Cell | None], cell: Cell) -> tuple[int, Cell] | None:
    """The first goal with `cell`'s progress (level, enemies, block, items, keys) on
    `cell`'s grid of 4-pixel steps."""
    for index, goal in goals.items():
        if goal is not None and goal[3:] == cell[3:] and not _off_grid(cell, goal):
            return index, goal
    return None


def _bump(bumps: list[list[int]], cell: Cell, previous: Cell | None) -> int:
    """The next step of the walks into the walls: each goes on until Link stops moving."""
    if previous is not None and previous[1:3] == cell[1:3] and len(bumps[0]) < BUMP_STEPS:
        bumps.pop(0)  # against the wall: this bump is done
    if not bumps:
        return int(Action.NOOP)
    action = bumps[0].pop()
    if not bumps[0]:
        bumps.pop(0)
    return action


def _off_grid(cell: Cell, goal: Cell) -> bool:
    return bool((goal[1] - cell[1]) % STEP_PIXELS or (goal[2] - cell[2]) % STEP_PIXELS)


def _near(cell: Cell, goal: Cell) -> bool:
    """Within a step's pixels of `goal` on both axes."""
    return bool(abs(cell[1] - goal[1]) < STEP_PIXELS and abs(cell[2] - goal[2]) < STEP_PIXELS)

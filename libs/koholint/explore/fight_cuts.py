"""Clean fights in a winning trajectory: the scripted fighter's fight in place of the random
walk's, where the trajectory still wins with it.

Cutting loops and runs cannot shorten a fight: the enemies move on the game's RNG, so no
two states of a fight share a cell (its enemies left differ, or its tiles do). Seed 2's
808-step demonstration spent 350 steps in the key hall, where the fighter
(``koholint.explore.fights``) clears it in 21-65; each demonstration step costs phase 2
thousands of env steps to walk back over, and a long fight is also a poor one to clone.
``with_clean_fights`` looks, from a state at rest with enemies in the room, for the last
later state of the same visit with none left and the same items; lets the fighter clear
the room, take the key it shows and walk to that state's pixel; and keeps the trajectory
with the fight in place of what lay between when it reaches that state's cell and still
wins. The pixel, not the tile: the demonstration's later steps are exact, and one step (4
pixels) off, seed 2's last room missed the instrument.
"""

from __future__ import annotations

from koholint.env.encoding import encode
from koholint.explore.archive import Cell
from koholint.explore.cells import LOOP_TILE, cell_of, restartable
from koholint.explore.fights import KEY_WAIT_STEPS, MAX_FIGHT_STEPS, fight_action, loot_action
from koholint.explore.shortcuts import MIN_SAVED, WinCheck, inside, toward
from koholint.schemas.env import Action

MAX_WALK_AFTER = 96
"""the most steps the walk from the fight's end to the kept state's tile may take"""
STEP_PIXELS = 4
"""how far Link walks in a step (1 pixel a frame, 4 frames a step)"""
TRIES_PER_FIGHT = 4
"""the most starts tried for one fight (a fight that wins from one start can lose from the
next: what follows it plays on the RNG the new fight left)"""
TRY_EVERY = 16
"""steps between the starts tried for one fight"""


def fight_target(cells: list[Cell | None], start: int) -> int | None:
    """The last state at rest inside the room, more than MIN_SAVED steps after `start`, in
    the visit `start` is in, with no enemy left and `start`'s items; None where `start` is
    not at rest or has no enemy to fight. The cells are of one pixel."""
    here = cells[start]
    if here is None or not here[4]:
        return None
    found = None
    for index in range(start + 1, len(cells)):
        there = cells[index]
        if there is None:
            continue
        if there[0] != here[0]:
            break  # the visit ended
        if index > start + MIN_SAVED and not there[4] and there[6] == here[6] and _inside(there):
            found = index
    return found


def _inside(cell: Cell) -> bool:
    return inside((cell[0], cell[1] // LOOP_TILE, cell[2] // LOOP_TILE, *cell[3:]))


def with_clean_fights(actions: bytes, check: WinCheck) -> tuple[bytes, int]:
    """`actions` with the fighter's fights in place of the ones that still win with them
    (from the start on); the checks it took."""
    current, checks, cursor = actions, 0, 0
    cells = check.cells(current, tile=1) if not check.spent else []
    tries: dict[int, tuple[int, int]] = {}
    """fight (its target step) -> (starts tried, the last one)"""
    while cursor < len(current) and not check.spent:
        end = fight_target(cells, cursor)
        tried, last = tries.get(end, (0, -TRY_EVERY)) if end is not None else (0, 0)
        if end is not None and tried < TRIES_PER_FIGHT and cursor - last >= TRY_EVERY:
            tries[end] = (tried + 1, cursor)
            goal = cells[end]
            assert goal is not None  # fight_target picks states at rest
            prefix = current[: cursor + 1]
            check.rebase(prefix)
            fight = fight_into(check, prefix, goal)
            if fight is not None and len(fight) <= end - cursor - MIN_SAVED:
                candidate = prefix + fight + current[end + 1 :]
                checks += 1
                if check(candidate):
                    current, cells, tries = candidate, check.cells(candidate, tile=1), {}
        cursor += 1
    return current, checks


def fight_into(check: WinCheck, prefix: bytes, goal: Cell) -> bytes | None:
    """The fighter's actions from the state after `prefix`: clear the room, take the key it
    shows, then walk to `goal`'s pixel; None unless that ends in `goal`'s one-pixel cell
    (a death, another room, other keys or items, a pixel a step cannot reach, too long)."""
    check.play(prefix)
    zelda = check.zelda
    target = (goal[1], goal[2])
    fought, waited = bytearray(), 0
    for _ in range(MAX_FIGHT_STEPS + MAX_WALK_AFTER):
        raw = zelda.raw_state
        if raw.room_key != goal[0]:
            return None
        action: int | None = int(Action.NOOP)
        if restartable(raw):
            cell = cell_of(raw, 1)[0]
            if cell == goal:
                return bytes(fought)
            action = fight_action(encode(raw))
            action = loot_action(zelda) if action is None else action
            if action is None and waited < KEY_WAIT_STEPS:
                waited += 1  # the last enemy's puff: a key appears after it
                action = int(Action.NOOP)
            elif action is None:
                if _near(cell, goal):
                    return None  # other keys or items, or pixels a step of 4 cannot close
                action = toward(check, target, tolerance=0)
        if action is None:
            return None
        fought.append(action)
        check.steps += 1
        _, _, terminated, _, _ = check.env.step(action)
        if terminated:
            return None
    return None


def _near(cell: Cell, goal: Cell) -> bool:
    """Within a step's pixels of `goal` on both axes."""
    return bool(abs(cell[1] - goal[1]) < STEP_PIXELS and abs(cell[2] - goal[2]) < STEP_PIXELS)

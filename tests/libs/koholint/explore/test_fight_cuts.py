"""Clean fights: the scripted fighter's fight in place of the random walk's (cells of one
pixel)."""

from __future__ import annotations

from pathlib import Path

from koholint.explore.fight_cuts import fight_targets
from koholint.explore.shortcuts import MIN_SAVED

SEED2_DEMO = (Path(__file__).parents[4] / "benchmarks" / "results" / "win" / "walks-2026-11-28"
              / "seed2-808.actions")  # fmt: skip
SEED1_DEMO = (Path(__file__).parents[4] / "benchmarks" / "results" / "win" / "fights-2026-11-28"
              / "seed1-453.actions")  # fmt: skip
KEY_HALL = (1, 0, 0x08)


def cell(room=KEY_HALL, x: int = 80, y: int = 64, enemies: int = 3, items: int = 1, keys: int = 0):
    return (room, x, y, 5, enemies, 0xFF, items, keys)


def test_the_targets_are_the_states_of_the_visit_with_the_room_cleared_the_last_first():
    cells = (
        [cell()]
        + [cell(enemies=2)] * 20
        + [None] * 5
        + [cell(enemies=0)] * 20  # 26-45
        + [cell(enemies=0, keys=1, x=90)] * 10  # 46-55: the key taken, the fight's end too
        + [cell(enemies=0, y=120)]  # on the room's bottom edge: not a state to walk to
        + [cell(room=(1, 0, 0x13), enemies=0)] * 10
        + [cell(enemies=0)] * 40  # a later visit: not this fight's
    )
    assert fight_targets(cells, 0) == list(range(55, MIN_SAVED, -1))
    assert fight_targets(cells, 30) == []  # no enemy left: no fight to cut
    assert fight_targets([None, *cells], 0) == []  # not at rest: no state to fight from
    assert fight_targets(cells[:30] + [cell(enemies=0, items=3)] * 30, 0) == []  # other items
    assert fight_targets([cell()] * MIN_SAVED + [cell(enemies=0)], 0) == []  # too little to save


def test_seed_2s_key_hall_fight_becomes_the_fighters():
    """Real PyBoy on seed 2's 808-step demo, 350 steps of which are in the key hall: the
    fighter's fight in their place still wins and is at least 150 steps shorter."""
    from koholint.explore.fight_cuts import with_clean_fights
    from koholint.explore.shorten import winner

    actions = SEED2_DEMO.read_bytes()
    check = winner()
    shorter, checks = with_clean_fights(actions, check)
    assert checks >= 1
    assert len(shorter) <= len(actions) - 150
    assert check.full(shorter)
    in_hall = [c for c in check.cells(shorter) if c is not None and c[0] == KEY_HALL]
    assert any(c[7] == 1 for c in in_hall)  # the key is still taken there


def test_seed_1s_key_hall_fight_needs_a_wall_to_land_on_the_demos_pixels():
    """Real PyBoy on seed 1's 453-step demo: the fighter ends its key hall fight a pixel off
    the 4-pixel grid of every later state there; a walk into a wall realigns it, and the
    fighter's fight in place of the demo's 177 steps still wins."""
    from koholint.explore.fight_cuts import with_clean_fights
    from koholint.explore.shorten import winner

    actions = SEED1_DEMO.read_bytes()
    check = winner()
    shorter, checks = with_clean_fights(actions, check)
    assert checks >= 1
    assert len(shorter) <= len(actions) - MIN_SAVED
    assert check.full(shorter)

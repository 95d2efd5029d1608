"""Errands first: the sword's chest before the puzzle's detour, by the path-finder, down to
the dungeon's stairs."""

from __future__ import annotations

from pathlib import Path

from koholint.teachers.errands import (
    crossings,
    errand_start,
    errand_target,
    item_gains,
    room_route,
)

WIN = Path(__file__).parents[4] / "benchmarks" / "results" / "win"
SEED2_DEMO = WIN / "walks-2026-11-28" / "seed2-808.actions"
SEED0_DEMO = WIN / "walks-2026-11-28" / "seed0-527.actions"
START, NORTH, PUZZLE, GLADE, STAIRS = (
    (0, 0, 0x21),
    (0, 0, 0x11),
    (0, 0, 0x01),
    (0, 0, 0x20),
    (0, 0, 0x02),
)
HALL = (1, 0, 0x10)
SWORD = 2


def cell(room=START, x: int = 9, y: int = 8, level: int = 0, items: int = 0, enemies: int = 0):
    return (room, x, y, level, enemies, 0xFF, items, 0)


def puzzle_first() -> list:
    """Seed 2's route in cells of 8 pixels: up to the puzzle, down to the sword, up again
    and down the stairs."""
    return (
        [cell()] * 10                                                 # 0-9: the first room
        + [cell(NORTH)] * 10                                          # 10-19
        + [None] * 2 + [cell(PUZZLE, level=1)] * 10                   # 22-31: puzzle solved
        + [cell(NORTH, level=1)] * 10 + [cell(START, level=1)] * 10   # 32-51
        + [cell(GLADE, level=1)] * 5                                  # 52-56
        + [cell(GLADE, level=2, items=SWORD)] * 5                     # 57-61: the chest
        + [cell(START, level=2, items=SWORD)] * 10                    # 62-71
        + [cell(NORTH, level=2, items=SWORD)] * 10                    # 72-81
        + [cell(PUZZLE, level=2, items=SWORD)] * 10                   # 82-91
        + [cell(STAIRS, level=2, items=SWORD)] * 10                   # 92-101
        + [None] * 3                                                  # 102-104: the fade
        + [cell(HALL, level=2, items=SWORD)] * 5                      # 105-109
        + [cell(HALL, level=2, items=SWORD, enemies=2)] * 3           # 110-112
    )  # fmt: skip


def test_the_errand_starts_before_the_detour_and_ends_where_the_stairs_put_link():
    cells = puzzle_first()
    assert item_gains(cells) == [57]
    assert errand_start(cells, 57) == 0  # no sword, and before the puzzle raised the level
    assert errand_target(cells, 57) == 105  # the first state at rest below the stairs


def test_no_errand_to_move_where_nothing_came_before_it():
    sword_first = [cell()] * 10 + [cell(GLADE)] * 5 + [cell(GLADE, level=1, items=SWORD)] * 5
    assert item_gains(sword_first) == [15]
    assert errand_start(sword_first, 15) is None  # the level was the same all along
    assert errand_target(sword_first, 15) is None  # no stairs after it
    assert item_gains([cell(HALL), cell(HALL, items=SWORD)]) == []  # indoors: not an errand
    assert item_gains([None, None]) == []


def test_the_rooms_are_routed_over_the_crossings_the_trajectory_made():
    known = crossings(puzzle_first())
    assert (START, GLADE) in known
    assert (GLADE, START) in known
    assert (STAIRS, HALL) not in known  # stairs are no overworld crossing
    assert room_route(known, START, GLADE) == [GLADE]
    assert room_route(known, GLADE, STAIRS) == [START, NORTH, PUZZLE, STAIRS]
    assert room_route(known, GLADE, GLADE) == []
    assert room_route(known, GLADE, (0, 0, 0x30)) is None


def test_the_sword_comes_before_the_puzzle_and_seed_2s_demo_still_wins():
    """Real PyBoy on seed 2's 808-step demo, which solves the puzzle before the sword: the
    path-finder's errand in its place lands where the demo's stairs put Link and wins,
    the sword taken before the puzzle is solved, the dungeon reached 150 steps sooner."""
    from koholint.teachers.errands import with_errands_first
    from koholint.teachers.shorten import winner

    actions = SEED2_DEMO.read_bytes()
    check = winner()
    shorter, checks = with_errands_first(actions, check)
    assert checks >= 1
    assert len(shorter) <= len(actions) - 150
    assert check.full(shorter)
    cells = [c for c in check.cells(shorter) if c is not None]
    first_level = next(c for c in cells if c[3] >= 1)
    assert first_level[6] & SWORD
    assert first_level[0] == GLADE
    assert next(i for i, c in enumerate(check.cells(shorter)) if c and c[0][0]) <= 200


def test_a_walk_that_lands_a_pixel_off_below_the_stairs_is_not_kept():
    """Real PyBoy on seed 0's 527-step demo: the errand's stairs end their fade a frame off
    the demo's, one pixel from where the demo stands there, and the demo stays as it was."""
    from koholint.teachers.errands import with_errands_first
    from koholint.teachers.shorten import winner

    actions = SEED0_DEMO.read_bytes()
    assert with_errands_first(actions, winner()) == (actions, 0)

"""Shortcuts: a path-finder's walk into a neighbouring room in place of a detour."""

from __future__ import annotations

from pathlib import Path

from koholint.teachers.shortcuts import MIN_SAVED, shortcut_target

SEED2_DEMO = (Path(__file__).parents[4] / "benchmarks" / "results" / "win" / "levers-2026-11-27d"
              / "s2-explore" / "win-short.actions")  # fmt: skip


def cell(room: int, x: int = 8, y: int = 8, level: int = 1, items: int = 0):
    return ((0, 0, room), x, y, level, 0, 0xFF, items, 0)


def test_the_target_is_the_last_state_inside_a_neighbour_with_the_same_progress():
    cells = (
        [cell(1)]
        + [cell(0x22)] * 50
        + [cell(0x11)] * 10
        + [cell(0x11, y=15)]
        + [cell(0x11, items=1)]
    )
    # 60: the last state in 0x11 clear of its edges with the same progress (61 is on the
    # bottom edge's tile, 62 holds the sword)
    assert shortcut_target(cells, 0) == (60, "down")
    assert shortcut_target(cells, 40) is None  # 0x11 is 11-20 steps on: too little to save
    assert shortcut_target([None, *cells], 0) is None  # not at rest: no state to walk from
    assert MIN_SAVED == 32


def test_a_different_level_is_no_shortcut():
    cells = [cell(1, level=1)] + [cell(0x22)] * 50 + [cell(0x11, level=2)] * 10
    assert shortcut_target(cells, 0) is None


def test_seed_2s_detour_through_the_west_rooms_becomes_one_step_down():
    """Real PyBoy on seed 2's committed demo: after the puzzle it goes left, down and right
    (0x01 -> 0x00 -> 0x10 -> 0x11); the shortcut steps down into 0x11 and still wins."""
    from koholint.teachers.shortcuts import with_shortcuts
    from koholint.teachers.shorten import winner

    actions = SEED2_DEMO.read_bytes()
    check = winner()
    shorter, checks = with_shortcuts(actions, check)
    assert checks >= 1
    assert len(shorter) <= len(actions) - 100  # 984 -> 827 when written
    assert check.full(shorter)
    rooms = {c[0] for c in check.cells(shorter) if c is not None}
    assert (0, 0, 0x10) not in rooms
    assert (0, 0, 0x00) not in rooms

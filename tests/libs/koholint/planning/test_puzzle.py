"""The block-puzzle search on the cartridge's puzzle room and crafted rooms."""

from __future__ import annotations

from koholint.planning.puzzle import legal_pushes, push_problem, safe_pushes, solve

from .test_switch import PUZZLE


def test_solves_the_cartridge_room_in_five_pushes() -> None:
    assert solve(PUZZLE, (4, 7)) == ["right", "right", "down", "down", "down"]


def test_legal_pushes_respect_walls_trees_and_reach() -> None:
    assert sorted(legal_pushes(PUZZLE, (4, 7), (3, 2))) == ["left", "right"]
    assert "tree" in (push_problem(PUZZLE, (4, 7), (3, 2), "down") or "")
    assert "cannot reach (3, 3)" in (push_problem(PUZZLE, (4, 7), (3, 2), "up") or "")
    high = [list(row) for row in PUZZLE]
    high[2][3], high[1][3] = 0, 5
    assert "edge" in (push_problem(tuple(tuple(r) for r in high), (4, 7), (3, 1), "up") or "")


def test_a_cornered_block_has_no_solution() -> None:
    cornered = [list(row) for row in PUZZLE]
    cornered[2][3] = 0
    cornered[1][1] = 5
    assert solve(tuple(tuple(r) for r in cornered), (4, 7)) is None


def test_link_must_reach_the_pushing_side() -> None:
    walled = [list(row) for row in PUZZLE]
    for y in range(1, 7):
        walled[y][2] = 1  # a wall column cuts off the block's left side
    room = tuple(tuple(r) for r in walled)
    assert "cannot reach" in (push_problem(room, (6, 6), (3, 2), "right") or "")


def test_safe_pushes_exclude_dead_ends() -> None:
    edge = [list(row) for row in PUZZLE]
    edge[2][3], edge[2][7] = 0, 5  # the block at (7, 2): one more push right pins it to the wall
    room = tuple(tuple(r) for r in edge)
    assert "right" in legal_pushes(room, (4, 7), (7, 2))
    assert "right" not in safe_pushes(room, (4, 7), (7, 2))
    assert "left" in safe_pushes(room, (4, 7), (7, 2))

"""Shortening a winning trajectory: runs the win did not need are dropped, the rest still wins."""

from __future__ import annotations

from pathlib import Path

import pytest

from koholint.env.zelda import Action
from koholint.teachers.shorten import (
    DRIFT_STEPS,
    MIN_LOOP,
    WinCheck,
    run_length,
    shorten,
    winner,
    without_loops,
)

WIN = Path(__file__).parents[4] / "benchmarks" / "results" / "win"


def needs_three_rights_then_a(actions: bytes) -> bool:
    """A stand-in game: it is won by the last action A (5) after at least three RIGHTs (4)."""
    return actions.endswith(b"\x05") and actions.count(4) >= 3


def test_runs_that_did_not_matter_are_dropped():
    actions = bytes([5] * 6 + [4] * 8 + [1] * 3 + [5] * 4)
    result = shorten(actions, needs_three_rights_then_a)
    assert result.actions == bytes([4] * 4 + [5] * 2)  # the spam and UPs gone, runs halved
    assert needs_three_rights_then_a(result.actions)
    assert result.replays > 1


class GridWalk(WinCheck):
    """A stand-in game with states, for the order of the cuts: Link walks a grid from (0, 0)
    (LEFT, RIGHT, UP, DOWN move one cell), and A (5) wins at the door, x == 0."""

    MOVES = {Action.LEFT: (-1, 0), Action.RIGHT: (1, 0), Action.UP: (0, -1), Action.DOWN: (0, 1)}

    def __init__(self) -> None:  # no emulator: the cells are the walk's own
        self.steps, self.budget = 0, None

    def __call__(self, actions: bytes, track: object = None) -> bool:
        self.steps += len(actions)
        self.last = actions
        return actions.endswith(b"\x05") and self.cells(actions)[-1][1] == 0

    def track_after_win(self, before: object) -> list:
        return self.cells(self.last)

    def full(self, actions: bytes) -> bool:
        return self(actions)

    def rebase(self, prefix: bytes) -> None:
        pass

    def cells(self, actions: bytes, tile: int = 8) -> list:
        """Cells as the shortening's: (room, x, y, level, enemies, block, items, keys)."""
        x, y, cells = 0, 0, []
        for action in actions:
            dx, dy = self.MOVES.get(Action(action), (0, 0))
            x, y = x + dx, y + dy
            cells.append(((0, 0, 0), x, y, 0, 0, 0xFF, 0, 0))
        return cells


def test_a_detour_whose_ends_meet_only_once_a_run_is_dropped_is_cut_too():
    out_and_back = bytes([Action.LEFT] * 10 + [Action.DOWN] + [Action.RIGHT] * 10 + [Action.A])
    check = GridWalk()
    assert without_loops(out_and_back, check)[0] == out_and_back  # the ends a row apart
    result = shorten(out_and_back, check)
    # the DOWN was not needed; without it the walk out and back is a loop, cut to one step each
    assert result.actions == bytes([Action.LEFT, Action.RIGHT, Action.A])


def test_a_trajectory_that_does_not_win_is_refused():
    with pytest.raises(ValueError, match="does not win"):
        shorten(bytes([4, 4]), needs_three_rights_then_a)


def test_run_length_counts_from_the_start_given():
    assert run_length(bytes([1, 1, 2, 2, 2, 1]), 2) == 3
    assert run_length(bytes([1]), 0) == 1


@pytest.mark.slow
@pytest.mark.parametrize(
    "name", ["explore-seed0-short.actions", "explore-seed0-health-short.actions"]
)
def test_the_committed_shortened_wins_replay_to_the_credits(name: str):
    actions = (WIN / name).read_bytes()
    wins = winner()
    assert wins(actions)
    assert not wins(actions[:-1])  # and not a step earlier


class FromTheStart(WinCheck):
    """A WinCheck that never saves a base: every check replays from the start."""

    def rebase(self, prefix: bytes) -> None:
        pass


@pytest.mark.slow
def test_checks_from_the_kept_prefix_shorten_as_full_replays_do_in_fewer_steps():
    actions = (WIN / "explore-seed0.actions").read_bytes()
    full = FromTheStart("start_of_play", 4, True)
    expected = shorten(actions, full)
    prefixed = winner()
    result = shorten(actions, prefixed)
    assert result == expected
    assert prefixed.steps < 0.7 * full.steps
    assert full.full(result.actions)


@pytest.mark.slow
def test_a_detour_that_comes_back_is_cut_and_the_rest_still_wins():
    win = (WIN / "explore-seed0-short.actions").read_bytes()
    detour = bytes([Action.LEFT] * 12 + [Action.RIGHT] * 12)  # out along the village, back
    check = winner()
    assert check(detour + win)  # the detour changes nothing the win needs
    result, checks = without_loops(detour + win, check)
    assert len(result) <= len(win)  # the detour and the win's own loops are gone
    assert checks >= 1
    assert check.full(result)
    before, after = revisits(check.cells(detour + win)), revisits(check.cells(result))
    assert after < before  # the loops it could cut are gone (the rest did not win without)


def revisits(cells: list) -> int:
    """States whose cell the trajectory is in again MIN_LOOP or more steps later."""
    return sum(cell is not None and cell in cells[i + MIN_LOOP :] for i, cell in enumerate(cells))


def test_a_budget_stops_the_shortening_with_a_win_in_hand():
    actions = (WIN / "explore-seed0.actions").read_bytes()
    check = winner(budget=20_000)
    result = shorten(actions, check)
    assert 20_000 <= check.steps < 20_000 + 2 * len(actions) + len(actions)  # + the last check
    assert len(result.actions) < len(actions)  # what it cut before the budget ran out
    assert check.full(result.actions)


def test_a_check_replays_from_its_base_only_what_begins_with_it():
    wins = winner()
    wins.rebase(bytes([4] * 40))  # right from start_of_play: at rest, so a base is saved
    assert not wins(bytes([4] * 40 + [1] * 5))
    rebased = wins.steps
    assert rebased - 40 <= 5 + 24  # the base is at most BASE_EVERY + 8 short of the prefix
    assert not wins(bytes([1] * 5))  # another beginning: from the start
    assert wins.steps == rebased + 5
    with pytest.raises(ValueError, match="reaches the credits"):
        winner().rebase((WIN / "explore-seed0-short.actions").read_bytes())


def test_a_base_the_prefix_no_longer_begins_with_moves_onto_the_new_prefix():
    wins = winner()
    wins.rebase(bytes([Action.RIGHT] * 40))
    wins.rebase(bytes([Action.LEFT] * 40))  # a pass begun again from the start, after a cut
    before = wins.steps
    assert not wins(bytes([Action.LEFT] * 40 + [Action.UP] * 5))
    assert wins.steps - before <= 5 + 24  # from a base on the new prefix, not from the start


@pytest.mark.slow
def test_a_candidate_that_leaves_the_track_is_refused_where_it_leaves_it():
    win = (WIN / "explore-seed0-short.actions").read_bytes()
    check = winner()
    track = check.cells(win)
    lost = bytes([Action.LEFT] * 80) + win[80:]  # walked off the win's path at the start
    before = check.steps
    assert not check(lost, track)
    assert check.steps - before < 80 + 4 * DRIFT_STEPS  # not played to its end
    assert check(win, track)  # the win itself stays on its own track


@pytest.mark.slow
def test_the_track_after_a_win_is_the_cells_a_replay_reads():
    win = (WIN / "explore-seed0-short.actions").read_bytes()
    check = winner()
    check.rebase(win[:200])  # a check from a base: the prefix's cells come from `before`
    track = check.cells(win)
    assert check(win, track)
    assert check.track_after_win(track) == track


def test_a_win_check_counts_the_steps_its_replays_took():
    wins = winner()
    assert not wins(bytes([4] * 10))  # ten steps right from start_of_play: no credits
    assert not wins(bytes([1] * 5))
    assert wins.steps == 15  # what shortening adds to a run's env steps

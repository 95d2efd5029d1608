"""Shortening a winning trajectory: drop what did not matter, keep what still wins.

Phase 1's random runs repeat each action with p = 0.9, so its wins hold long runs of one
action that change nothing (A pressed against a wall, sword swings at empty air). As a
demonstration they hurt: the policy imitates them where it stands still, and there it
stays. ``shorten`` walks the runs of identical actions from the start and drops each one —
or, failing that, its second half — when the trajectory without it still wins when
replayed, deterministically, in the env phase 1 explored. Before that, and again after it,
it cuts the loops: from a state to the last later state in the same cell (room, 8-pixel
tile, progress, what Link holds, enemies alive, the block), when the trajectory without the
detour still wins. Dropping single runs cannot remove a detour (steps one way, then as
many back: without either half Link ends elsewhere), and a detour is worse than a pause as
a demonstration: a policy that sees the same place on the way out and on the way back
cannot both go on and turn, and stays. Between the two, the path-finder's passes replace
detours through other rooms (``shortcuts``) and take item errands first (``errands``).

A candidate differs from the trajectory kept so far only from the cursor on, so the check
replays it from a state saved on the kept prefix (at rest, as phase 1 saves its cells: a
restored state plays on exactly as the replay from the start) instead of from the start:
about half the env steps of full replays, the same result. A check also knows where the
kept trajectory was after each action (its cells): a candidate whose Link leaves that track
(another room or progress, or more than DRIFT_TILES away) for DRIFT_STEPS states at rest is
refused there, not at its end; a cut refused that way is only a cut not taken, and on worlds
of thousands of steps it is what keeps the checks from costing the square of the length.
The result is replayed once in full at the end, so it is a winning trajectory by
construction.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from koholint.env.zelda import ZeldaEnv
from koholint.explore.archive import Cell
from koholint.explore.cells import LOOP_TILE, cell_of, restartable
from koholint.explore.runner import exploration_env, switch_at_rest
from koholint.teachers.errands import with_errands_first
from koholint.teachers.shortcuts import with_shortcuts

BASE_EVERY = 16
"""the check's base state moves forward in steps of at least this many actions (a save
costs ~25 ms, about 70 env steps)"""
MIN_LOOP = 8
"""the fewest steps a loop must have to be tried"""
DRIFT_TILES = 2
"""how far (in LOOP_TILE tiles, each way) a candidate's Link may stray from the kept track"""
DRIFT_STEPS = 24
"""for how many states at rest in a row before the candidate is refused (a walk against a
wall can bring it back)"""

Track = Sequence["Cell | None"]
"""the cell after each action of a trajectory (None where not at rest): ``WinCheck.cells``"""


@dataclass(frozen=True)
class Shortened:
    actions: bytes
    replays: int
    """checks it took (each a replay from the start or from a state on the kept prefix)"""


class WinCheck:
    """Whether actions from a start reach the credits at their last action; `steps` counts
    the env steps its replays took (a run's budget includes them).

    ``rebase(prefix)`` saves a state after `prefix` (or the last state at rest before it):
    later checks of actions that begin with that prefix replay only what follows it."""

    def __init__(self, start_state: str | None, frame_skip: int, planner: bool,
                 budget: int | None = None) -> None:  # fmt: skip
        self.env = exploration_env(start_state=start_state, frame_skip=frame_skip,
                                   planner=planner, max_episode_steps=10_000_000)  # fmt: skip
        self.zelda: ZeldaEnv = self.env.unwrapped  # type: ignore[assignment]
        self.planner = planner
        self.steps = 0
        self.budget = budget
        """env steps after which shortening stops trying (None: no limit)"""
        self._base = b""
        self._base_state: bytes | None = None
        self._trail: list[Cell | None] = []
        self._trail_from = 0

    def __call__(self, actions: bytes, track: Track | None = None) -> bool:
        """Whether `actions` win; with `track` (the cell expected after each action), refused
        once Link has been off it for DRIFT_STEPS states at rest (``near``)."""
        skip = self._reset_for(actions)
        return self._plays_to_win(actions, skip, track)

    def track_after_win(self, before: Track) -> list[Cell | None]:
        """The cells of the trajectory the last check won with, without replaying it: its
        prefix's from `before` (the track it was checked against), the rest recorded."""
        return [*before[: self._trail_from], *self._trail]

    @property
    def spent(self) -> bool:
        return self.budget is not None and self.steps >= self.budget

    def full(self, actions: bytes) -> bool:
        """The check replayed from the start, whatever the base."""
        self.env.reset(seed=0)
        return self._plays_to_win(actions, 0, None)

    def cells(self, actions: bytes, tile: int = LOOP_TILE) -> list[Cell | None]:
        """The cell (of `tile` pixels) after each action of a replay from the start (None
        where not at rest: a loop is cut only between states a restored state would play on
        from)."""
        self.env.reset(seed=0)
        cells: list[Cell | None] = []
        for action in actions:
            self.steps += 1
            self.env.step(action)
            cells.append(cell_of(self.zelda.raw_state, tile)[0] if self._at_rest() else None)
        return cells

    def play(self, prefix: bytes) -> None:
        """Reset and replay `prefix` (from the base state where it begins with the base)."""
        skip = self._reset_for(prefix)
        for action in prefix[skip:]:
            self.steps += 1
            self.env.step(action)

    def rebase(self, prefix: bytes) -> None:
        """Move the base state forward along `prefix`; from the start where `prefix` does not
        begin with the base (a pass that begins again at the start, after cuts behind it)."""
        if not prefix.startswith(self._base):
            self._base, self._base_state = b"", None
        if len(prefix) - len(self._base) < BASE_EVERY:
            return
        self._reset_for(prefix)
        for index in range(len(self._base), len(prefix)):
            self.steps += 1
            _, _, terminated, _, _ = self.env.step(prefix[index])
            if terminated:
                raise ValueError("the prefix reaches the credits: nothing follows it to check")
            if index + 1 - len(self._base) >= BASE_EVERY and self._at_rest():
                self._base, self._base_state = prefix[: index + 1], self.zelda.gameboy.save_state()

    def _reset_for(self, actions: bytes) -> int:
        """Reset to the base state when `actions` begin with the base; the actions skipped."""
        if self._base_state is not None and actions.startswith(self._base):
            self.env.reset(options={"start_state": self._base_state})
            return len(self._base)
        self.env.reset(seed=0)
        return 0

    def _plays_to_win(self, actions: bytes, skip: int, track: Track | None) -> bool:
        """Whether `actions` (from `skip`, the state already there) win; with `track`, the
        cells along the way are recorded (``track_after_win``) and followed."""
        self._trail, self._trail_from, strays = [], skip, 0
        for index in range(skip, len(actions)):
            self.steps += 1
            _, _, terminated, _, _ = self.env.step(actions[index])
            if track is None:  # a plain check: no cells to read
                if terminated:
                    return index + 1 == len(actions)
                continue
            here = cell_of(self.zelda.raw_state, LOOP_TILE)[0] if self._at_rest() else None
            self._trail.append(here)
            if terminated:
                return index + 1 == len(actions)
            want = track[index]
            if here is not None and want is not None:
                strays = 0 if near(here, want) else strays + 1
                if strays >= DRIFT_STEPS:
                    return False
        return False

    def _at_rest(self) -> bool:
        raw = self.zelda.raw_state
        if not restartable(raw):
            return False
        return not self.planner or switch_at_rest(self.zelda.gameboy.memory, raw)


def near(cell: Cell, other: Cell) -> bool:
    """In the same room with the same progress (level, items, keys), within DRIFT_TILES
    tiles of `other` on both axes."""
    return ((cell[0], cell[3], cell[6], cell[7]) == (other[0], other[3], other[6], other[7])
            and abs(cell[1] - other[1]) <= DRIFT_TILES
            and abs(cell[2] - other[2]) <= DRIFT_TILES)  # fmt: skip


def winner(
    start_state: str | None = "start_of_play",
    frame_skip: int = 4,
    planner: bool = True,
    budget: int | None = None,
) -> WinCheck:
    """A check that `actions` from `start_state` reach the credits at their last action;
    with a `budget`, shortening stops trying once its replays took that many env steps
    (what it has cut so far still wins)."""
    return WinCheck(start_state, frame_skip, planner, budget)


def run_length(actions: bytes, start: int) -> int:
    """How many times the action at `start` repeats from there (1 or more)."""
    first = actions[start]
    return len(list(itertools.takewhile(lambda action: action == first, actions[start:])))


def without_loops(actions: bytes, check: WinCheck) -> tuple[bytes, int]:
    """`actions` without the loops the win did not need (the longest from each state, from
    the start on); the checks it took."""
    current, checks, cursor = actions, 0, 0
    cells = check.cells(current)
    while cursor < len(current) and not check.spent:
        here = cells[cursor - 1] if cursor else None
        back = _last_return(cells, cursor, here)
        if back is not None:
            check.rebase(current[:cursor])
            candidate, track = current[:cursor] + current[back:], cells[:cursor] + cells[back:]
            checks += 1
            if check(candidate, track):
                current, cells = candidate, check.track_after_win(track)
        cursor += 1
    return current, checks


def _last_return(cells: list[Cell | None], cursor: int, here: Cell | None) -> int | None:
    """The step after the last state in cell `here` at least MIN_LOOP steps after `cursor`."""
    if here is None:
        return None
    for index in range(len(cells) - 1, cursor + MIN_LOOP - 2, -1):
        if cells[index] == here:
            return index + 1
    return None


def shorten(
    actions: bytes,
    wins: Callable[[bytes], bool] | None = None,
    *,
    loops: bool = True,
    errands: bool = True,
) -> Shortened:
    """`actions` without the loops and the runs (or second halves of runs) the win did not
    need (loops only with a WinCheck: they need the states along the way). The loops are cut
    again after the runs: a dropped run can bring a detour's two ends into one cell. With
    `errands`, an item errand done after a detour that did not need it goes before the
    detour, after the shortcuts (``with_errands_first``)."""
    check = wins or winner()
    if not check(actions):
        raise ValueError("the trajectory does not win as given: nothing to shorten")
    states = check if isinstance(check, WinCheck) else None  # prefixes, loops, a budget
    current, replays = actions, 1
    if loops and states:
        current, checks = without_loops(current, states)
        replays += checks
        current, checks = with_shortcuts(current, states)
        replays += checks
        if errands:
            current, checks = with_errands_first(current, states)
            replays += checks
    before_runs = len(current)
    current, checks = without_idle_runs(current, check, states)
    replays += checks
    if loops and states and len(current) < before_runs and not states.spent:
        current, checks = without_loops(current, states)
        replays += checks
    if states and not states.full(current):
        raise RuntimeError(
            "the shortened trajectory does not win replayed from the start: a state saved at "
            "rest did not play on as the replay does (a bug; shorten with a plain callable)"
        )
    return Shortened(current, replays)


def without_idle_runs(
    actions: bytes, check: Callable[[bytes], bool], states: WinCheck | None
) -> tuple[bytes, int]:
    """`actions` without the runs of one action (or their second halves) the win did not
    need, from the start on; the checks it took."""
    current, checks, cursor = actions, 0, 0
    cells = states.cells(current) if states else []
    while cursor < len(current) and not (states and states.spent):
        if states:
            states.rebase(current[:cursor])
        length = run_length(current, cursor)
        for drop in (length, length // 2) if length > 1 else (length,):
            keep = length - drop
            candidate = current[: cursor + keep] + current[cursor + length :]
            track = [*cells[: cursor + keep], *cells[cursor + length :]]
            checks += 1
            if candidate and (states(candidate, track) if states else check(candidate)):
                current, length = candidate, keep
                cells = states.track_after_win(track) if states else []
                break
        cursor += length
    return current, checks

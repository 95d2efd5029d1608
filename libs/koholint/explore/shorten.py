"""Shortening a winning trajectory: drop what did not matter, keep what still wins.

Phase 1's random runs repeat each action with p = 0.9, so its wins hold long runs of
one action that change nothing (A pressed against a wall for 30 steps, sword swings at
empty air). As a demonstration they hurt: the policy imitates them where it stands still,
and there it stays (seen in the robustified policy: 1,000 steps pressing A against the
lock hall's wall). ``shorten`` walks the runs of identical actions from the start and
drops each one — or, failing that, its second half — when the trajectory without it still
wins when replayed, deterministically, in the env phase 1 explored. Every kept change is
checked by a full replay, so the result is a winning trajectory by construction.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass

from koholint.explore.runner import exploration_env


@dataclass(frozen=True)
class Shortened:
    actions: bytes
    replays: int
    """full replays it took"""


class WinCheck:
    """Whether actions from a start reach the credits at their last action; `steps` counts
    the env steps its replays took (a run's budget includes them)."""

    def __init__(self, start_state: str | None, frame_skip: int, planner: bool) -> None:
        self.env = exploration_env(start_state=start_state, frame_skip=frame_skip,
                                   planner=planner, max_episode_steps=10_000_000)  # fmt: skip
        self.steps = 0

    def __call__(self, actions: bytes) -> bool:
        self.env.reset(seed=0)
        for index, action in enumerate(actions, start=1):
            self.steps += 1
            _, _, terminated, _, _ = self.env.step(action)
            if terminated:
                return index == len(actions)
        return False


def winner(
    start_state: str | None = "start_of_play", frame_skip: int = 4, planner: bool = True
) -> WinCheck:
    """A check that `actions` from `start_state` reach the credits at their last action."""
    return WinCheck(start_state, frame_skip, planner)


def run_length(actions: bytes, start: int) -> int:
    """How many times the action at `start` repeats from there (1 or more)."""
    first = actions[start]
    return len(list(itertools.takewhile(lambda action: action == first, actions[start:])))


def shorten(actions: bytes, wins: Callable[[bytes], bool] | None = None) -> Shortened:
    """`actions` without the runs (or second halves of runs) the win did not need."""
    check = wins or winner()
    if not check(actions):
        raise ValueError("the trajectory does not win as given: nothing to shorten")
    current, replays, cursor = actions, 1, 0
    while cursor < len(current):
        length = run_length(current, cursor)
        for drop in (length, length // 2) if length > 1 else (length,):
            keep = length - drop
            candidate = current[: cursor + keep] + current[cursor + length :]
            replays += 1
            if candidate and check(candidate):
                current, length = candidate, keep
                break
        cursor += length
    return Shortened(current, replays)

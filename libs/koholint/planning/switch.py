"""The policy switch: when the planner takes over from the learned policy, with hysteresis.

Each observation is classified (title beats dialog beats puzzle). The switch enters a mode after
``enter_after`` consecutive observations of it and leaves after ``leave_after`` consecutive
observations without it, so a one-frame flicker (a dialog box closing and reopening, a
transition frame) neither hands control over nor takes it back.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

Mode = Literal["policy", "dialog", "puzzle", "title"]


def classify(dialog: bool, puzzle: bool, title: bool = False) -> Mode:
    """Who should be in control of what is on screen: the title screen (and on LA DX the
    menus before play) beats a dialog, which beats the puzzle."""
    if title:
        return "title"
    if dialog:
        return "dialog"
    return "puzzle" if puzzle else "policy"


@dataclass
class PolicySwitch:
    """Hysteresis over classified observations; ``mode`` is who is in control."""

    enter_after: int = 2
    leave_after: int = 3
    mode: Mode = "policy"
    _candidate: Mode = field(default="policy", repr=False)
    _streak: int = field(default=0, repr=False)

    def __post_init__(self) -> None:
        if self.enter_after < 1 or self.leave_after < 1:
            raise ValueError(
                f"enter_after={self.enter_after}, leave_after={self.leave_after}: both must be >= 1"
            )

    def observe(self, observed: Mode) -> Mode:
        """Feed one observation; returns the mode in control after it."""
        if observed == self.mode:
            self._candidate, self._streak = self.mode, 0
            return self.mode
        if observed != self._candidate:
            self._candidate, self._streak = observed, 0
        self._streak += 1
        # Entering a planner mode (or switching between them) takes enter_after observations;
        # going back to the policy takes leave_after.
        needed = self.leave_after if observed == "policy" else self.enter_after
        if self._streak >= needed:
            self.mode, self._streak = observed, 0
        return self.mode

    def reset(self) -> None:
        self.mode = self._candidate = "policy"
        self._streak = 0

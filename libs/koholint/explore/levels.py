"""How far along a state is, for phase 1's archive: the cell's fourth entry and the weight that
sends restarts to the best level known (``koholint.explore.archive``).

- ``progress``: the hand-written level (``koholint.env.zelda.progress_level``: items, puzzles,
  keys, doors, the instrument).
- ``none``: every state at level 0; cells are where Link stands and what is left in the room.
- ``reward-model``: the judges' R_phi of the state's observation (``koholint.env.encoding``),
  standardised by its card and cut into steps of ``level_step`` standard deviations; levels
  are shifted by ``REWARD_LEVEL_OFFSET`` and floored at 0, as the archive counts from 0. A
  state's level is the highest its trajectory reached (``LevelSpec.ratchets``), as the
  progress level, which counts what was gained, never falls along the route.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import numpy as np

from koholint.env.encoding import encode, encoder_version
from koholint.env.zelda import progress_level
from koholint.game.state import RawState
from koholint.reward.model import RewardModelPotential, load_version
from koholint.store import open_store

LevelName = Literal["progress", "none", "reward-model"]
LEVELS: tuple[LevelName, ...] = ("progress", "none", "reward-model")
REWARD_LEVEL_OFFSET = 8
"""R_phi levels start this many steps below the training mean (0.5 std steps: 4 std below)"""

LevelFunction = Callable[[RawState], int]


class LevelError(ValueError):
    """A level setting that cannot work; the message names it and the fix."""


@dataclass(frozen=True)
class LevelSpec:
    """Which level phase 1 uses; picklable, so each worker builds its own function."""

    level: LevelName = "progress"
    reward_model: str = ""
    """the R_phi version (``reward-model``)"""
    store: str = ""
    """the store URL that holds it"""
    level_step: float = 0.5
    """standard deviations of R_phi per level"""

    @property
    def ratchets(self) -> bool:
        """Whether a state's level is the best reached along its trajectory, not its own:
        R_phi sees one observation, and without the ratchet a route's level falls as soon as
        Link walks away from what raised it (the archive then sends every restart back to
        the few cells at the top). The progress level already never falls along the route."""
        return self.level == "reward-model"

    def validate(self) -> None:
        if self.level not in LEVELS:
            raise LevelError(f"level {self.level!r}: use one of {', '.join(LEVELS)}")
        if self.level == "reward-model" and not (self.reward_model and self.store):
            raise LevelError("level 'reward-model' needs --reward-model VERSION and --store URL")
        if not 0.01 <= self.level_step <= 10:
            raise LevelError(f"level_step={self.level_step}: use 0.01..10 standard deviations")


def no_level(raw: RawState) -> int:
    return 0


class RewardModelLevel:
    """R_phi of a state, standardised and quantised (see the module docstring)."""

    def __init__(self, potential: Callable[[np.ndarray], np.ndarray], level_step: float) -> None:
        self.potential, self.level_step = potential, level_step

    def __call__(self, raw: RawState) -> int:
        value = float(self.potential(encode(raw)[None, :])[0])
        return max(0, math.floor(value / self.level_step) + REWARD_LEVEL_OFFSET)


def level_function(spec: LevelSpec) -> LevelFunction:
    """The level function `spec` names; the R_phi version is loaded and checked here."""
    spec.validate()
    if spec.level == "none":
        return no_level
    if spec.level == "progress":
        return progress_level
    model = load_version(open_store(spec.store), spec.reward_model,
                         expected_encoder=encoder_version())  # fmt: skip
    return RewardModelLevel(RewardModelPotential(model), spec.level_step)


__all__ = [
    "LEVELS",
    "REWARD_LEVEL_OFFSET",
    "LevelError",
    "LevelFunction",
    "LevelSpec",
    "RewardModelLevel",
    "level_function",
]

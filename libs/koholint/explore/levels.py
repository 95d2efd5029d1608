"""How far along a state is, for phase 1's archive: the cell's fourth entry and the weight that
sends restarts to the best level known (``koholint.explore.archive``).

- ``progress``: the hand-written level (``koholint.env.zelda.progress_level``: items, puzzles,
  keys, doors, the instrument), each item held counting ``ITEM_LEVELS``: an item is what the
  route's locks need (the sword beats the enemies that guard every key), so a state that
  holds it ranks above one that solved every puzzle without it.
- ``none``: every state at level 0; cells are where Link stands and what is left in the room.
- ``reward-model``: the judges' R_phi of the state's observation (``koholint.env.encoding``),
  standardised by its card and cut into steps of ``level_step`` standard deviations; levels
  are shifted by ``REWARD_LEVEL_OFFSET`` and floored at 0, as the archive counts from 0. A
  state's level is the highest its trajectory reached (``LevelSpec.ratchets``), as the
  progress level, which counts what was gained, never falls along the route.
- ``judges``: the same R_phi, fitted on the explorer's own cells while it explores
  (``orchestrator.judged``, through ``koholint.explore.judging``): every ``refit_every`` env steps the new cells are exported,
  the judges (``judges``: rules or noisy) compare them and R_phi is refitted into ``store``;
  the archive is re-levelled with each published version (level 0 before the first). With
  ``level_bins`` N the version's R_phi is cut at the archive's own shares instead (N levels of
  equal size, thresholds in the spec), so restarts go to the best 1/N of the cells by R_phi
  however R_phi's values spread; ``encoding`` ``memory`` lets R_phi read the room flags' counts.
  The defaults (measured best, docs/reward-model.md): the judges asked for the progress level
  alone (``question``), R_phi pulled to one value on the cells they call the same
  (``tie_weight``), read in the memory encoding, cut in steps of ``level_step``.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import partial
from typing import TYPE_CHECKING, Literal

import numpy as np

if TYPE_CHECKING:
    from koholint.game.state import RawState

# `koholint explore`'s flags read LevelSpec when the CLI starts (every koholint command): the
# emulator, the encoder and the reward model are imported where a level function is made.

LevelName = Literal["progress", "none", "reward-model", "judges"]
LEVELS: tuple[LevelName, ...] = ("progress", "none", "reward-model", "judges")
JUDGES = ("rules", "noisy")
MIN_REFIT_EVERY, MAX_REFIT_EVERY = 1_000, 10_000_000
MIN_LEVEL_BINS, MAX_LEVEL_BINS = 2, 100
ITEM_LEVELS = 4
"""progress levels an item held counts for: more than a world's puzzles (at most 3 on the
generator's worlds), so a puzzle solved out of order never outranks the sword"""
REWARD_LEVEL_OFFSET = 8
"""R_phi levels start this many steps below the training mean (0.5 std steps: 4 std below)"""

LevelFunction = Callable[["RawState"], int]


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
    refit_every: int = 25_000
    """``judges``: env steps between refits"""
    judges: str = "rules"
    """``judges``: the evaluator's backend that compares the cells (rules or noisy)"""
    noisy_accuracy: float = 0.75
    """``judges`` with ``noisy``: the probability each answer is the ground truth"""
    encoding: str = "memory"
    """``judges``: what the cells are recorded in and R_phi is fitted on
    (``koholint.env.encoding.ENCODINGS``): ``memory`` adds the room flags' counts, the progress
    one frame does not show (a ``reward-model`` version reads the encoding its card names)"""
    level_bins: int = 0
    """``judges``: N >= 2 cuts R_phi into N levels that hold equal shares of the archive's
    cells at each refit (the top level: its best 1/N); 0 cuts it in steps of ``level_step``
    (a ``reward-model`` level always does: it has no archive's shares to cut at)"""
    question: str = "progress"
    """``judges``: what makes one cell's state further along
    (``koholint.schemas.evaluator.STATE_QUESTIONS``): its progress level with rooms reached
    breaking ties, or the level alone (``progress``: the cells already see the rooms)"""
    tie_weight: float = 1.0
    """``judges``: the reward model's ``tie_weight``: how hard the cells the judges called the
    same are pulled to one R_phi (0: ties unused)"""
    thresholds: tuple[float, ...] = ()
    """the standardised R_phi values between those levels, set at each refit"""

    @property
    def ratchets(self) -> bool:
        """Whether a state's level is the best reached along its trajectory, not its own:
        R_phi sees one observation, and without the ratchet a route's level falls as soon as
        Link walks away from what raised it (the archive then sends every restart back to
        the few cells at the top). The progress level already never falls along the route."""
        return self.level in ("reward-model", "judges")

    def with_version(self, version: str) -> LevelSpec:
        """This spec reading one published R_phi version (how ``judges`` levels after a refit)."""
        return replace(self, level="reward-model", reward_model=version)

    def validate(self) -> None:
        if self.level not in LEVELS:
            raise LevelError(f"level {self.level!r}: use one of {', '.join(LEVELS)}")
        if self.level == "reward-model" and not (self.reward_model and self.store):
            raise LevelError("level 'reward-model' needs --reward-model VERSION and --store URL")
        if self.level == "judges" and not self.store:
            raise LevelError(
                "level 'judges' needs --store URL: the cells, scores and R_phi go there"
            )
        if not MIN_REFIT_EVERY <= self.refit_every <= MAX_REFIT_EVERY:
            raise LevelError(f"refit_every={self.refit_every}: use {MIN_REFIT_EVERY}.."
                             f"{MAX_REFIT_EVERY} env steps")  # fmt: skip
        if self.judges not in JUDGES:
            raise LevelError(f"judges {self.judges!r}: use one of {', '.join(JUDGES)}")
        if not 0.0 <= self.noisy_accuracy <= 1.0:
            raise LevelError(f"noisy_accuracy={self.noisy_accuracy}: use 0..1")
        from koholint.env.encoding import ENCODINGS

        if self.encoding not in ENCODINGS:
            raise LevelError(f"encoding {self.encoding!r}: use one of {', '.join(ENCODINGS)}")
        from koholint.schemas.evaluator import STATE_QUESTIONS

        if self.question not in STATE_QUESTIONS:
            raise LevelError(f"question {self.question!r}: use one of {', '.join(STATE_QUESTIONS)}")
        if not 0.0 <= self.tie_weight <= 10.0:
            raise LevelError(f"tie_weight={self.tie_weight}: use 0..10 (0 leaves ties out)")
        if not 0.01 <= self.level_step <= 10:
            raise LevelError(f"level_step={self.level_step}: use 0.01..10 standard deviations")
        if self.level_bins != 0 and not MIN_LEVEL_BINS <= self.level_bins <= MAX_LEVEL_BINS:
            raise LevelError(f"level_bins={self.level_bins}: use 0 (steps of level_step) or "
                             f"{MIN_LEVEL_BINS}..{MAX_LEVEL_BINS} levels")  # fmt: skip


def no_level(raw: RawState) -> int:
    return 0


class RewardModelLevel:
    """R_phi of a state, standardised and quantised (see the module docstring)."""

    def __init__(
        self,
        potential: Callable[[np.ndarray], np.ndarray],
        level_step: float,
        encoding: str = "observation",
        thresholds: tuple[float, ...] = (),
    ) -> None:
        from koholint.env.encoding import encoder

        self.potential, self.level_step, self.encode = potential, level_step, encoder(encoding)
        self.thresholds = np.asarray(thresholds, np.float64)

    def __call__(self, raw: RawState) -> int:
        return int(self.of_observations(self.encode(raw)[None, :])[0])

    def values(self, observations: np.ndarray) -> np.ndarray:
        """R_phi of encoded observations, standardised by its card."""
        return np.asarray(self.potential(observations), np.float64)

    def of_observations(self, observations: np.ndarray) -> np.ndarray:
        """The levels of encoded observations, one per row."""
        values = self.values(observations)
        if self.thresholds.size:  # equal shares of the archive: 0 .. len(thresholds)
            return np.searchsorted(self.thresholds, values, side="right").astype(np.int64)
        return np.maximum(
            0, np.floor(values / self.level_step).astype(np.int64) + REWARD_LEVEL_OFFSET
        )

    def thresholds_for(self, observations: np.ndarray, bins: int) -> tuple[float, ...]:
        """The values that cut these observations' R_phi into `bins` equal shares."""
        quantiles = np.quantile(self.values(observations), np.arange(1, bins) / bins)
        return tuple(float(q) for q in quantiles)

    def cut_at(self, thresholds: tuple[float, ...]) -> RewardModelLevel:
        """The same R_phi cut at `thresholds` (the loaded version is shared, not reloaded)."""
        cut = copy.copy(self)
        cut.thresholds = np.asarray(thresholds, np.float64)
        return cut


def reward_model_level(spec: LevelSpec) -> RewardModelLevel:
    """The quantised R_phi of the version `spec` names, loaded and checked; it reads states in
    the encoding its card names (``spec.encoding`` is what a judges level trains on)."""
    from koholint.env.encoding import ENCODINGS, encoding_of
    from koholint.reward.model import RewardModelError, RewardModelPotential, load_version
    from koholint.store import open_store

    model = load_version(open_store(spec.store), spec.reward_model)
    encoding = encoding_of(model.card.encoder_version)
    if encoding is None:
        raise RewardModelError(
            f"{spec.reward_model} was trained on encoder {model.card.encoder_version}, which "
            f"this env does not encode (its encodings: {', '.join(ENCODINGS)}): retrain it on "
            "segments this version of koholint exported"
        )
    return RewardModelLevel(RewardModelPotential(model), spec.level_step, encoding,
                            spec.thresholds)  # fmt: skip


def level_function(spec: LevelSpec) -> LevelFunction:
    """The level function `spec` names; the R_phi version is loaded and checked here."""
    spec.validate()
    if spec.level in ("none", "judges"):  # judges: level 0 until the first refit publishes
        return no_level
    if spec.level == "progress":
        from koholint.env.zelda import progress_level

        return partial(progress_level, item_levels=ITEM_LEVELS)
    return reward_model_level(spec)


__all__ = [
    "ITEM_LEVELS",
    "JUDGES",
    "LEVELS",
    "REWARD_LEVEL_OFFSET",
    "LevelError",
    "LevelFunction",
    "LevelSpec",
    "RewardModelLevel",
    "level_function",
    "reward_model_level",
]

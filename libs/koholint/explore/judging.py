"""The judged level's seam: phase 1 levels its cells by an R_phi that the judges fit on them
while it explores, and the rounds that do it (export, judge, fit) drive the evaluator and the
reward model, which the library never does. The orchestrator (``orchestrator.judged``)
provides them through the ``koholint.levels`` entry point named ``judges``; the explorer asks
for them here.
"""

from __future__ import annotations

from importlib.metadata import entry_points
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from koholint.explore.archive import Archive
    from koholint.explore.levels import LevelSpec
    from koholint.reward.refit import Refit

LEVEL_GROUP = "koholint.levels"
"""Entry points naming a factory of judged levels (``judges = "package.module:Class"``)."""


class JudgedLevels(Protocol):
    """The refit rounds of one exploration, as the explorer uses them."""

    rounds: list[Refit]
    current: LevelSpec
    """the spec the workers level new states with now"""

    def add(self, state_id: str, observation: bytes, state: dict[str, Any], parent: str) -> None:
        """A cell's kept state is new or bettered."""

    def due(self, env_steps: int) -> bool:
        """Whether a round is due at `env_steps`."""

    def refit(self, archive: Archive, env_steps: int) -> Refit:
        """One round; re-levels `archive` when a version is published."""


class JudgedLevelsFactory(Protocol):
    def __call__(self, spec: LevelSpec, *, run: str, logs: Path, seed: int) -> JudgedLevels: ...


def judged_levels(spec: LevelSpec, *, run: str, logs: Path, seed: int) -> JudgedLevels:
    """The installed judged levels for `spec` (level ``judges``)."""
    found = entry_points(group=LEVEL_GROUP, name="judges")
    if not found:
        raise RuntimeError(
            "level judges needs the orchestrator (entry point koholint.levels: judges), which "
            "runs the judges and the reward model: reinstall koholint (pip install -e .)"
        )
    factory: JudgedLevelsFactory = next(iter(found)).load()
    return factory(spec, run=run, logs=logs, seed=seed)

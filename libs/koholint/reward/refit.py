"""One refit round of R_phi: the judges score, the reward model fits and publishes or refuses.

The online loop and judged exploration (``services/orchestrator``) each keep a list of these;
phase 1 (``koholint.explore``) reports them as they end.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Refit:
    """One round: the judges, then R_phi, started when the run had `step` env steps."""

    round: int
    step: int
    ended_step: int | None = None
    """the run's env steps (newest checkpoint) when the round ended: R_phi shapes from there"""
    scored: int = 0
    state: str = "running"
    """published, refused or stopped (the run ended first)"""
    version: str = ""
    pairs: int = 0
    accuracy: float | None = None
    detail: str = ""

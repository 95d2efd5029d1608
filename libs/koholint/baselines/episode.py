"""What one played episode reached: the one result of ``koholint play``, whether the policy
is a named baseline (``koholint.baselines.play.run_episode``) or a trained policy file
(``koholint.baselines.trained.play_policy``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class PlayedEpisode:
    """One episode of a policy from a start, and where it ended."""

    policy: str
    """the policy's name, or the folder of a trained policy"""
    start: str
    """the start: a named state, power_on, or demo-<file>@<step>"""
    seed: int
    won: bool
    steps: int
    """policy decisions (a planner takeover is part of the decision's step)"""
    level: int
    """progress level at the end (koholint.env.zelda.progress_level)"""
    rooms: int
    cells: int
    episode_return: float
    frames: int
    kills: int
    deaths: int
    milestones: dict[str, bool]
    seconds: float
    trajectory: str | None = None
    """the JSONL trajectory it was recorded to, if any"""
    gif: str | None = None
    """the GIF it was exported as, if any"""

    def summary(self) -> dict[str, Any]:
        """The closing line of its JSONL trajectory."""
        return {
            "policy": self.policy, "start": self.start, "seed": self.seed, "rooms": self.rooms,
            "cells": self.cells, "return": round(self.episode_return, 4), "steps": self.steps,
            "frames": self.frames, "won": self.won, "kills": self.kills, "deaths": self.deaths,
        }  # fmt: skip

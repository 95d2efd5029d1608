"""Wrappers of ``koholint/Zelda-v1``, one concern per module, all importable from here.

Importing one loads only its own module: the curiosity wrapper needs torch, which the
services without the trainer's extra (env-sim, the evaluator, the planner) do not install.

Go-Explore's wrappers (archive restarts, the backward curriculum) live with the rest of
Go-Explore in ``koholint.explore``."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from koholint.env.wrappers.curiosity import CuriosityWrapper
    from koholint.env.wrappers.export import SegmentRecorder
    from koholint.env.wrappers.planner import PlannerControlWrapper
    from koholint.env.wrappers.positions import PositionPublisher, PositionPublisherWrapper
    from koholint.env.wrappers.shaping import (
        BonusWrapper,
        Potential,
        ProgressLevel,
        RewardModelWrapper,
        ShapingWrapper,
    )

HOMES = {
    "BonusWrapper": "shaping", "CuriosityWrapper": "curiosity",
    "PlannerControlWrapper": "planner", "PositionPublisher": "positions",
    "PositionPublisherWrapper": "positions", "Potential": "shaping",
    "ProgressLevel": "shaping", "RewardModelWrapper": "shaping", "SegmentRecorder": "export", "ShapingWrapper": "shaping",
}  # fmt: skip
"""each name -> the module of this package that defines it"""

__all__ = [
    "BonusWrapper",
    "CuriosityWrapper",
    "PlannerControlWrapper",
    "PositionPublisher",
    "PositionPublisherWrapper",
    "Potential",
    "ProgressLevel",
    "RewardModelWrapper",
    "SegmentRecorder",
    "ShapingWrapper",
]


def __getattr__(name: str) -> object:
    if name not in HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{HOMES[name]}"), name)

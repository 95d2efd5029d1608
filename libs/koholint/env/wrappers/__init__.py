"""Wrappers of ``koholint/Zelda-v1``, one concern per module, all importable from here.

Go-Explore's wrappers (archive restarts, the backward curriculum) live with the rest of
Go-Explore in ``koholint.explore``."""

from koholint.env.wrappers.curiosity import CuriosityWrapper
from koholint.env.wrappers.export import SegmentRecorder
from koholint.env.wrappers.planner import PlannerControlWrapper
from koholint.env.wrappers.positions import PositionPublisher, PositionPublisherWrapper
from koholint.env.wrappers.shaping import (
    BonusWrapper,
    Potential,
    RewardModelWrapper,
    ShapingWrapper,
)

__all__ = [
    "BonusWrapper",
    "CuriosityWrapper",
    "PlannerControlWrapper",
    "PositionPublisher",
    "PositionPublisherWrapper",
    "Potential",
    "RewardModelWrapper",
    "SegmentRecorder",
    "ShapingWrapper",
]

"""Wrappers of ``koholint/Zelda-v1``, one concern per module, all importable from here."""

from koholint.env.wrappers.curiosity import CuriosityWrapper
from koholint.env.wrappers.curriculum import CurriculumWrapper, LocalCurriculum
from koholint.env.wrappers.export import SegmentRecorder
from koholint.env.wrappers.go_explore import (
    ArchiveSource,
    Frontier,
    GoExploreWrapper,
    LocalArchiveSource,
)
from koholint.env.wrappers.planner import PlannerControlWrapper
from koholint.env.wrappers.positions import PositionPublisher, PositionPublisherWrapper
from koholint.env.wrappers.shaping import Potential, ShapingWrapper

__all__ = [
    "ArchiveSource",
    "CuriosityWrapper",
    "CurriculumWrapper",
    "Frontier",
    "GoExploreWrapper",
    "LocalArchiveSource",
    "LocalCurriculum",
    "PlannerControlWrapper",
    "PositionPublisher",
    "PositionPublisherWrapper",
    "Potential",
    "SegmentRecorder",
    "ShapingWrapper",
]

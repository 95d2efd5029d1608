"""Go-Explore, all of it. Phase 1 explores the cartridge with no policy until it is won
(``explorer``, ``runner``, ``cells``, ``shorten``, ``command``) and keeps the winning
trajectory (``trajectory``, ``demo``); the archive of cells (``archive``) is shared with phase
2, whose wrappers restart episodes from archived cells (``restarts``) and walk a backward
curriculum over the winning trajectory (``curriculum``).

``from koholint.explore import ExploreConfig, explore`` (see ``koholint.explore.explorer``).
The names load on first use, so ``koholint --help`` does not start an emulator import.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from koholint.explore.explorer import (
        ExploreConfig,
        ExploreConfigError,
        Explorer,
        ExploreResult,
        Progress,
        explore,
    )

__all__ = [
    "ExploreConfig",
    "ExploreConfigError",
    "ExploreResult",
    "Explorer",
    "Progress",
    "explore",
]


def __getattr__(name: str) -> Any:
    if name in __all__:
        return getattr(import_module("koholint.explore.explorer"), name)
    raise AttributeError(f"module 'koholint.explore' has no attribute {name!r}")

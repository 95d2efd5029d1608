"""Named save states of the bundled cartridge, captured along its walkthrough.

Every other engine world has the opening's two, ``title`` and ``start_of_play``, derived
from power-on (``koholint.game.opening.named_state``); the other names mark places on the
default world's route and exist only on the bundled cartridge.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

# In walkthrough order; each is a mark of the same name in walkthrough.json.
STATE_NAMES = (
    "title",
    "start_of_play",
    "before_npc",
    "before_chest",
    "before_shop",
    "before_puzzle",
    "dungeon_entrance",
    "last_room",
)
OPENING_STATES = ("title", "start_of_play")
"""The states every world has: the opening's, the same on any world of the engine."""


class UnknownStateError(KeyError):
    """A start state name that does not exist."""

    def __str__(self) -> str:
        return str(self.args[0])


def states_dir() -> Path:
    return Path(str(resources.files("koholint") / "data" / "states"))


def state_path(name: str) -> Path:
    if name not in STATE_NAMES:
        raise UnknownStateError(
            f"unknown save state {name!r}; choose one of {', '.join(STATE_NAMES)}"
        )
    return states_dir() / f"{name}.state"


def load_named_state(name: str) -> bytes:
    """The bytes of a named state of the bundled cartridge, for GameBoy.load_state(); any
    world's: ``koholint.game.opening.named_state``."""
    return state_path(name).read_bytes()

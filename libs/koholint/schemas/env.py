"""The settings of ``koholint/Zelda-v1``, declared once: each field with its bound and docstring.

``EnvSettings`` is what a person chooses about the game an agent plays; env-sim's session body
(``koholint.schemas.env_sim.SessionSettings``) and the trainer's ``env`` object are built on
it, so a bound or a default changes here and nowhere else. The environment's own config
(``koholint.env.zelda.EnvConfig``) adds what only code chooses: the ROM path and whether each
step builds the structured state.

Numbers are JSON numbers (``"4"`` and ``true`` are refused, naming the field); text from the
command line or the environment is decoded before it gets here.

>>> EnvSettings(frame_skip=8).frame_skip
8
"""

from __future__ import annotations

from collections.abc import Callable
from enum import IntEnum
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, WithJsonSchema

from koholint.game.states import STATE_NAMES
from koholint.schemas.fields import JsonFloat, JsonInt, number_not_text

MAX_FRAME_SKIP = 60
MAX_EPISODE_STEPS = 10_000_000
MAX_LATCH_STEPS = 64
MAX_COVERAGE_BIN = 160
MAX_REWARD_WEIGHT = 1e6


class Action(IntEnum):
    """The discrete action set. Directions are held for the whole step; buttons are pressed
    for the first half of the step (at least one frame) and released, so that choosing the
    same button twice presses it twice."""

    NOOP = 0
    UP = 1
    DOWN = 2
    LEFT = 3
    RIGHT = 4
    A = 5
    B = 6
    START = 7
    SELECT = 8


Encoding = Literal["observation", "memory", "flags", "local"]
"""The observation vector (``koholint.env.encoding``): ``observation``, the 128 slots of one
frame; ``memory``, those and 16 counts of the rooms' flags (what the game remembers across
rooms: visited, a puzzle solved, a door opened, a key taken); ``flags``, those and 14 counts
of the rooms' event flags (the visited bit left out); ``local``, those and the walls of the
7 x 7 tiles around Link with his place in his tile (50 slots)."""

RewardMode = Literal["sparse", "progress", "progress+coverage"]
"""Which reward components count: the win only, progress events, progress and coverage."""


def _known_state(value: Any) -> Any:
    """A state given by name must be one of the cartridge's named states."""
    if isinstance(value, str) and value not in STATE_NAMES:
        raise ValueError(f"{value!r} is not a named state: use {', '.join(STATE_NAMES)} or null")
    return value


StartState = Annotated[
    str | bytes | Callable[[np.random.Generator], bytes] | None,
    BeforeValidator(_known_state),
    # Over JSON a start is a state's name or null; bytes and callables come only from code.
    WithJsonSchema({"anyOf": [{"enum": list(STATE_NAMES)}, {"type": "null"}]}),
]
# Constraints inside the integer (not on an optional field), so the schema states them.
CartridgeSeed = Annotated[int, Field(ge=0, le=255), BeforeValidator(number_not_text)]
Weight = Annotated[
    float, Field(ge=-MAX_REWARD_WEIGHT, le=MAX_REWARD_WEIGHT), BeforeValidator(number_not_text)
]


class RewardWeights(BaseModel):
    """Weight of each reward component (a component counts events or units)."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True, frozen=True)

    new_room: Weight = 1.0
    """per room entered for the first time in the episode"""
    item: Weight = 1.0
    """per item gained (a new inventory item, a heart container)"""
    key: Weight = 0.5
    """per small key gained"""
    kill: Weight = 0.25
    """per enemy defeated (wKillCount); bounded, as beaten rooms stay beaten"""
    win: Weight = 10.0
    """once, when the instrument is taken (the credits start)"""
    rupee: Weight = 0.02
    """per rupee gained (spending is not penalised)"""
    damage: Weight = -0.05
    """per health point lost (8 per heart)"""
    death: Weight = -1.0
    """per death (Link passes out)"""
    coverage: Weight = 0.05
    """per (room, tile bin) cell visited for the first time in the episode"""


class EnvSettings(BaseModel):
    """The game an agent plays: where it starts, how time and input work, what is rewarded."""

    model_config = ConfigDict(
        extra="forbid", use_attribute_docstrings=True, frozen=True, arbitrary_types_allowed=True
    )

    start_state: StartState = "start_of_play"
    """a named save state or null for power-on (from code also state bytes or a
    callable(rng) -> bytes)"""
    frame_skip: JsonInt = Field(4, ge=1, le=MAX_FRAME_SKIP)
    """emulator frames per step"""
    sticky_action_probability: JsonFloat = Field(0.0, ge=0.0, lt=1.0)
    """chance, each step, that the previous action repeats instead of the chosen one"""
    latch_steps: JsonInt = Field(1, ge=1, le=MAX_LATCH_STEPS)
    """a chosen direction is held for this many steps (1 = no latch); actions chosen while
    latched are ignored (``info['action']`` reports what was applied)"""
    max_episode_steps: JsonInt = Field(4096, ge=1, le=MAX_EPISODE_STEPS)
    """steps before the episode is truncated"""
    reward_mode: RewardMode = "progress+coverage"
    """which components count: 'sparse' (win only), 'progress', 'progress+coverage'"""
    reward_weights: RewardWeights = Field(default_factory=RewardWeights)
    """the weight of each reward component"""
    coverage_bin: JsonInt = Field(16, ge=1, le=MAX_COVERAGE_BIN)
    """side of a coverage cell in pixels (16 = one tile)"""
    cartridge_seed: CartridgeSeed | None = 0
    """the game's own RNG seed byte (C0F0), written at reset; null draws one per reset"""
    observation: Encoding = "observation"
    """the vector the agent sees: 'observation' (128 slots of one frame), 'memory' (those
    and 16 counts of the rooms' flags) or 'flags' (those and 14 counts of the rooms' event
    flags, visits left out): with either, a room crossed before and after a puzzle is solved
    looks different; 'local' (those 128 and the walls of the 7 x 7 tiles around Link, with
    his place in his tile: a gap beside him looks the same in every room)"""


class WorldSetting(BaseModel):
    """The world a command or a run plays: ``koholint train``, ``explore`` and ``loop``."""

    model_config = {"use_attribute_docstrings": True}

    rom: str = Field("", max_length=4096)
    """the world: a ROM file or a world folder from `koholint cartridge generate --out DIR`;
    empty plays $KOHOLINT_ROM or the bundled cartridge"""

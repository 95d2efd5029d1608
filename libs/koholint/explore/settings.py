"""Phase 1's settings, declared once: ``koholint explore``'s flags and ``KOHOLINT_EXPLORE_*``
variables (``koholint.flags``), and the trainer's ``explore`` group (``--explore-*``,
``KOHOLINT_TRAINER_EXPLORE__*``) are derived from ``ExploreSettings``; the defaults are the
ones the trainer's one command explores with."""

from __future__ import annotations

from typing import ClassVar

from pydantic import BaseModel, ConfigDict, Field, StrictBool

from koholint.schemas.fields import JsonFloat, JsonInt

MAX_ENV_STEPS = 1_000_000_000
MAX_RUN_STEPS = 10_000


class ExploreSettings(BaseModel):
    """How phase 1 explores, what it keeps of a cell, and how its win is shortened."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)
    environment_prefix: ClassVar[str] = "KOHOLINT_EXPLORE_"

    max_env_steps: JsonInt = Field(2_000_000, ge=1, le=MAX_ENV_STEPS)
    """the step budget over all workers; the loop stops early at the first win"""
    run_steps: JsonInt = Field(100, ge=1, le=MAX_RUN_STEPS)
    """steps per exploration run from a restored cell (Go-Explore: 100)"""
    runs_per_batch: JsonInt = Field(8, ge=1, le=1000)
    """runs sent to a worker at once (fewer round trips)"""
    repeat_probability: JsonFloat = Field(0.9, ge=0, lt=1)
    """chance that each step repeats the previous action (a step is 4 frames; 0.9 walks
    about 2.5 tiles in one direction on average)"""
    tile_bin: JsonInt = Field(16, ge=1, le=160)
    """side of a cell's position bin in pixels (16 = one tile)"""
    level_base: JsonFloat = Field(1000.0, ge=1, le=1e12)
    """each progress level below the best known divides a cell's selection weight by this
    (1 ignores levels): on this route every level gained is a step forward, so restarts go
    to the new level"""
    stall_env_steps: JsonInt = Field(250_000, ge=0, le=MAX_ENV_STEPS)
    """after this many env steps in which the best level gained no new cell, restarts weigh
    levels by `stall_level_base` instead, until it gains one: a level gained out of the
    route's order (a puzzle before the sword the keys need) is a dead end that stops
    starving the cells below it (0: never)"""
    stall_level_base: JsonFloat = Field(1.0, ge=1, le=1e12)
    """`level_base` while the best level is stalled (1: every level alike)"""
    count_power: JsonFloat = Field(1.0, gt=0, le=10)
    """exponent of the archive's count terms, 1 / (1 + chosen) ** p: 1 (rather than
    Go-Explore's 0.5) stops the oldest cells of a level from taking most restarts"""
    prefer_health: StrictBool = True
    """keep, per cell, the state with the most whole hearts before the fastest one: slower
    trajectories, but ones that do not cross a fight at half a heart (phase 2's demo)"""
    shorten: StrictBool = True
    """the win loses the loops and the runs of one action it did not need before it is
    learned (win-short.actions; koholint.teachers.shorten)"""
    errands_first: StrictBool = True
    """the shortening takes an item errand (the sword's chest) before a detour that did not
    need it, by the path-finder, down to the dungeon's stairs, where it lands on the win's
    pixel there (koholint.teachers.errands)"""
    shorten_env_steps: JsonInt = Field(600_000, ge=1, le=MAX_ENV_STEPS)
    """the shortening stops trying after its replays took this many env steps, keeping what
    it cut (a run's budget counts them)"""

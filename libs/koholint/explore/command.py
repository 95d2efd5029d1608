"""``koholint explore``: run phase 1 until the cartridge is won, and keep the winning trajectory.

Writes into ``--out``: ``win.actions`` (the actions, one byte each), ``win.jsonl`` (the same
as a trajectory with a RAM hash per step: ``koholint replay`` checks it),
``summary.json`` (env steps to the win and to each milestone, cells, seconds) and, with
``--shorten`` (on), ``win-short.actions``. Its flags, their help and the variables
``KOHOLINT_EXPLORE_<FIELD>`` are derived from ``ExploreCommandSettings`` (``koholint.flags``):
phase 1's own settings are ``ExploreSettings``, the trainer's ``explore`` group.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import Field, StrictBool, ValidationError

from koholint.explore.levels import LevelName, LevelSpec
from koholint.explore.settings import ExploreSettings
from koholint.flags import add_setting_flags, environment_values, flag_errors, setting_values
from koholint.game.rom import ROM_ENV_VARIABLE, playing
from koholint.schemas.env import WorldSetting
from koholint.schemas.fields import JsonFloat, JsonInt

if TYPE_CHECKING:
    from koholint.explore.explorer import ExploreConfig, ExploreResult, Progress
    from koholint.reward.refit import Refit

SUMMARY_SCHEMA_VERSION = 1
_LEVEL = LevelSpec()
JUDGED_ONLY = ("level_encoding", "level_bins", "judges_question", "judges_tie_weight")
"""settings of the ``judges`` level alone"""

Shortener = Callable[[bytes, str | None, ExploreSettings], bytes]
"""The winning actions, their start state and the settings -> the shortened win."""


class ExploreCommandSettings(ExploreSettings, WorldSetting):
    """Phase 1's settings, and where, with what seed, workers and level ``koholint explore``
    runs it."""

    environment_names: ClassVar[dict[str, str]] = {"rom": ROM_ENV_VARIABLE}

    seed: JsonInt = Field(0, ge=0, le=2**63 - 1)
    """seeds cell selection and the workers' random actions"""
    workers: JsonInt = Field(default_factory=lambda: os.cpu_count() or 1, ge=1, le=64)
    """worker processes (one per core); 1 runs in this process"""
    start: Literal["start_of_play", "power_on"] = "start_of_play"
    """where the trajectory starts"""
    out: str = Field("runs/explore", min_length=1)
    """folder for the win and the summary"""
    quiet: StrictBool = False
    """no progress lines"""
    level: LevelName = _LEVEL.level
    """how far along a state is: the hand-written progress level, none, the judges' R_phi
    (--reward-model), or an R_phi the judges fit on the explorer's own cells as it goes
    (judges)"""
    reward_model: str = _LEVEL.reward_model
    """--level reward-model: the R_phi version to use"""
    store: str = _LEVEL.store
    """--level reward-model: the store URL that holds the version; judges: where the cells,
    scores and versions go"""
    level_step: JsonFloat = _LEVEL.level_step
    """R_phi levels: standard deviations of R_phi per level"""
    refit_every: JsonInt = _LEVEL.refit_every
    """--level judges: env steps between refit rounds"""
    judges: str = _LEVEL.judges
    """--level judges: the evaluator's backend that compares the cells (rules, noisy)"""
    noisy_accuracy: JsonFloat = _LEVEL.noisy_accuracy
    """--judges noisy: the probability each answer is right"""
    level_encoding: str = _LEVEL.encoding
    """--level judges: what R_phi reads of a state: observation (what the policy sees) or
    memory (that and how many rooms carry each room flag: visited, solved, opened)"""
    level_bins: JsonInt = _LEVEL.level_bins
    """--level judges: 0 cuts R_phi in --level-step steps; N cuts it at each refit into N
    levels holding equal shares of the archive's cells (restarts go to its best 1/N)"""
    judges_question: str = _LEVEL.question
    """--level judges: what makes a cell's state further along for the judges:
    progress+rooms (the progress level, rooms reached breaking ties) or progress (the level
    alone)"""
    judges_tie_weight: JsonFloat = _LEVEL.tie_weight
    """--level judges: how hard R_phi is pulled to one value on cells the judges called the
    same (0 leaves ties out)"""

    def level_spec(self) -> LevelSpec:
        return LevelSpec(self.level, self.reward_model, self.store, self.level_step,
                         self.refit_every, self.judges, self.noisy_accuracy, self.level_encoding,
                         self.level_bins, self.judges_question, self.judges_tie_weight)  # fmt: skip


def register(commands: argparse._SubParsersAction, shorten: Shortener) -> None:
    """Add ``koholint explore``; `shorten` makes ``--shorten`` (the caller's: Go-Explore
    knows no shortening)."""
    explore = commands.add_parser(
        "explore", help="Go-Explore phase 1: explore without a policy until the game is won",
        description="Every setting: --flag > environment variable > default.",
    )  # fmt: skip
    add_setting_flags(explore, ExploreCommandSettings)
    explore.set_defaults(handler=cmd_explore, shorten_win=shorten)


def cmd_explore(args: argparse.Namespace) -> int:
    from koholint.explore.explorer import explore

    settings = _settings(args)
    config = None if settings is None else _run_of(settings)
    if settings is None or config is None:
        return 2
    printer = _ProgressPrinter(every=50_000, quiet=settings.quiet)
    with playing(settings.rom) as world:  # the workers inherit the world
        result = explore(config, printer, None if settings.quiet else _print_refit)
        out = Path(settings.out)
        out.mkdir(parents=True, exist_ok=True)
        summary = _summary(settings, result) | {"rom": str(world)}
        if result.trajectory is not None:
            summary |= _write_win(result.trajectory, config.start_state, settings, args.shorten_win)
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    verdict = f"won in {len(result.trajectory)} steps" if result.trajectory else "no win"
    print(f"{verdict} after {result.env_steps} env steps, {result.cells} cells, "
          f"{result.seconds:.0f} s; results in {out}/")  # fmt: skip
    return 0 if result.won else 1


def _settings(args: argparse.Namespace) -> ExploreCommandSettings | None:
    """The flags over the environment over the defaults; None (said on stderr) if refused."""
    given = {**environment_values(ExploreCommandSettings, os.environ), **setting_values(args)}
    try:
        settings = ExploreCommandSettings(**given)
    except ValidationError as error:
        print(f"koholint explore: {flag_errors(error)}", file=sys.stderr)
        return None
    judged_only = ["--" + name.replace("_", "-") for name in JUDGED_ONLY if name in given]
    if judged_only and settings.level != "judges":
        print(f"koholint explore: {' and '.join(judged_only)} set how the judges fit R_phi as "
              f"they explore: add --level judges (a reward-model version reads the encoding its "
              f"card names, in --level-step steps)", file=sys.stderr)  # fmt: skip
        return None
    return settings


def _run_of(settings: ExploreCommandSettings) -> ExploreConfig | None:
    """The phase-1 run the settings make; None (said on stderr) if it cannot work."""
    from koholint.explore.explorer import ExploreConfig, ExploreConfigError
    from koholint.explore.levels import level_function
    from koholint.reward.model import RewardModelError
    from koholint.store import StoreError

    config = ExploreConfig.of(
        settings, start_state=None if settings.start == "power_on" else settings.start,
        seed=settings.seed, workers=settings.workers, level=settings.level_spec(),
        logs_dir=str(Path(settings.out) / "judged"),
    )  # fmt: skip
    try:
        config.validate()
        level_function(config.level)  # a missing or unusable R_phi version is said here
    except (ExploreConfigError, RewardModelError, StoreError) as error:
        print(f"koholint explore: {error}", file=sys.stderr)
        return None
    return config


def _summary(settings: ExploreCommandSettings, result: ExploreResult) -> dict[str, Any]:
    return {
        "schema_version": SUMMARY_SCHEMA_VERSION, "won": result.won, "seed": settings.seed,
        "workers": settings.workers, "start": settings.start, "level": settings.level,
        "level_encoding": settings.level_encoding, "level_bins": settings.level_bins,
        "judges_question": settings.judges_question,
        "judges_tie_weight": settings.judges_tie_weight,
        "reward_model": settings.reward_model or None, "env_steps": result.env_steps,
        "milestones": result.milestones, "cells": result.cells, "top_level": result.top_level,
        "seconds": round(result.seconds, 1),
        "trajectory_steps": len(result.trajectory) if result.trajectory else None,
        "refits": [asdict(refit) for refit in result.refits],
        "stalls": result.stalls,
    }  # fmt: skip


def _write_win(
    trajectory: bytes, start: str | None, settings: ExploreCommandSettings, shorten: Shortener
) -> dict[str, Any]:
    """win.actions, win.jsonl and (with ``shorten``) win-short.actions; what the summary
    says of them."""
    from koholint.explore.trajectory import write_trajectory

    out = Path(settings.out)
    (out / "win.actions").write_bytes(trajectory)
    check = write_trajectory(trajectory, out / "win.jsonl", start_state=start)
    written: dict[str, Any] = {"replay_wins": check.won}
    if settings.shorten:
        short = shorten(trajectory, start, settings)
        (out / "win-short.actions").write_bytes(short)
        written["shortened_steps"] = len(short)
    return written


def _print_refit(refit: Refit) -> None:
    outcome = refit.version if refit.state == "published" else refit.state
    accuracy = "-" if refit.accuracy is None else f"{refit.accuracy:.3f}"
    print(f"explore: refit {refit.round} at {refit.step} steps: {outcome}, {refit.pairs} pairs, "
          f"held-out accuracy {accuracy} ({refit.detail})", flush=True)  # fmt: skip


class _ProgressPrinter:
    """Prints one line every `every` env steps: the archive's best level, cells, milestones."""

    def __init__(self, *, every: int, quiet: bool) -> None:
        self.every, self.quiet, self._next = every, quiet, every

    def __call__(self, progress: Progress) -> None:
        if self.quiet or progress.env_steps < self._next:
            return
        self._next = progress.env_steps + self.every
        reached = ", ".join(f"{name}@{step}" for name, step in progress.milestones.items()
                            if step is not None) or "none"  # fmt: skip
        print(f"explore: {progress.env_steps:>9} steps  level {progress.top_level}  "
              f"cells {progress.cells:>6}  milestones {reached}", flush=True)  # fmt: skip

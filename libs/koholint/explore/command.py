"""``koholint explore``: run phase 1 until the cartridge is won, and keep the winning trajectory.

Writes into ``--out``: ``win.actions`` (the actions, one byte each), ``win.jsonl`` (the same
as a trajectory with a RAM hash per step: ``koholint replay`` checks it),
``summary.json`` (env steps to the win and to each milestone, cells, seconds) and, with
``--shorten``, ``win-short.actions`` (``koholint.explore.shorten``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING

from koholint.explore.levels import JUDGES, LEVELS, LevelSpec

if TYPE_CHECKING:
    from koholint.explore.explorer import Progress
    from koholint.reward.refit import Refit

SUMMARY_SCHEMA_VERSION = 1


def register(commands: argparse._SubParsersAction) -> None:
    explore = commands.add_parser(
        "explore", help="Go-Explore phase 1: explore without a policy until the game is won"
    )
    explore.add_argument("--seed", type=int, default=0, help="seed of the exploration (default 0)")
    explore.add_argument("--workers", type=int, default=os.cpu_count() or 1,
                         help="worker processes (default: one per core)")  # fmt: skip
    explore.add_argument("--max-env-steps", type=int, default=2_000_000,
                         help="step budget over all workers (default 2000000)")  # fmt: skip
    explore.add_argument("--start", choices=("start_of_play", "power_on"), default="start_of_play",
                         help="where the trajectory starts")  # fmt: skip
    explore.add_argument("--out", default="runs/explore", help="folder for the win and summary")
    explore.add_argument("--prefer-health", action="store_true",
                         help="per cell, keep the state with the most hearts before the fastest")  # fmt: skip
    explore.add_argument("--shorten", action="store_true",
                         help="also write win-short.actions: the win without the runs of actions "
                              "it did not need (a cleaner demonstration for robustify)")  # fmt: skip
    defaults = LevelSpec()
    explore.add_argument("--level", choices=LEVELS, default=defaults.level,
                         help="how far along a state is: the hand-written progress level "
                              "(default), none, the judges' R_phi (--reward-model), or an R_phi "
                              "the judges fit on the explorer's own cells as it goes (judges)")  # fmt: skip
    explore.add_argument("--reward-model", default="",
                         help="--level reward-model: the R_phi version to use")  # fmt: skip
    explore.add_argument("--store", default="",
                         help="--level reward-model: the store URL that holds the version; "
                              "judges: where the cells, scores and versions go")  # fmt: skip
    explore.add_argument("--level-step", type=float, default=defaults.level_step,
                         help="R_phi levels: standard deviations of R_phi per level")  # fmt: skip
    explore.add_argument("--refit-every", type=int, default=defaults.refit_every,
                         help="--level judges: env steps between refit rounds")  # fmt: skip
    explore.add_argument("--judges", choices=JUDGES, default=defaults.judges,
                         help="--level judges: the evaluator's backend that compares the cells")  # fmt: skip
    explore.add_argument("--noisy-accuracy", type=float, default=defaults.noisy_accuracy,
                         help="--judges noisy: the probability each answer is right")  # fmt: skip
    explore.add_argument("--level-encoding", default=None,
                         help="--level judges: what R_phi reads of a state: observation "
                              "(what the policy sees) or memory (that and how many "
                              f"rooms carry each room flag: visited, solved, opened; default "
                              f"{defaults.encoding})")  # fmt: skip
    explore.add_argument("--level-bins", type=int, default=None,
                         help="--level judges: 0 cuts R_phi in --level-step steps; N cuts it "
                              "at each refit into N levels holding equal shares of the "
                              f"archive's cells (restarts go to its best 1/N; default "
                              f"{defaults.level_bins})")  # fmt: skip
    explore.add_argument("--judges-question", default=None,
                         help="--level judges: what makes a cell's state further along for the "
                              "judges: progress+rooms (the progress level, rooms reached "
                              "breaking ties) or progress (the level alone); default "
                              f"{defaults.question}")  # fmt: skip
    explore.add_argument("--judges-tie-weight", type=float, default=None,
                         help="--level judges: how hard R_phi is pulled to one value on cells "
                              "the judges called the same (0 leaves ties out; default "
                              f"{defaults.tie_weight:g})")  # fmt: skip
    explore.add_argument("--level-base", type=float, default=None,
                         help="each level below the best known divides a cell's restart weight "
                              "by this (default 1000: restarts go to the best level)")  # fmt: skip
    explore.add_argument("--quiet", action="store_true", help="no progress lines")
    explore.set_defaults(handler=cmd_explore)


def cmd_explore(args: argparse.Namespace) -> int:
    from koholint.explore.explorer import ExploreConfig, ExploreConfigError, explore
    from koholint.explore.levels import level_function
    from koholint.explore.trajectory import write_trajectory
    from koholint.reward.model import RewardModelError
    from koholint.store import StoreError

    start = None if args.start == "power_on" else args.start
    judged_only = [flag for flag, value in (("--level-encoding", args.level_encoding),
                                            ("--level-bins", args.level_bins),
                                            ("--judges-question", args.judges_question),
                                            ("--judges-tie-weight", args.judges_tie_weight))
                   if value is not None]  # fmt: skip
    if judged_only and args.level != "judges":
        print(f"koholint explore: {' and '.join(judged_only)} set how the judges fit R_phi as "
              f"they explore: add --level judges (a reward-model version reads the encoding its "
              f"card names, in --level-step steps)", file=sys.stderr)  # fmt: skip
        return 2
    defaults = LevelSpec()
    encoding = defaults.encoding if args.level_encoding is None else args.level_encoding
    bins = defaults.level_bins if args.level_bins is None else args.level_bins
    question = defaults.question if args.judges_question is None else args.judges_question
    ties = defaults.tie_weight if args.judges_tie_weight is None else args.judges_tie_weight
    config = ExploreConfig(
        start_state=start, seed=args.seed, workers=args.workers,
        max_env_steps=args.max_env_steps, prefer_health=args.prefer_health,
        level=LevelSpec(args.level, args.reward_model, args.store, args.level_step,
                        args.refit_every, args.judges, args.noisy_accuracy, encoding, bins,
                        question, ties),
        logs_dir=str(Path(args.out) / "judged"),
        level_base=ExploreConfig.level_base if args.level_base is None else args.level_base,
    )  # fmt: skip
    try:
        config.validate()
        level_function(config.level)  # a missing or unusable R_phi version is said here
    except (ExploreConfigError, RewardModelError, StoreError) as error:
        print(f"koholint explore: {error}", file=sys.stderr)
        return 2
    printer = _ProgressPrinter(every=50_000, quiet=args.quiet)
    result = explore(config, printer, None if args.quiet else _print_refit)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    summary = {
        "schema_version": SUMMARY_SCHEMA_VERSION, "won": result.won, "seed": args.seed,
        "workers": args.workers, "start": args.start, "level": args.level,
        "level_encoding": encoding, "level_bins": bins, "judges_question": question,
        "judges_tie_weight": ties,
        "reward_model": args.reward_model or None, "env_steps": result.env_steps,
        "milestones": result.milestones, "cells": result.cells, "top_level": result.top_level,
        "seconds": round(result.seconds, 1),
        "trajectory_steps": len(result.trajectory) if result.trajectory else None,
        "refits": [asdict(refit) for refit in result.refits],
    }  # fmt: skip
    if result.trajectory is not None:
        (out / "win.actions").write_bytes(result.trajectory)
        check = write_trajectory(result.trajectory, out / "win.jsonl", start_state=start)
        summary["replay_wins"] = check.won
        if args.shorten:
            from koholint.explore.shorten import shorten, winner

            short = shorten(result.trajectory, winner(start)).actions
            (out / "win-short.actions").write_bytes(short)
            summary["shortened_steps"] = len(short)
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    verdict = f"won in {len(result.trajectory)} steps" if result.trajectory else "no win"
    print(f"{verdict} after {result.env_steps} env steps, {result.cells} cells, "
          f"{result.seconds:.0f} s; results in {out}/")  # fmt: skip
    return 0 if result.won else 1


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

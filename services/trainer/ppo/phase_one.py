"""Go-Explore phase 1 inside a run, and the shortening of its win.

``phase=explore`` (or ``both``) runs phase 1 (``koholint.explore``: no policy, worker
processes) before Ray starts and keeps the winning trajectory as ``win.actions`` in the run
folder (one action per byte, from ``start_of_play`` under hybrid control with the rules
planner); with ``explore.shorten``, the win shortened by the scripted passes
(``koholint.teachers.shorten``) as ``win-short.actions``, the trajectory phase 2 learns.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from koholint.explore import Progress
    from koholint.schemas.trainer import RunStatus
    from trainer.ppo.config import TrainConfig


def run_phase_one(
    config: TrainConfig,
    status: RunStatus,
    run_dir: Path,
    on_iteration: Callable[[RunStatus], None] | None,
) -> Path | None:
    """Explore until the first win (or the budget); the path of win.actions, or None."""
    from koholint.explore import ExploreConfig, explore
    from koholint.explore.trajectory import write_trajectory

    def progress(report: Progress) -> None:
        status.env_steps, status.archive_cells = report.env_steps, report.cells
        status.archive_level, status.explore_milestones = report.top_level, report.milestones
        if on_iteration:
            on_iteration(status)

    workers = max(1, config.num_env_runners)
    settings = ExploreConfig.of(config.explore, seed=config.seed, workers=workers)
    status.state = "running"
    result = explore(settings, progress)
    status.env_steps = result.env_steps  # the last progress report may predate the end
    summary = {"won": result.won, "env_steps": result.env_steps, "cells": result.cells,
               "milestones": result.milestones, "top_level": result.top_level,
               "stalls": result.stalls,
               "seconds": round(result.seconds, 1)}  # fmt: skip
    path = None
    if result.trajectory is not None:
        path = run_dir / "win.actions"
        path.write_bytes(result.trajectory)
        write_trajectory(result.trajectory, run_dir / "win.jsonl")
        if config.explore.shorten:
            path = _shortened(result.trajectory, settings, config, run_dir, status, summary)
    (run_dir / "explore.json").write_text(json.dumps(summary, indent=1))
    return path


def _shortened(trajectory: bytes, settings: Any, config: TrainConfig, run_dir: Path,
               status: RunStatus, summary: dict[str, Any]) -> Path:  # fmt: skip
    """The win without the loops and the runs of one action it did not need
    (win-short.actions); its replays' env steps are phase 1's too."""
    from koholint.teachers.shorten import shorten, winner

    check = winner(settings.start_state, settings.frame_skip, settings.planner,
                   config.explore.shorten_env_steps)  # fmt: skip
    short = shorten(trajectory, check, errands=config.explore.errands_first).actions
    status.env_steps += check.steps
    summary.update(shortened_steps=len(short), shorten_env_steps=check.steps,
                   total_env_steps=status.env_steps)  # fmt: skip
    path = run_dir / "win-short.actions"
    path.write_bytes(short)
    return path

"""The trainer's phases beyond plain PPO: Go-Explore phase 1, and robustification.

``phase=explore`` (or ``both``) runs phase 1 (``koholint.explore``: no policy, worker
processes) before Ray starts and keeps the winning trajectory as ``win.actions`` in the run
folder (one action per byte, from ``start_of_play`` under hybrid control with the rules
planner). ``phase=robustify`` (or ``both``, after phase 1) trains PPO on the backward
curriculum over that trajectory: the run's ``CurriculumActor`` (a named Ray actor, like the
Go-Explore archive's) replays it once into states every 8 steps and holds the
``LocalCurriculum``; each env's ``CurriculumWrapper`` asks it where to start and tells it
how each episode ended.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import ray

from koholint.explore.curriculum import SUCCESS_WINDOW, LocalCurriculum, Start
from koholint.explore.trajectory import winning_demo

if TYPE_CHECKING:
    from koholint.explore import Progress
    from koholint.schemas.trainer import RunStatus
    from trainer.ppo.config import Curriculum, TrainConfig

MAX_TRAJECTORY_BYTES = 1_000_000
logger = logging.getLogger(__name__)


DEMO_STATE_EVERY = 8
"""a start state every this many steps of the trajectory"""


def read_trajectory(path: str) -> bytes:
    """The winning actions; refuse a missing, empty, oversized or out-of-range file."""
    file = Path(path)
    if not file.is_file():
        raise ValueError(
            f"curriculum trajectory {path}: no such file; run `koholint explore` first"
        )
    actions = file.read_bytes()
    if not 0 < len(actions) <= MAX_TRAJECTORY_BYTES:
        raise ValueError(
            f"curriculum trajectory {path}: {len(actions)} actions, expected 1..{MAX_TRAJECTORY_BYTES}"
        )
    if max(actions) > 8:
        raise ValueError(f"curriculum trajectory {path}: action {max(actions)} is not in 0..8")
    return actions


def build_curriculum(
    settings: Curriculum,
    max_episode_steps: int,
    *,
    window: int = SUCCESS_WINDOW,
    every: int = DEMO_STATE_EVERY,
) -> LocalCurriculum:
    actions = read_trajectory(settings.trajectory)
    demo = winning_demo(actions, every=every, heal=settings.heal_starts)
    return LocalCurriculum(
        demo, len(actions), settings, window=window, max_episode_steps=max_episode_steps
    )


@ray.remote(num_cpus=0)
class CurriculumActor:
    """The run's curriculum, shared by every env runner."""

    def __init__(self, settings: Curriculum, max_episode_steps: int) -> None:
        self.curriculum = build_curriculum(settings, max_episode_steps)
        self.trajectory_sha256 = hashlib.sha256(read_trajectory(settings.trajectory)).hexdigest()

    def state(self) -> dict[str, Any]:
        """For the checkpoint: the position, and which trajectory it is a position on."""
        return {**self.curriculum.state(), "trajectory_sha256": self.trajectory_sha256}

    def restore(self, state: dict[str, Any]) -> bool:
        """Continue where a checkpoint's curriculum was; False (from the end) if it was over
        another trajectory."""
        if state.get("trajectory_sha256") != self.trajectory_sha256:
            logger.warning("the checkpoint's curriculum was over another trajectory: "
                           "starting from its end", extra={"event": "curriculum_not_restored"})  # fmt: skip
            return False
        self.curriculum.restore(state)
        return True

    def start(self, seed: int) -> Start:
        return self.curriculum.start(seed)

    def report(self, step: int, won: bool, reached: int = -1) -> None:
        self.curriculum.report(step, won, reached)

    def offer(self, level: int, state: bytes) -> None:
        self.curriculum.offer(level, state)

    def swarm_level(self) -> int:
        return self.curriculum.swarm_level()

    def position(self) -> dict[str, Any]:
        """For progress lines: the demo step episodes start from, and the success there."""
        curriculum = self.curriculum
        return {
            "start_step": curriculum.start_step, "demo_length": curriculum.demo_length,
            "success_rate": curriculum.success_rate(), "moves": len(curriculum.moves),
            "swarm_level": curriculum.swarm_level(), "pass": curriculum.pass_number,
        }  # fmt: skip


class RayCurriculumSource:
    """CurriculumSource over the CurriculumActor: reports and offers are sent without waiting."""

    def __init__(self, actor: Any) -> None:
        self.actor = actor

    def start(self, seed: int) -> Start:
        return ray.get(self.actor.start.remote(seed))  # type: ignore[no-any-return]

    def report(self, step: int, won: bool, reached: int = -1) -> None:
        self.actor.report.remote(step, won, reached)

    def offer(self, level: int, state: bytes) -> None:
        self.actor.offer.remote(level, state)

    def swarm_level(self) -> int:
        return ray.get(self.actor.swarm_level.remote())  # type: ignore[no-any-return]


def curriculum_actor_name(run: str) -> str:
    return f"curriculum-{run}"


def start_curriculum(config: TrainConfig) -> Any:
    """The run's CurriculumActor when it robustifies (call inside the run's Ray), else None."""
    if config.phase not in ("robustify", "both"):
        return None
    name = curriculum_actor_name(config.run)
    return CurriculumActor.options(name=name).remote(  # type: ignore[attr-defined]
        config.curriculum, config.env.max_episode_steps
    )


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
    settings = ExploreConfig(seed=config.seed, workers=workers, max_env_steps=config.explore_env_steps,
                             prefer_health=config.explore_prefer_health)  # fmt: skip
    status.state = "running"
    result = explore(settings, progress)
    status.env_steps = result.env_steps  # the last progress report may predate the end
    summary = {"won": result.won, "env_steps": result.env_steps, "cells": result.cells,
               "milestones": result.milestones, "seconds": round(result.seconds, 1)}  # fmt: skip
    path = None
    if result.trajectory is not None:
        path = run_dir / "win.actions"
        path.write_bytes(result.trajectory)
        write_trajectory(result.trajectory, run_dir / "win.jsonl")
        if config.explore_shorten:
            path = _shortened(result.trajectory, settings, config, run_dir, status, summary)
    (run_dir / "explore.json").write_text(json.dumps(summary, indent=1))
    return path


def _shortened(trajectory: bytes, settings: Any, config: TrainConfig, run_dir: Path,
               status: RunStatus, summary: dict[str, Any]) -> Path:  # fmt: skip
    """The win without the loops and the runs of one action it did not need
    (win-short.actions); its replays' env steps are phase 1's too."""
    from koholint.explore.shorten import shorten, winner

    check = winner(settings.start_state, settings.frame_skip, settings.planner,
                   config.explore_shorten_env_steps)  # fmt: skip
    short = shorten(
        trajectory, check, fights=config.explore_clean_fights, errands=config.explore_errands_first
    ).actions
    status.env_steps += check.steps
    summary.update(shortened_steps=len(short), shorten_env_steps=check.steps,
                   total_env_steps=status.env_steps)  # fmt: skip
    path = run_dir / "win-short.actions"
    path.write_bytes(short)
    return path

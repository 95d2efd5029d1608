"""Phase 1 of Go-Explore: explore the cartridge with no policy until the game is won.

Usage::

    from koholint.explore import ExploreConfig, explore

    result = explore(ExploreConfig(seed=0, workers=2, max_env_steps=2_000_000))
    result.trajectory  # the actions (one byte each) from start_of_play to the credits

The loop: draw cells from the archive (weights favour the highest progress level, rarely
chosen and newly found cells: ``koholint.explore.archive``), send each to a worker that restores
its state and explores at random with action repeats (``koholint.explore.runner``), and add
the cells the runs found — with the actions that reach them from the start — when they are
new or better (a higher level, then fewer steps). Workers are processes, one per core; the
archive lives here, in the parent, and each batch carries the fewest steps known per cell so
workers save only states worth keeping; their batches are merged in the order they were
sent, so a seed reproduces whatever the timing (per number of workers). The loop stops at
the first credits state (or when the step budget is spent), keeping the full action
trajectory of the win.

A stall: when the best level has gained no new cell for ``stall_env_steps``, cells are drawn
with ``stall_level_base`` (1: every level alike) until it gains one (or a better level is
found). A level gained out of the route's order (puzzles solved before the sword, the only
way past the enemies that guard the keys) is a dead end whose cells run out, and it would
otherwise keep restarts away from the cells that can fetch what the route needs; a hard
frontier that still grows (a fight, each enemy beaten a new cell) is not a stall. The result
lists each stall (``ExploreResult.stalls``).

Only the start state (``start_of_play`` or power-on) and states found by the loop are used:
no walkthrough, no recorder, no other save state.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass, field
from multiprocessing import get_context
from multiprocessing.util import Finalize
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import ValidationError

from koholint.env.encoding import encoder
from koholint.env.zelda import MILESTONES, ZeldaEnv
from koholint.explore.archive import Archive, Cell
from koholint.explore.cells import cell_of
from koholint.explore.judging import JudgedLevels, judged_levels
from koholint.explore.levels import LevelError, LevelSpec, level_function
from koholint.explore.runner import (
    ALL_ACTIONS,
    PLAY_ACTIONS,
    Runner,
    RunReport,
    RunTask,
    exploration_env,
)
from koholint.explore.settings import ExploreSettings
from koholint.reward.refit import Refit
from koholint.schemas.env import MAX_FRAME_SKIP

MAX_WORKERS = 64
_DEFAULTS = ExploreSettings()


class ExploreConfigError(ValueError):
    """A phase-1 setting that cannot work; the message names it and the fix."""


@dataclass
class ExploreConfig:
    """A phase-1 run: its settings (``ExploreSettings``, declared there with their defaults
    and bounds) and where, with what seed and how many workers it runs."""

    start_state: str | None = "start_of_play"
    """where every trajectory starts: 'start_of_play' or None (power-on)"""
    seed: int = 0
    """seeds cell selection and the workers' random actions"""
    max_env_steps: int = _DEFAULTS.max_env_steps
    workers: int = 1
    """worker processes (one per core); 1 runs in this process"""
    run_steps: int = _DEFAULTS.run_steps
    runs_per_batch: int = _DEFAULTS.runs_per_batch
    repeat_probability: float = _DEFAULTS.repeat_probability
    tile_bin: int = _DEFAULTS.tile_bin
    level_base: float = _DEFAULTS.level_base
    stall_env_steps: int = _DEFAULTS.stall_env_steps
    stall_level_base: float = _DEFAULTS.stall_level_base
    count_power: float = _DEFAULTS.count_power
    frame_skip: int = 4
    """frames per step, as the environment the policy will play"""
    planner: bool = True
    """hybrid control with the rules planner: its macros play dialogs and the block puzzle
    where the policy switch fires (the trained policy gets the same)"""
    stop_at_win: bool = True
    prefer_health: bool = _DEFAULTS.prefer_health
    level: LevelSpec = field(default_factory=LevelSpec)
    """how far along a state is: the hand-written progress level, none, or the judges' R_phi
    (``koholint.explore.levels``), fitted beforehand or on the explorer's own cells (judges)"""
    logs_dir: str = ""
    """``judges`` level: where the refit rounds' logs go (default: a new temporary folder)"""

    @classmethod
    def of(cls, settings: ExploreSettings, **run: Any) -> ExploreConfig:
        """A run of `settings` (the shortening's are the caller's), with `run`'s start, seed,
        workers, level, ..."""
        explored = {name: getattr(settings, name) for name in _EXPLORED}
        return cls(**explored, **run)

    def validate(self) -> None:
        if self.start_state not in ("start_of_play", None):
            raise ExploreConfigError(
                f"start_state={self.start_state!r}: phase 1 starts from 'start_of_play' or None "
                "(power-on); other save states are not the system's own finds"
            )
        checks = [
            ("workers", self.workers, 1, MAX_WORKERS),
            ("frame_skip", self.frame_skip, 1, MAX_FRAME_SKIP),
        ]
        for name, value, low, high in checks:
            if not low <= value <= high:
                raise ExploreConfigError(f"{name}={value}: use {low}..{high}")
        try:
            ExploreSettings(**{name: getattr(self, name) for name in _EXPLORED})
        except ValidationError as error:
            problem = error.errors()[0]
            name = str(problem["loc"][0])
            raise ExploreConfigError(
                f"{name}={getattr(self, name)}: {problem['msg'].lower()}"
            ) from None
        try:
            self.level.validate()
        except LevelError as error:
            raise ExploreConfigError(str(error)) from None


_EXPLORED = tuple(
    name for name in ExploreSettings.model_fields if name in ExploreConfig.__dataclass_fields__
)
"""The settings a phase-1 run reads (the rest are the shortening's)."""


@dataclass
class ExploreResult:
    won: bool
    env_steps: int
    """steps run over all workers"""
    trajectory: bytes | None
    """the winning actions from the start (one byte per step), when won"""
    milestones: dict[str, int | None]
    """env steps run when each milestone first appeared (None: not reached)"""
    cells: int
    top_level: int
    seconds: float
    archive: Archive = field(repr=False)
    refits: list[Refit] = field(default_factory=list)
    """the ``judges`` level's refit rounds"""
    stalls: list[tuple[int, int | None]] = field(default_factory=list)
    """(env steps when the best level stalled, when a new cell there ended it or None)"""


@dataclass
class Progress:
    """What the progress callback sees after each batch."""

    env_steps: int
    cells: int
    top_level: int
    milestones: dict[str, int | None]


class _Batch:
    """A batch in flight: the tasks, the trajectory behind each task's state and the state id
    of the cell each restarts from."""

    def __init__(self, tasks: list[RunTask], trajectories: list[bytes], parents: list[str]) -> None:
        self.tasks = tasks
        self.trajectories = trajectories
        self.parents = parents


class Explorer:
    """The phase-1 loop over one archive (see the module docstring)."""

    def __init__(
        self,
        config: ExploreConfig,
        *,
        archive: Archive | None = None,
        on_progress: Callable[[Progress], None] | None = None,
        on_refit: Callable[[Refit], None] | None = None,
    ) -> None:
        config.validate()
        self.config = config
        if archive is None:
            archive = Archive(
                max_cells=1_000_000, level_base=config.level_base, count_power=config.count_power
            )
        self.archive = archive
        self.on_progress = on_progress
        self.rng = np.random.default_rng(config.seed)
        self.env_steps = 0
        self._frontier_grew_at = 0
        """env steps when the archive last gained a cell at its best level"""
        self.stalls: list[tuple[int, int | None]] = []
        self._reserved = 0  # steps of the batches in flight, at most run_steps per run
        self.milestones: dict[str, int | None] = dict.fromkeys(MILESTONES)
        self.win: bytes | None = None
        self.judged = _judged_levels(config)
        self.on_refit = on_refit

    def run(self) -> ExploreResult:
        started = time.perf_counter()
        if not len(self.archive):
            self._add_start()
        if self.config.workers == 1:
            self._run_inline()
        else:
            self._run_pool()
        return ExploreResult(
            won=self.win is not None, env_steps=self.env_steps, trajectory=self.win,
            milestones=dict(self.milestones), cells=len(self.archive),
            top_level=self.archive.top_level, seconds=time.perf_counter() - started,
            archive=self.archive, refits=self.judged.rounds if self.judged is not None else [],
            stalls=list(self.stalls),
        )  # fmt: skip

    # -- the loop -------------------------------------------------------------
    @property
    def level_spec(self) -> LevelSpec:
        """The level the workers compute for new states now."""
        return self.judged.current if self.judged is not None else self.config.level

    def _refit_due(self) -> bool:
        return self.judged is not None and self.judged.due(self.env_steps) and not self._done()

    def _refit(self) -> None:
        """A judged round (``koholint.explore.judging``); no batch is in flight."""
        assert self.judged is not None
        refit = self.judged.refit(self.archive, self.env_steps)
        if self.on_refit is not None:
            self.on_refit(refit)

    def _done(self) -> bool:
        """Whether to send no more runs: won, or the budget is spent or reserved."""
        return (self.win is not None and self.config.stop_at_win) or (
            self.env_steps + self._reserved >= self.config.max_env_steps
        )

    def _run_inline(self) -> None:
        runner, level = _make_runner(self.config), self.config.level
        try:
            while not self._done():
                if self._refit_due():
                    self._refit()
                if self.level_spec != level:  # a refit published a new R_phi version
                    level = self.level_spec
                    runner.level_of = level_function(level)
                batch = self._next_batch()
                known = self.archive.best_known()
                reports = [runner.run(task, known) for task in batch.tasks]
                self._merge(batch, reports)
        finally:
            runner.close()

    def _run_pool(self) -> None:
        context = get_context("spawn")  # PyBoy in a forked child of a threaded parent can hang
        workers = self.config.workers
        with ProcessPoolExecutor(
            workers, mp_context=context, initializer=_init_worker, initargs=(self.config,)
        ) as pool:
            pending: dict[Future[list[RunReport]], _Batch] = {}
            while not self._done() or pending:
                if self._refit_due() and not pending:
                    self._refit()
                while not self._done() and not self._refit_due() and len(pending) < 2 * workers:
                    batch = self._next_batch()
                    future = pool.submit(_run_batch, batch.tasks, self.archive.best_known(),
                                         self.level_spec)  # fmt: skip
                    pending[future] = batch
                # The oldest batch first, whichever finished first: the archive then sees the
                # same batches in the same order on every run of a seed (a run with 2 workers
                # reproduces), and the queued batches keep both workers busy meanwhile.
                oldest = next(iter(pending))
                self._merge(pending.pop(oldest), oldest.result())

    def _next_batch(self) -> _Batch:
        """Draw cells and reserve their steps in the budget (the last run may pass it by less
        than run_steps)."""
        config = self.config
        left = config.max_env_steps - self.env_steps - self._reserved
        runs = max(1, min(config.runs_per_batch, left // config.run_steps))
        tasks, trajectories, parents = [], [], []
        level_base = config.stall_level_base if self._stalled() else config.level_base
        for _ in range(runs):
            record = self.archive.select(self.rng, level_base)
            seed = int(self.rng.integers(0, 2**63 - 1))
            tasks.append(RunTask(self.archive.state(record), record.steps, seed, record.level))
            trajectories.append(self.archive.trajectory(record))
            parents.append(record.state_id)
        self._reserved += runs * config.run_steps
        return _Batch(tasks, trajectories, parents)

    def _merge(self, batch: _Batch, reports: list[RunReport]) -> None:
        """Add what the runs found; count milestones at the step they were reached."""
        self._reserved -= len(batch.tasks) * self.config.run_steps
        offset, grew = self.env_steps, False
        runs = zip(batch.tasks, batch.trajectories, batch.parents, reports, strict=True)
        for task, parent, parent_id, report in runs:
            for found in report.found:
                trajectory = parent + report.actions[: found.length]
                new = found.cell not in self.archive.cells
                kept = self.archive.observe(
                    found.cell, task.steps + found.length, 0.0, _constant(found.state),
                    level=found.level, trajectory=_constant(trajectory), score=found.score,
                )  # fmt: skip
                grew |= kept and new and found.level >= self.archive.top_level
                if kept and self.judged is not None and found.facts is not None:
                    state_id = self.archive.cells[found.cell].state_id
                    self.judged.add(state_id, found.observation, found.facts, parent_id)
            for name, length in report.milestones.items():
                reached = offset + length
                if self.milestones.get(name) is None or reached < self.milestones[name]:  # type: ignore[operator]
                    self.milestones[name] = reached
            if report.win is not None and self.win is None:
                self.win = parent + report.actions[: report.win]
            offset += len(report.actions)
        self.env_steps = offset
        self._track_stall(grew=grew)
        if self.on_progress is not None:
            self.on_progress(
                Progress(self.env_steps, len(self.archive), self.archive.top_level,
                         dict(self.milestones))
            )  # fmt: skip

    def _stalled(self) -> bool:
        stall = self.config.stall_env_steps
        return stall > 0 and self.env_steps - self._frontier_grew_at >= stall

    def _track_stall(self, *, grew: bool) -> None:
        """Note when the best level gained a cell, and when a stall began and ended."""
        if grew:
            if self.stalls and self.stalls[-1][1] is None:
                self.stalls[-1] = (self.stalls[-1][0], self.env_steps)
            self._frontier_grew_at = self.env_steps
        elif self._stalled() and (not self.stalls or self.stalls[-1][1] is not None):
            self.stalls.append((self.env_steps, None))

    def _add_start(self) -> None:
        """The first cell: the configured start, reached in 0 steps by no actions."""
        env = exploration_env(
            start_state=self.config.start_state, frame_skip=self.config.frame_skip,
            planner=False,
        )  # fmt: skip
        try:
            env.reset(seed=0)
            zelda: ZeldaEnv = env.unwrapped  # type: ignore[assignment]
            cell, level = cell_of(zelda.raw_state, self.config.tile_bin,
                                  level_function(self.config.level))  # fmt: skip
            state = zelda.gameboy.save_state()
            self.archive.observe(cell, 0, 0.0, _constant(state), level=level,
                                 trajectory=_constant(b""))  # fmt: skip
            if self.judged is not None:
                self.judged.add(self.archive.cells[cell].state_id,
                                encoder(self.config.level.encoding)(zelda.raw_state).tobytes(),
                                zelda.structured_state(), "")  # fmt: skip
        finally:
            env.close()


def explore(
    config: ExploreConfig,
    on_progress: Callable[[Progress], None] | None = None,
    on_refit: Callable[[Refit], None] | None = None,
) -> ExploreResult:
    """Run phase 1 (see the module docstring); `on_refit` hears each ``judges`` round."""
    return Explorer(config, on_progress=on_progress, on_refit=on_refit).run()


def _constant(value: bytes) -> Callable[[], bytes]:
    return lambda: value


def _make_runner(config: ExploreConfig) -> Runner:
    return Runner(
        frame_skip=config.frame_skip, tile_bin=config.tile_bin, run_steps=config.run_steps,
        repeat_probability=config.repeat_probability, planner=config.planner,
        actions=ALL_ACTIONS if config.start_state is None else PLAY_ACTIONS,
        prefer_health=config.prefer_health, level_of=level_function(config.level),
        ratchet=config.level.ratchets, record_states=_recorded_encoding(config.level),
    )  # fmt: skip


def _recorded_encoding(level: LevelSpec) -> str | None:
    """The encoding the judged cells' observations are recorded in (None: not recorded)."""
    return level.encoding if level.level == "judges" else None


_WORKER_RUNNER: Runner | None = None
_WORKER_LEVEL: LevelSpec | None = None


def _init_worker(config: ExploreConfig) -> None:
    global _WORKER_RUNNER, _WORKER_LEVEL
    _WORKER_RUNNER, _WORKER_LEVEL = _make_runner(config), config.level
    # Stop PyBoy before the worker's interpreter tears down (else it prints errors at exit).
    Finalize(_WORKER_RUNNER, _WORKER_RUNNER.close, exitpriority=10)


def _run_batch(
    tasks: list[RunTask], known: dict[Cell, tuple[float, int]], level: LevelSpec
) -> list[RunReport]:
    global _WORKER_LEVEL
    if _WORKER_RUNNER is None:
        raise RuntimeError("worker not initialised: run batches through Explorer's pool")
    if level != _WORKER_LEVEL:  # a judged refit published a new R_phi version
        _WORKER_RUNNER.level_of, _WORKER_LEVEL = level_function(level), level
    return [_WORKER_RUNNER.run(task, known) for task in tasks]


def _judged_levels(config: ExploreConfig) -> JudgedLevels | None:
    if config.level.level != "judges":
        return None
    logs = (
        Path(config.logs_dir)
        if config.logs_dir
        else Path(tempfile.mkdtemp(prefix="koholint-judged-"))
    )
    run = f"explore-s{config.seed}-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}"
    return judged_levels(config.level, run=run, logs=logs, seed=config.seed)


__all__ = [
    "ExploreConfig",
    "ExploreConfigError",
    "ExploreResult",
    "Explorer",
    "Progress",
    "explore",
]

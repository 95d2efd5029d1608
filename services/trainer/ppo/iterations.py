"""The iteration loop: RLlib trains one iteration at a time until the run has its env steps
or is stopped.

Between iterations a new reward-model version reaches the envs; after each, the run's
status and learning curve are brought up to date from RLlib's result and the run's actors,
and every ``checkpoint_every_iterations``-th iteration is checkpointed, as is the last.
When an evaluation is due (evaluation.py) the policy is played on its own; one that wins
often enough ends the run. When a DAgger round is due (``imitation.correct_every_env_steps``)
the teachers label the policy's own play and the cloning goes on.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from koholint.env.export import EXPORT_COUNTS
from koholint.env.zelda import MILESTONES
from koholint.schemas.trainer import RunStatus
from trainer.ppo.actors import RunActors
from trainer.ppo.checkpoints import Checkpoints
from trainer.ppo.config import TrainConfig
from trainer.ppo.curve import LearningCurve
from trainer.ppo.evaluation import PolicyEvaluator
from trainer.ppo.rllib.warm_start import DaggerRounds
from trainer.ppo.shaping import ShapingCounts

OnIteration = Callable[[RunStatus], None]


class IterationLoop:
    """Trains `algo` on, keeping `status` and `curve` current; `resumed_steps` are the env
    steps the run had at its start (a resumed run's), not sampled by this process."""

    def __init__(self, algo: Any, config: TrainConfig, status: RunStatus, curve: LearningCurve,
                 actors: RunActors, checkpoints: Checkpoints, shaping: ShapingCounts | None,
                 resumed_steps: int, evaluator: PolicyEvaluator | None = None,
                 dagger: DaggerRounds | None = None) -> None:  # fmt: skip
        self.algo, self.config, self.status, self.curve = algo, config, status, curve
        self.actors, self.checkpoints, self.shaping = actors, checkpoints, shaping
        self.resumed_steps, self.evaluator, self.dagger = resumed_steps, evaluator, dagger
        self.won = False
        """whether an evaluation reached evaluation.stop_at_win_rate (the run ended on it)"""

    def run(self, stop: threading.Event, on_iteration: OnIteration | None) -> None:
        """Iterate until the run's env steps are sampled, `stop` is set or an evaluation
        wins often enough; checkpoint last."""
        started, last_saved = time.perf_counter(), self.status.env_steps
        evaluating = 0.0  # seconds spent evaluating: the speed is training's
        while (not stop.is_set() and not self.won
               and self.status.env_steps_in_all < self.config.total_env_steps):  # fmt: skip
            self._iterate()
            self._measure_speed(time.perf_counter() - started - evaluating)
            if self.evaluator and self.evaluator.due(self.status.env_steps):
                began = time.perf_counter()
                self.won = self.evaluator.won(self.evaluator.evaluate(self.algo, self.status))
                evaluating += time.perf_counter() - began
            if self.dagger and not self.won and self.dagger.due(self.status.env_steps):
                began = time.perf_counter()
                self._correct(self.dagger)
                evaluating += time.perf_counter() - began
            if self.status.iterations % self.config.checkpoint_every_iterations == 0:
                self._checkpoint()
                last_saved = self.status.env_steps
            if on_iteration:
                on_iteration(self.status)
        if self.status.env_steps != last_saved:
            self._checkpoint()

    def _iterate(self) -> None:
        if self.shaping:  # between iterations: a new version reaches the envs
            self.shaping.before_iteration(self.algo)
        read_result(self.algo.train(), self.status, frame_skip=self.config.env.frame_skip)
        self.status.archive_cells = self.actors.archive_cells()
        position = self.actors.curriculum_position()
        if position is not None:
            self.status.curriculum = position
        self.curve.add(self.status)
        if self.shaping:
            report = self.shaping.after_iteration(self.algo)
            self.status.reward_model = report.version
            self.status.shaped_steps = report.steps_by_version

    def _correct(self, dagger: DaggerRounds) -> None:
        """A DAgger round; its emulator work counts with the teachers'."""
        start = self.status.curriculum.get("start_step")
        route = None if start is None else int(start)
        done = dagger.correct(self.algo, self.status.env_steps, route=route)
        other = self.status.other_work
        other["teachers"] = other.get("teachers", 0) + int(done["env_steps"])

    def _measure_speed(self, elapsed: float) -> None:
        # Steps this process sampled: a resumed run's lifetime count starts at the checkpoint.
        sampled = self.status.env_steps - self.resumed_steps
        self.status.steps_per_second = sampled / elapsed if elapsed else 0.0

    def _checkpoint(self) -> None:
        metrics = self.shaping.metrics() if self.shaping else {}
        self.checkpoints.save(self.algo, self.status, self.curve, metrics)


def read_result(result: dict[str, Any], status: RunStatus, *, frame_skip: int = 1) -> None:
    """An iteration's count and what RLlib's result says of it: env steps, episode metrics,
    milestones reached, segments exported, the planner's macro work."""
    runners = result.get("env_runners", {})
    frames, steps = (_number(runners.get(key)) for key in ("emulator_frames", "episode_steps"))
    if frames is not None and steps is not None:  # ended episodes' frames beyond their steps
        status.other_work["planner_macros"] = max(0, int(frames) // frame_skip - int(steps))
    status.iterations += 1
    status.env_steps = int(runners.get("num_env_steps_sampled_lifetime", status.env_steps))
    # An iteration in which no episode ended reports no episode metrics: keep the last.
    for name, key in (("episode_return_mean", "episode_return_mean"), ("rooms_mean", "rooms"),
                      ("cells_mean", "cells"), ("win_rate", "won")):  # fmt: skip
        value = _number(runners.get(key))
        if value is not None:
            setattr(status, name, value)
    for milestone in MILESTONES:
        value = _number(runners.get(f"reached_{milestone}"))
        if value is not None:
            status.reached[milestone] = max(status.reached.get(milestone, 0.0), value)
            status.reached_last[milestone] = value
    for name in EXPORT_COUNTS:
        value = _number(runners.get(f"export_segments_{name}"))
        if value is not None:
            status.export[name] = int(value)
    waited = _number(runners.get("export_wait_seconds"))
    if waited is not None:
        status.export_wait_seconds = waited


def _number(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return None if number != number else number  # NaN: no episode ended yet

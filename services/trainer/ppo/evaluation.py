"""Evaluation during training: the policy played on its own, from where a player starts.

After the first iteration past each multiple of ``evaluation.every_env_steps``, the
learner's policy network is written as the small policy file ``koholint play`` reads
(``<run_dir>/evaluation/policy``; each result is appended to ``evaluations.jsonl`` beside
it and to the run status) and played for ``evaluation.episodes`` episodes (seeds from
``evaluation.seed`` on) in worker processes, from ``evaluation.start`` (power-on by default) with sticky
actions and the run's planner (a language-model planner is played with the rules: the same
switch and macros). The runners wait meanwhile; the evaluation's emulator work is not
training and is counted apart (``status.other_work["evaluation"]``). When an evaluation wins
at least ``evaluation.stop_at_win_rate`` of its episodes (and, with
``evaluation.confirm_episodes``, as many of a second block of episode seeds from the same start:
one lucky block cannot stop the run; and, with ``evaluation.confirm_start``, an evaluation
from there too), its policy is kept as
``<run_dir>/winning-policy`` with the run's total env steps (phase 1's and the training
phase's) in its metadata, the run stops, and the policy is played again on
``evaluation.report_episodes`` fresh episodes (seeds from ``evaluation.report_seed``, never
the stop rule's) from each of those starts: the stop rule's figure chose the policy, the
fresh one reports it (``status.reports``, ``evaluation/reports.jsonl``).
"""

from __future__ import annotations

import json
import logging
import shutil
import time
from pathlib import Path
from typing import Any

from ray.rllib.core import DEFAULT_MODULE_ID

from koholint.baselines.trained import PLAY_PLANNERS, PlaySettings, load_policy, play_policy
from koholint.schemas.trainer import MAX_EVALUATIONS_KEPT, PolicyEvaluation, RunStatus
from trainer.policy_export import policy_from_state
from trainer.ppo.config import Block, TrainConfig

logger = logging.getLogger("trainer.ppo.evaluation")
MODULE_ID = DEFAULT_MODULE_ID
WINNING_POLICY = "winning-policy"


class PolicyEvaluator:
    """Decides when the run's policy is played, plays it, and says whether the run is done."""

    def __init__(self, config: TrainConfig, run_dir: Path, env_steps: int) -> None:
        self.config, self.settings, self.run_dir = config, config.evaluation, run_dir
        every = self.settings.every_env_steps
        self._next = (env_steps // every + 1) * every if every else 0

    @property
    def enabled(self) -> bool:
        return bool(self.settings.every_env_steps)

    def due(self, env_steps: int) -> bool:
        return self.enabled and env_steps >= self._next

    def evaluate(self, algo: Any, status: RunStatus) -> PolicyEvaluation:
        """Play the learner's current policy; the record is appended to `status`."""
        every = self.settings.every_env_steps
        self._next = (status.env_steps // every + 1) * every
        total = status.env_steps_in_all
        folder = self.run_dir / "evaluation" / "policy"
        state = algo.learner_group.get_weights([MODULE_ID])[MODULE_ID]
        policy_from_state(
            state, folder, self.config.model_dump(mode="json"), status.env_steps,
            where=f"run {self.config.run} at {status.env_steps} env steps",
            extra_source={"total_env_steps": total,
                          "phase_one_env_steps": status.phase_one_env_steps},
        )  # fmt: skip
        record = self._play(folder, self.settings.start, status, total)
        if self.won(record) and self.settings.confirm_episodes:
            record = self._play(folder, self.settings.start, status, total, block="confirm")
        if self.won(record) and self.settings.confirm_start:
            record = self._play(folder, self.settings.confirm_start, status, total)
        if self.won(record):
            winner = self.run_dir / WINNING_POLICY
            shutil.rmtree(winner, ignore_errors=True)
            shutil.copytree(folder, winner)
            _add_work(winner, status)
            self.report(winner, status, total)
        return record

    def report(self, folder: Path, status: RunStatus, total: int) -> None:
        """The winning policy played on fresh seeds from each start the stop rule judged it
        on: the figures a report quotes (``status.reports``, ``reports.jsonl``)."""
        if not self.settings.report_episodes:
            return
        for start in filter(None, (self.settings.start, self.settings.confirm_start)):
            record = self._play(folder, start, status, total, block="report")
            status.reports = [*status.reports, record][-8:]

    def _play(self, folder: Path, start: str, status: RunStatus, total: int, *,
              block: Block = "stop") -> PolicyEvaluation:  # fmt: skip
        """One evaluation of the policy in `folder` from `start` on `block`'s episode seeds,
        appended to `status` (a report's, on the fresh seeds, apart); its work is counted."""
        started = time.perf_counter()
        report = block == "report"
        settings = self.play_settings(start, block=block)
        played = play_policy(load_policy(folder), settings)
        frame_skip = max(1, played.frame_skip)
        record = PolicyEvaluation(
            env_steps=status.env_steps, total_env_steps=total, start=played.start,
            episodes=len(played.episodes), wins=played.wins, win_rate=played.win_rate,
            interval=_rounded(played.interval()), seconds=round(time.perf_counter() - started, 1),
            first_seed=settings.seed,
            emulator_steps=sum(episode.frames for episode in played.episodes) // frame_skip,
        )  # fmt: skip
        status.other_work["evaluation"] = (
            status.other_work.get("evaluation", 0) + record.emulator_steps
        )
        log_name = "reports.jsonl" if report else "evaluations.jsonl"
        if not report:
            status.evaluations = [*status.evaluations, record][-MAX_EVALUATIONS_KEPT:]
        with (self.run_dir / "evaluation" / log_name).open("a") as log:
            log.write(record.model_dump_json() + "\n")
        logger.info(
            "evaluation at %d env steps (%d in total): %d of %d won from %s",
            record.env_steps, total, record.wins, record.episodes, record.start,
            extra={"event": "evaluation", "win_rate": record.win_rate},
        )  # fmt: skip
        return record

    def won(self, record: PolicyEvaluation) -> bool:
        """Whether the run has what it trains for and may stop."""
        goal = self.settings.stop_at_win_rate
        return bool(goal) and record.win_rate >= goal

    def play_settings(self, start: str | None = None, *, block: Block = "stop") -> PlaySettings:
        """How an evaluation plays: the stop rule's episodes, its confirmation's second block,
        or a report's fresh ones."""
        planner = self.config.planner if self.config.planner in PLAY_PLANNERS else "rules"
        settings, seeds = self.settings, self.settings.seeds(block)
        return PlaySettings(
            start=start or settings.start, episodes=len(seeds), seed=seeds.start,
            sticky=settings.sticky, planner=planner, workers=settings.processes,
        )  # fmt: skip


def _add_work(folder: Path, status: RunStatus) -> None:
    """Write the emulator's work that made the policy into its metadata: the work beside the
    env steps so far (the stop rule's evaluations included, the reports not) and the sum."""
    path = folder / "policy.json"
    document = json.loads(path.read_text())
    document["source"].update(other_work=dict(status.other_work),
                              emulator_steps_in_all=status.emulator_steps_in_all)  # fmt: skip
    path.write_text(json.dumps(document, indent=1))


def _rounded(interval: tuple[float, float]) -> tuple[float, float]:
    """The Wilson bounds to 4 places (its 0 comes out of the formula as 3e-18)."""
    low, high = interval
    return round(low, 4), round(high, 4)

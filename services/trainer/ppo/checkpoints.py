"""A run's checkpoints: saved to the store and listed in the run's ledger, and restored.

A checkpoint is RLlib's algorithm state plus the run's own (``RUN_STATE_FILE``: iterations,
phase 1's env steps, the learning curve so far, the settings, the curriculum's position) and
a small policy file for ``koholint play``; the ledger records it with the metrics at save
time. With every checkpoint the Go-Explore archive is saved too. A resumed run goes on from
a checkpoint's weights, step count, iterations, curve and curriculum position.
"""

from __future__ import annotations

import json
import logging
import tempfile
from pathlib import Path
from typing import Any

from koholint.schemas.trainer import CheckpointRecord, RunStatus
from koholint.store import ObjectStore
from trainer.ledger import RUN_STATE_FILE, CheckpointLedger
from trainer.ppo.actors import RunActors
from trainer.ppo.config import TrainConfig
from trainer.ppo.curve import LearningCurve

logger = logging.getLogger("trainer.ppo.checkpoints")


class Checkpoints:
    """The checkpoints of one run, in `store` under its ledger; `run_dir` holds the files
    while they are written or read."""

    def __init__(
        self, store: ObjectStore, config: TrainConfig, run_dir: Path, actors: RunActors
    ) -> None:
        self.store, self.config, self.run_dir, self.actors = store, config, run_dir, actors
        self.ledger = CheckpointLedger(store, config.run)

    def save(
        self, algo: Any, status: RunStatus, curve: LearningCurve, metrics: dict[str, float]
    ) -> None:
        """A checkpoint at the status's env steps, in the ledger with the status's metrics
        and `metrics` besides; the archive saved with it."""
        with tempfile.TemporaryDirectory(dir=self.run_dir) as directory:
            folder = Path(directory)
            algo.save_to_path(directory)
            settings = self.config.model_dump(mode="json")
            state = {"iterations": status.iterations, "curve": curve.points, "config": settings,
                     "phase_one_env_steps": status.phase_one_env_steps}  # fmt: skip
            curriculum = self.actors.curriculum_state()
            if curriculum is not None:  # a resumed run goes on from here, not the end
                state["curriculum"] = curriculum
            (folder / RUN_STATE_FILE).write_text(json.dumps(state))
            _write_policy_file(folder, settings, status.env_steps)
            self.ledger.record(status.env_steps, folder, {**_ledger_metrics(status), **metrics})
        self.actors.save_archive()
        status.checkpoints = len(self.ledger.records)

    def restore(
        self, algo: Any, record: CheckpointRecord, status: RunStatus, curve: LearningCurve
    ) -> int:
        """Continue from the checkpoint: weights, step count, iterations, the curve so far,
        and the curriculum's position; the checkpoint's env steps."""
        owner = CheckpointLedger(self.store, record.run)
        folder = owner.download(record, Path(tempfile.mkdtemp(dir=self.run_dir)))
        algo.restore_from_path(str(folder))
        saved = folder / RUN_STATE_FILE
        if saved.exists():
            state = json.loads(saved.read_text())
            status.iterations = int(state["iterations"])
            # a resumed phase 2 still counts the phase 1 that found its trajectory
            status.phase_one_env_steps = int(state.get("phase_one_env_steps", 0))
            curve.resume(state["curve"], record.step)
            if "curriculum" in state:
                self.actors.restore_curriculum(state["curriculum"])
        status.env_steps = record.step
        status.checkpoints = len(self.ledger.records)
        return record.step


def _write_policy_file(folder: Path, settings: dict[str, Any], env_steps: int) -> None:
    """The small policy file `koholint play --policy checkpoint:...` reads (no Ray needed).
    The checkpoint is whole without it (`koholint export-policy` rebuilds it): a failure is
    logged, not raised."""
    from koholint.baselines.trained import CHECKPOINT_POLICY_FOLDER
    from trainer.policy_export import ExportError, export_policy

    try:
        export_policy(folder, folder / CHECKPOINT_POLICY_FOLDER, settings, env_steps)
    except (ExportError, OSError) as error:
        logger.warning("checkpoint without a policy file: %s", error,
                       extra={"event": "policy_file_failed"})  # fmt: skip


def _ledger_metrics(status: RunStatus) -> dict[str, float]:
    """The status's metrics at save time, those it has."""
    metrics = {
        "episode_return_mean": status.episode_return_mean, "rooms": status.rooms_mean,
        "cells": status.cells_mean, "win_rate": status.win_rate,
        "archive_cells": float(status.archive_cells),
    }  # fmt: skip
    return {name: value for name, value in metrics.items() if value is not None}

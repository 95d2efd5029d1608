"""The trainer's one active run, in a background thread that outlives client requests."""

from __future__ import annotations

import threading
from typing import Any

from koholint.store import ObjectStore
from koholint.web.problems import ConflictError, NotFoundError, UnprocessableError
from trainer.ledger import CheckpointLedger, UnknownCheckpointError
from trainer.ppo.config import TrainConfig, TrainConfigError
from trainer.ppo.run import TrainingRun


class Trainer:
    def __init__(self, store: ObjectStore, defaults: dict[str, Any]) -> None:
        self.store = store
        self.defaults = defaults
        self.runs: dict[str, TrainingRun] = {}
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def active(self) -> TrainingRun | None:
        with self._lock:
            if self._thread is not None and self._thread.is_alive():
                return next(
                    run
                    for run in self.runs.values()
                    if run.status.state in ("starting", "running", "stopping")
                )
        return None

    def start(self, settings: dict[str, Any]) -> TrainingRun:
        running = self.active()
        if running is not None:
            raise ConflictError(
                f"run {running.config.run} is active; stop it first", active_run=running.config.run
            )
        try:
            config = TrainConfig.from_mapping({**self.defaults, **settings}, environ={})
        except (TrainConfigError, TypeError) as error:
            raise UnprocessableError(str(error)) from error
        if config.run in self.runs:
            raise ConflictError(f"a run named {config.run!r} exists; choose another name")
        run = TrainingRun(config)
        with self._lock:
            self.runs[run.config.run] = run
            self._thread = threading.Thread(
                target=self._run, args=(run,), name=f"train-{run.config.run}", daemon=True
            )
            self._thread.start()
        return run

    @staticmethod
    def _run(run: TrainingRun) -> None:
        try:
            run.run()
        except Exception:  # recorded in run.status (state failed, error); logged by the run
            return

    def get(self, name: str) -> TrainingRun:
        if name not in self.runs:
            raise NotFoundError(f"no run {name!r}")
        return self.runs[name]

    def ledger(self, run: str | None) -> CheckpointLedger:
        name = run or (list(self.runs)[-1] if self.runs else None)
        if name is None:
            raise NotFoundError("no run yet: name one with ?run=")
        return CheckpointLedger(self.store, name)

    def best(self, run: str | None, metric: str) -> dict[str, Any]:
        try:
            record = self.ledger(run).best(metric)
        except UnknownCheckpointError as error:
            raise NotFoundError(str(error)) from error
        return record.__dict__

    def shutdown(self) -> None:
        for run in self.runs.values():
            run.stop()
        if self._thread is not None:
            self._thread.join(timeout=120)

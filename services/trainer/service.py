"""The trainer's runs: one active at a time, in a background thread that outlives requests."""

from __future__ import annotations

import contextlib
import os
import re
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from koholint.schemas.fields import PATH_ID_PATTERN, PATH_ID_RULE
from koholint.schemas.trainer import (
    ACTIVE_STATES,
    TRAJECTORY_PATTERN,
    CheckpointList,
    CheckpointRecord,
)
from koholint.store import InvalidKeyError, ObjectStore, StoreError
from koholint.web.problems import (
    ConflictError,
    NotFoundError,
    UnavailableError,
    UnprocessableError,
)
from koholint.web.telemetry import BackgroundSpan
from trainer.config import Settings
from trainer.ledger import CheckpointLedger, UnknownCheckpointError
from trainer.ppo.config import TrainConfig, TrainConfigError
from trainer.ppo.curriculum import MAX_TRAJECTORY_BYTES
from trainer.ppo.run import TrainingRun


class Trainer:
    def __init__(
        self, store: ObjectStore, settings: Settings, environ: Mapping[str, str] | None = None
    ) -> None:
        self.store = store
        self.settings = settings
        self.environ = os.environ if environ is None else environ
        self.runs: dict[str, TrainingRun] = {}
        """every run this process started, oldest first; finished ones pruned (max_kept_runs)"""
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._starting = threading.Lock()

    def active(self) -> TrainingRun | None:
        with self._lock:
            if self._thread is not None and self._thread.is_alive():
                for run in self.runs.values():
                    if run.status.state in ACTIVE_STATES:
                        return run
        return None

    def start(self, overrides: Mapping[str, Any]) -> TrainingRun:
        """Settings: defaults < the service's environment < `overrides` (the request body)."""
        with self._starting:  # concurrent requests: one starts, the others see it active
            return self._start(overrides)

    def _start(self, overrides: Mapping[str, Any]) -> TrainingRun:
        running = self.active()
        if running is not None:
            raise ConflictError(
                f"run {running.config.run} is active; stop it first", active_run=running.config.run
            )
        try:
            config = TrainConfig.load(overrides, self.environ, source="request body")
        except TrainConfigError as error:
            raise UnprocessableError(
                str(error), errors=[{"field": error.field, "message": str(error)}]
            ) from error
        if config.run in self.runs:
            raise ConflictError(f"a run named {config.run!r} exists; choose another name")
        requested = (overrides.get("curriculum") or {}).get("trajectory")
        if requested:  # the operator's own setting (the service's environment) is trusted
            trajectory = self._stored_trajectory(str(requested), config.run)
            curriculum = config.curriculum.model_copy(update={"trajectory": trajectory})
            config = config.model_copy(update={"curriculum": curriculum})
        if overrides.get("rom"):  # a request names a world of the operator's folder, no path
            config = config.model_copy(update={"rom": self._world(str(overrides["rom"]))})
        run = TrainingRun(config, self.settings.deployment())
        try:
            run.preflight()  # before a 201: a run that cannot start is the caller's 422
        except TrainConfigError as error:
            raise UnprocessableError(
                str(error), errors=[{"field": error.field, "message": str(error)}]
            ) from error
        with self._lock:
            self._prune()
            self.runs[run.config.run] = run
            span = BackgroundSpan(
                "training run",
                {"koholint.run": run.config.run, "koholint.total_env_steps": run.config.total_env_steps,
                 "koholint.phase": run.config.phase},
            )  # fmt: skip
            self._thread = threading.Thread(
                target=self._run, args=(run, span), name=f"train-{run.config.run}", daemon=True
            )
            self._thread.start()
        return run

    def _world(self, name: str) -> str:
        """The path of the world a request names: NAME in the operator's worlds folder."""
        if not self.settings.worlds_dir:
            raise _unprocessable("rom", "this trainer has no worlds folder "
                                 "(KOHOLINT_TRAINER_WORLDS_DIR): a run plays its default world")  # fmt: skip
        if not re.fullmatch(PATH_ID_PATTERN, name):
            raise _unprocessable("rom", f"rom {name[:200]!r} is not a world's name: {PATH_ID_RULE}")
        world = Path(self.settings.worlds_dir).resolve() / name
        if not world.exists():
            raise _unprocessable("rom", f"no world {name!r} in the trainer's worlds folder")
        return str(world)

    def _stored_trajectory(self, name: str, run: str) -> str:
        """The local path of the trajectory a request names: a file under trajectory_dir, or
        a key in the object store (copied into the run's folder). Never any other path."""
        field = "curriculum.trajectory"
        if not re.fullmatch(TRAJECTORY_PATTERN, name):
            raise _unprocessable(field, f"curriculum.trajectory {name[:200]!r} is not a stored "
                                 "trajectory's name: relative parts of letters, digits, '_', '-' "
                                 "and '.', none starting with a dot (no '..', no absolute path)")  # fmt: skip
        folder = Path(self.settings.trajectory_dir or self.settings.run_dir).resolve()
        file = (folder / name).resolve()
        if file.is_relative_to(folder) and file.is_file():
            return str(file)
        try:
            data = self.store.get(name) if self.store.exists(name) else None
        except InvalidKeyError as error:  # a name the object store cannot hold: the caller's
            raise _unprocessable(field, f"curriculum.trajectory: {error}") from error
        except StoreError as error:
            raise UnavailableError(f"object store: {error}") from error
        if data is None:
            raise _unprocessable(field, f"no trajectory {name!r} in the object store nor under "
                                 "the trainer's trajectory_dir")  # fmt: skip
        if len(data) > MAX_TRAJECTORY_BYTES:
            raise _unprocessable(field, f"{name}: {len(data)} bytes, over {MAX_TRAJECTORY_BYTES}")
        local = Path(self.settings.run_dir).resolve() / run / "curriculum.actions"
        local.parent.mkdir(parents=True, exist_ok=True)
        local.write_bytes(data)
        return str(local)

    def _prune(self) -> None:
        """Forget the oldest ended runs beyond max_kept_runs (their ledgers stay in the store)."""
        ended = [name for name, run in self.runs.items() if run.status.state not in ACTIVE_STATES]
        for name in ended[: max(0, len(ended) - self.settings.max_kept_runs + 1)]:
            del self.runs[name]

    @staticmethod
    def _run(run: TrainingRun, span: BackgroundSpan) -> None:
        with span:  # the run's span: a child of the POST /v1/runs that started it
            # A failure is recorded in run.status (state failed, error) and logged by the run.
            with contextlib.suppress(Exception):
                run.run()
            span.set_attributes(
                {"koholint.state": run.status.state, "koholint.env_steps": run.status.env_steps,
                 "koholint.iterations": run.status.iterations}
            )  # fmt: skip
            if run.status.state == "failed":
                span.fail(run.status.error or "failed")

    def get(self, name: str) -> TrainingRun:
        if name not in self.runs:
            raise NotFoundError(f"no run {name!r}")
        return self.runs[name]

    def listed(self) -> list[TrainingRun]:
        """Active runs first, then the newest."""
        runs = list(reversed(self.runs.values()))
        return sorted(runs, key=lambda run: run.status.state not in ACTIVE_STATES)

    def checkpoints(self, run: str | None) -> CheckpointList:
        """A run's ledger; the latest run's by default; empty before any run."""
        name = run or (next(reversed(self.runs)) if self.runs else None)
        if name is None:
            return CheckpointList(run=None, checkpoints=[])
        return CheckpointList(run=name, checkpoints=self._ledger(name).records)

    def best(self, run: str | None, metric: str) -> CheckpointRecord:
        name = run or (next(reversed(self.runs)) if self.runs else None)
        if name is None:
            raise NotFoundError("no run yet: name one with ?run=")
        try:
            return self._ledger(name).best(metric)
        except UnknownCheckpointError as error:
            raise NotFoundError(str(error)) from error

    def _ledger(self, run: str) -> CheckpointLedger:
        try:
            return CheckpointLedger(self.store, run)
        except StoreError as error:
            raise UnavailableError(f"object store: {error}") from error

    def shutdown(self) -> None:
        for run in self.runs.values():
            run.stop()
        if self._thread is not None:
            self._thread.join(timeout=120)


def _unprocessable(field: str, message: str) -> UnprocessableError:
    return UnprocessableError(message, errors=[{"field": field, "message": message}])

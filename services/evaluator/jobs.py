"""Evaluation jobs: score given segment prefixes, or every stored segment of a run, now.

A job runs in a thread through the same ``Evaluator`` pipeline as the stream consumer, in
batches; its status counts each outcome. At most ``max_running`` jobs run at once (429
beyond); the newest ``max_kept`` finished jobs are kept for ``GET /v1/evaluations/{id}``.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable

from evaluator.scoring import BatchReport, Evaluator
from koholint.schemas.evaluator import MAX_FAILURES_SHOWN, EvaluationStatus, SegmentFailure
from koholint.store import ObjectStore
from koholint.web.problems import NotFoundError, TooManyError, UnprocessableError


def add_report(status: EvaluationStatus, report: BatchReport) -> None:
    """Count a batch's outcomes into the job's status."""
    status.scored += len(report.by_outcome("scored"))
    status.already_scored += len(report.by_outcome("already_scored"))
    status.rejected += len(report.by_outcome("rejected"))
    status.deferred += len(report.by_outcome("deferred"))
    status.kappa = report.kappa if report.kappa is not None else status.kappa
    status.scores_keys += report.scores_keys
    for result in report.results:
        if result.outcome in ("rejected", "deferred") and len(status.failures) < MAX_FAILURES_SHOWN:
            status.failures.append(
                SegmentFailure(prefix=result.prefix, outcome=result.outcome, reason=result.detail)
            )


def run_prefixes(store: ObjectStore, run: str) -> list[str]:
    """Every stored segment of the run (those with a manifest), in order."""
    return [
        key.rsplit("/", 1)[0]
        for key in store.list(f"episodes/{run}/")
        if key.endswith("/manifest.json")
    ]


def evaluate_all(
    evaluator: Evaluator,
    prefixes: list[str],
    status: EvaluationStatus,
    *,
    batch_size: int,
    on_batch: Callable[[EvaluationStatus], None] | None = None,
) -> EvaluationStatus:
    """Score `prefixes` in batches, updating `status` after each."""
    status.state, status.total = "running", len(prefixes)
    for start in range(0, len(prefixes), batch_size):
        add_report(status, evaluator.evaluate(prefixes[start : start + batch_size]))
        if on_batch is not None:
            on_batch(status)
    status.state, status.finished_at = "succeeded", time.time()
    return status


class Jobs:
    def __init__(
        self, evaluator: Evaluator, *, batch_size: int, max_segments: int, max_running: int,
        max_kept: int,
    ) -> None:  # fmt: skip
        self.evaluator = evaluator
        self.batch_size, self.max_segments = batch_size, max_segments
        self.max_running, self.max_kept = max_running, max_kept
        self._jobs: OrderedDict[str, EvaluationStatus] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, job_id: str) -> EvaluationStatus | None:
        with self._lock:
            job = self._jobs.get(job_id)
            return job.model_copy(deep=True) if job else None

    def start(self, prefixes: list[str] | None, run: str | None) -> EvaluationStatus:
        """Queue a job (blocking: lists the run's segments); 429 when too many run."""
        if run is not None:
            prefixes = run_prefixes(self.evaluator.store, run)
            if not prefixes:
                raise NotFoundError(f"run {run!r} has no stored segments (episodes/{run}/)")
        prefixes = prefixes or []
        if len(prefixes) > self.max_segments:
            raise UnprocessableError(
                f"{len(prefixes)} segments, over the limit of {self.max_segments}"
            )
        status = EvaluationStatus(id=uuid.uuid4().hex, state="queued", run=run, total=len(prefixes),
                                  started_at=time.time())  # fmt: skip
        with self._lock:
            running = sum(job.state in ("queued", "running") for job in self._jobs.values())
            if running >= self.max_running:
                raise TooManyError(f"{running} evaluations running; at most {self.max_running}")
            self._jobs[status.id] = status
            while len(self._jobs) > self.max_kept:
                self._jobs.popitem(last=False)
        threading.Thread(target=self._run, args=(status, prefixes), daemon=True).start()
        return status.model_copy(deep=True)

    def _run(self, status: EvaluationStatus, prefixes: list[str]) -> None:
        try:
            evaluate_all(self.evaluator, prefixes, status, batch_size=self.batch_size)
        except Exception as error:
            status.state, status.error = "failed", f"{type(error).__name__}: {error}"[:1000]
            status.finished_at = time.time()

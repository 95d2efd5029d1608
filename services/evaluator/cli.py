"""`koholint evaluate`: score a run's stored segments (added to the CLI through an entry point).

Its flags are derived from the service's settings (evaluator/config.py, ``koholint.flags``): a
field's docstring is its help, a flag beats the field's environment variable
(``KOHOLINT_EVALUATOR_<FIELD>``), which beats the default.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections import Counter
from typing import Any

from pydantic import ValidationError

# At import, not inside register(): without the evaluator's dependencies this module fails to
# load, and the CLI lists `evaluate` as not installed.
from evaluator.config import Settings
from koholint.flags import add_setting_flags, fields_of, flag_errors, setting_values
from koholint.schemas.evaluator import JUDGES, LABELS
from koholint.settings import ConsumerSettings, ServiceSettings
from koholint.web.auth import ControlAccess

SERVER_ONLY = fields_of(ServiceSettings, ConsumerSettings, ControlAccess) | {
    "consumer", "unavailable_pause_s", "max_job_segments", "max_running_jobs", "max_jobs_kept",
}  # fmt: skip
"""The settings of the server (its scaffold, its stream consumer, its jobs API) that a one-shot
command does not read."""
SHORT_FLAGS = {"store_url": ["--store"]}


def cmd_evaluate(args: argparse.Namespace) -> int:
    """Score every stored segment of a run; progress bar, then a summary table."""
    from evaluator.jobs import evaluate_all, run_prefixes
    from evaluator.metrics import Metrics
    from evaluator.service import EvaluatorService
    from koholint.schemas.evaluator import EvaluationStatus

    try:
        settings = Settings(**{**setting_values(args), "consume": False})
        service = EvaluatorService(settings, Metrics())
    except ValidationError as error:
        print(f"koholint evaluate: {flag_errors(error)}", file=sys.stderr)
        return 2
    except ValueError as error:
        print(f"koholint evaluate: {error}", file=sys.stderr)
        return 2
    try:
        prefixes = run_prefixes(service.store, args.run)
        if not prefixes:
            print(f"koholint evaluate: run {args.run!r} has no stored segments", file=sys.stderr)
            return 1
        started = time.perf_counter()
        status = EvaluationStatus(id="cli", state="queued", run=args.run, started_at=time.time())
        evaluate_all(service.evaluator, prefixes, status, batch_size=settings.batch_size,
                     on_batch=lambda s: _progress(s, started))  # fmt: skip
        print()
        records = service.evaluator.scores.newest(args.run, limit=len(prefixes))
        config_hash = service.evaluator.config.hash
        _summary(status, [r for r in records if r.judge_config_hash == config_hash], started)
    finally:
        service.close()
    return 0 if status.deferred == 0 else 1


def _progress(status: Any, started: float) -> None:
    done = status.scored + status.already_scored + status.rejected + status.deferred
    rate = done / max(time.perf_counter() - started, 1e-9)
    bar = "#" * int(30 * done / max(status.total, 1))
    print(f"\r[{bar:<30}] {done:>6}/{status.total} segments  {rate:7.1f}/s", end="", flush=True)


def _summary(status: Any, records: list[Any], started: float) -> None:
    elapsed = time.perf_counter() - started
    print(f"run {status.run}: {status.scored} scored, {status.already_scored} already scored, "
          f"{status.rejected} rejected, {status.deferred} deferred in {elapsed:.1f} s; "
          f"kappa (last batch) {status.kappa if status.kappa is not None else '-'}")  # fmt: skip
    labels = Counter(record.label for record in records)
    print(f"{'label':<14}{'segments':>9}{'mean score':>12}")
    for label in (*LABELS, None):
        scores = [r.score for r in records if r.label == label and r.score is not None]
        if labels[label]:
            mean = f"{statistics.fmean(scores):.2f}" if scores else "-"
            print(f"{label or 'abstained':<14}{labels[label]:>9}{mean:>12}")
    print(f"{'judge':<14}{'voted':>9}{'abstained':>10}{'mean score':>12}")
    for judge in JUDGES:
        results = [j for r in records for j in r.judges if j.judge == judge]
        scores = [j.score for j in results if j.score is not None]
        mean = f"{statistics.fmean(scores):.2f}" if scores else "-"
        print(f"{judge:<14}{len(scores):>9}{len(results) - len(scores):>10}{mean:>12}")
    _accuracy_table(records)
    for failure in status.failures[:10]:
        print(f"  {failure.outcome}: {failure.prefix}: {failure.reason}")


def _accuracy_table(records: list[Any]) -> None:
    """Each judge's agreement with the RAM ground truth, summed over the run's batches."""
    batches = {r.comparisons_key: r.judge_accuracy for r in records if r.comparisons_key}
    if not batches:
        return
    print(f"{'judge':<14}{'pairs':>9}{'accuracy':>10}{'no vote in':>12}  (vs RAM progress)")
    for judge in JUDGES:
        entries = [e for accuracy in batches.values() for e in accuracy if e.judge == judge]
        if entries:
            pairs, correct = sum(e.pairs for e in entries), sum(e.correct for e in entries)
            share = f"{correct / pairs:.3f}" if pairs else "-"
            excluded = sum(not e.votes for e in entries)
            print(f"{judge:<14}{pairs:>9}{share:>10}{f'{excluded}/{len(entries)}':>12}")


def register(commands: argparse._SubParsersAction) -> None:
    """Add `koholint evaluate` (found through the koholint.commands entry point)."""
    evaluate = commands.add_parser(
        "evaluate",
        help="score a run's stored segments with the judge ensemble",
        description="Every setting: --flag > environment variable > default.",
    )
    evaluate.add_argument("--run", required=True, help="the run whose segments to score")
    group = evaluate.add_argument_group("settings (the evaluator service's)")
    secrets = add_setting_flags(group, Settings, short_flags=SHORT_FLAGS, skip=SERVER_ONLY)
    group.description = f"secrets from the environment only: {', '.join(secrets)}"
    evaluate.set_defaults(handler=cmd_evaluate)

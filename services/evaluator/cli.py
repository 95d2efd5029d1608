"""`koholint evaluate`: score a run's stored segments (added to the CLI through an entry point)."""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections import Counter
from typing import Any

from koholint.schemas.evaluator import JUDGE_BACKENDS, JUDGES, LABELS, STATE_QUESTIONS


def cmd_evaluate(args: argparse.Namespace) -> int:
    """Score every stored segment of a run; progress bar, then a summary table."""
    from evaluator.config import Settings
    from evaluator.jobs import evaluate_all, run_prefixes
    from evaluator.metrics import Metrics
    from evaluator.service import EvaluatorService
    from koholint.schemas.evaluator import EvaluationStatus

    overrides = {
        name: value
        for name, value in vars(args).items()
        if name in EVALUATE_FLAGS and value is not None
    }
    try:
        settings = Settings(consume=False, **overrides)
        service = EvaluatorService(settings, Metrics())
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


EVALUATE_FLAGS = (
    "backend",
    "store_url",
    "llm_base_url",
    "samples",
    "redis_url",
    "batch_size",
    "noisy_accuracy",
    "state_question",
)


def register(commands: argparse._SubParsersAction) -> None:
    """Add `koholint evaluate` (found through the koholint.commands entry point)."""
    evaluate = commands.add_parser(
        "evaluate", help="score a run's stored segments with the judge ensemble"
    )
    evaluate.add_argument("--run", required=True, help="the run whose segments to score")
    evaluate.add_argument("--backend", choices=JUDGE_BACKENDS,
                          help="judges: rules (default, no server), noisy (the rules right with "
                               "probability --noisy-accuracy), local (llm-local), llm-d")  # fmt: skip
    evaluate.add_argument("--noisy-accuracy", type=float,
                          help="noisy backend: probability an answer is right (default 0.8)")  # fmt: skip
    evaluate.add_argument("--state-question", choices=STATE_QUESTIONS,
                          help="what makes a compared state further along: its progress level, "
                               "rooms reached breaking ties (progress+rooms, default), or the "
                               "level alone (progress)")  # fmt: skip
    evaluate.add_argument(
        "--store", dest="store_url", help="object store URL (path, file://, s3://)"
    )
    evaluate.add_argument("--llm-base-url", help="llm-d gateway or llm-local base URL")
    evaluate.add_argument("--samples", type=int, help="M: answers per judge (default 3)")
    evaluate.add_argument("--redis-url", help="publish koholint.scores events to this Redis")
    evaluate.add_argument("--batch-size", type=int, help="segments scored together (default 16)")
    evaluate.set_defaults(handler=cmd_evaluate)

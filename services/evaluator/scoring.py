"""Scoring a batch of segments: load and verify, ask the judges M times, vote, write, publish.

``Evaluator.evaluate(prefixes)`` is the one pipeline, used by the stream consumer, the
evaluation jobs of the API and ``koholint evaluate``. Every prefix ends in one outcome:

- ``scored``: a new record was written (and announced on ``koholint.scores``);
- ``already_scored``: a record for this segment and judge configuration exists;
- ``rejected``: the segment can never be scored (dead-letter it), with the reason;
- ``deferred``: not now (the judges or the store are unreachable): try again later.

Judge requests run concurrently, at most ``in_flight_per_route`` per route; the rules
backend answers inline (a thread per microsecond answer would cost more than it saves).
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections import defaultdict
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Literal

from evaluator.comparisons import ComparisonResult, compare_states
from evaluator.config import Settings
from evaluator.judges import (
    PROMPT_HASH,
    JudgeBackend,
    RulesJudges,
    abstained,
    ensemble_vote,
    fleiss_kappa,
    judge_vote,
)
from evaluator.metrics import Metrics
from evaluator.output import ScoreStore, batch_key, comparisons_key, scores_event
from evaluator.segments import (
    LoadedSegment,
    SegmentRejectedError,
    is_store_outage,
    load_segment,
    parse_prefix,
)
from koholint.bus import Bus
from koholint.reward.truth import StateQuestion
from koholint.schemas.evaluator import (
    JUDGE_ROUTES,
    JUDGES,
    SCORE_SCHEMA_VERSION,
    AbstainReason,
    Abstention,
    JudgeResult,
    SampleAnswer,
    ScoreRecord,
    Timings,
    Verdict,
)
from koholint.store import ObjectStore, StoreError

Outcome = Literal["scored", "already_scored", "rejected", "deferred"]
logger = logging.getLogger("evaluator.scoring")


@dataclass
class PrefixResult:
    prefix: str
    outcome: Outcome
    detail: str = ""
    record: ScoreRecord | None = None


@dataclass
class BatchReport:
    results: list[PrefixResult] = field(default_factory=list)
    kappa: float | None = None
    scores_keys: list[str] = field(default_factory=list)

    def by_outcome(self, outcome: Outcome) -> list[PrefixResult]:
        return [result for result in self.results if result.outcome == outcome]


@dataclass(frozen=True)
class JudgeConfig:
    """What makes two scores of one segment comparable; its hash keys the records."""

    backend: str
    models: dict[str, str]
    samples: int
    seed: int
    state_question: StateQuestion = "progress+rooms"

    @property
    def seeds(self) -> list[int]:
        return [self.seed + index for index in range(self.samples)]

    @cached_property
    def hash(self) -> str:
        document = {
            "backend": self.backend, "models": self.models, "seeds": self.seeds,
            "prompt_hash": PROMPT_HASH, "verdict": Verdict.model_json_schema(),
            "schema_version": SCORE_SCHEMA_VERSION,
        }  # fmt: skip
        if self.state_question != "progress+rooms":  # records scored before it keep their keys
            document["state_question"] = self.state_question
        return hashlib.sha256(json.dumps(document, sort_keys=True).encode()).hexdigest()[:16]

    def record_key(self, prefix: str) -> str:
        return hashlib.sha256(f"{prefix}\x00{self.hash}".encode()).hexdigest()[:32]


class Evaluator:
    """The pipeline: segments in, score records out (store + stream)."""

    def __init__(
        self,
        store: ObjectStore,
        bus: Bus,
        judges: JudgeBackend,
        settings: Settings | None = None,
        *,
        metrics: Metrics | None = None,
    ) -> None:
        """`settings`: the service's (samples, seeds, limits, streams, state comparisons; its
        defaults when None); the judges are built from them (``service.judges_from``) or given."""
        settings = Settings() if settings is None else settings
        self.store, self.bus, self.judges, self.settings = store, bus, judges, settings
        self.config = JudgeConfig(
            judges.name, judges.models(), settings.samples, settings.seed, judges.state_question
        )
        self.scores = ScoreStore(store)
        self.scores_stream = settings.scores_stream
        self.state_pairs = settings.comparisons_per_batch(judges.name)
        self.min_measured_pairs = settings.min_measured_pairs
        self.metrics = metrics or Metrics()
        self._pools = {
            route: ThreadPoolExecutor(
                settings.in_flight_per_route, thread_name_prefix=f"judge-{route}"
            )
            for route in set(JUDGE_ROUTES.values())
        }

    def close(self) -> None:
        for pool in self._pools.values():
            pool.shutdown(wait=True, cancel_futures=True)
        self.judges.close()

    def evaluate(self, prefixes: list[str]) -> BatchReport:
        """Score what is not scored yet; every prefix gets an outcome (see the module doc)."""
        report = BatchReport()
        loaded: list[LoadedSegment] = []
        for prefix in dict.fromkeys(prefixes):
            result, segment = self._prepare(prefix)
            if result is not None:
                report.results.append(result)
            if segment is not None:
                loaded.append(segment)
        records = self._score(loaded, report)
        if records:
            self._write(records, report)
        return report

    def _prepare(self, prefix: str) -> tuple[PrefixResult | None, LoadedSegment | None]:
        """(result, None) when the prefix is settled without judging, else (None, segment)."""
        started = time.perf_counter()
        try:
            ref = parse_prefix(prefix)
            if self.scores.scored_in(ref, self.config.hash) is not None:
                return PrefixResult(ref.prefix, "already_scored"), None
            segment = load_segment(self.store, ref.prefix, self.settings)
        except SegmentRejectedError as error:
            return PrefixResult(prefix, "rejected", str(error)), None
        except StoreError as error:
            if is_store_outage(error):
                return PrefixResult(prefix, "deferred", f"object store: {error}"), None
            return PrefixResult(prefix, "rejected", str(error)), None
        except Exception as error:  # one unreadable segment never takes its batch with it
            logger.warning("segment %s refused: %r", prefix, error, extra={"event": "rejected"})
            return PrefixResult(prefix, "rejected", f"{type(error).__name__}: {error}"[:500]), None
        segment.load_ms = (time.perf_counter() - started) * 1000
        return None, segment

    def _score(self, segments: list[LoadedSegment], report: BatchReport) -> list[ScoreRecord]:
        """Ask every judge M times about every segment, concurrently; vote."""
        started = time.perf_counter()
        answers = self._ask_all(segments)
        records = []
        for segment in segments:
            results = self._judge_results(segment, answers)
            down = [r for r in results if r.abstain_reason == "unavailable"]
            if down:
                detail = f"judges unreachable: {down[0].abstain_detail}"
                report.results.append(PrefixResult(segment.ref.prefix, "deferred", detail))
                continue
            records.append(self._record(segment, results, time.perf_counter() - started))
        return records

    def _ask_all(
        self, segments: list[LoadedSegment]
    ) -> dict[tuple[str, str], list[SampleAnswer | Future[SampleAnswer]]]:
        inline = isinstance(self.judges, RulesJudges)
        answers: dict[tuple[str, str], list[SampleAnswer | Future[SampleAnswer]]] = defaultdict(
            list
        )
        for segment in segments:
            for judge in JUDGES:
                if self._abstains(judge, segment) is not None:
                    continue
                for seed in self.config.seeds:
                    key = (segment.ref.prefix, judge)
                    if inline:
                        answers[key].append(self.judges.answer(judge, segment, seed))
                    else:
                        pool = self._pools[JUDGE_ROUTES[judge]]
                        answers[key].append(pool.submit(self.judges.answer, judge, segment, seed))
        return answers

    def _abstains(self, judge: str, segment: LoadedSegment) -> tuple[AbstainReason, str] | None:
        """Why `judge` is not asked about `segment` (the backend, or no frames to look at)."""
        if judge == "vision" and not segment.key_frames:
            return "no_vision", "the segment was exported without frames"
        return self.judges.abstains(judge)

    def _judge_results(
        self,
        segment: LoadedSegment,
        answers: dict[tuple[str, str], list[SampleAnswer | Future[SampleAnswer]]],
    ) -> list[JudgeResult]:
        models = self.config.models
        results = []
        for judge in JUDGES:
            reason = self._abstains(judge, segment)
            if reason is not None:
                results.append(abstained(judge, models.get(judge, "none"), *reason))
                continue
            samples = [
                answer.result() if isinstance(answer, Future) else answer
                for answer in answers[(segment.ref.prefix, judge)]
            ]
            for sample in samples:
                self.metrics.judge_latency.labels(judge).observe(sample.latency_ms / 1000)
                if sample.outcome in ("repaired", "rejected"):
                    self.metrics.invalid_answers.labels(judge).inc()
            results.append(judge_vote(judge, models[judge], samples))
        return results

    def _record(
        self, segment: LoadedSegment, results: list[JudgeResult], judges_s: float
    ) -> ScoreRecord:
        label, score = ensemble_vote(results)
        ref = segment.ref
        return ScoreRecord(
            record_key=self.config.record_key(ref.prefix), prefix=ref.prefix, run=ref.run,
            episode=ref.episode, segment=ref.segment, manifest_sha256=segment.manifest_sha256,
            backend=self.config.backend,
            judge_config_hash=self.config.hash, prompt_hash=PROMPT_HASH,
            models=self.config.models, samples_per_judge=self.config.samples,
            seeds=self.config.seeds, label=label, score=score, judges=results,
            abstentions=[
                Abstention(judge=r.judge, reason=r.abstain_reason, detail=r.abstain_detail or "")
                for r in results if r.abstained and r.abstain_reason is not None
            ],
            facts=segment.facts, states=segment.states,
            timings=Timings(
                load_ms=round(segment.load_ms, 3), judges_ms=round(judges_s * 1000, 3),
                total_ms=round(segment.load_ms + judges_s * 1000, 3),
            ),
            scored_at=time.time(),
        )  # fmt: skip

    def _write(self, records: list[ScoreRecord], report: BatchReport) -> None:
        """One batch file per run, then its event; a store outage defers the whole batch."""
        report.kappa = fleiss_kappa(
            [[j.label for j in r.judges if j.label is not None] for r in records]
        )
        by_run: dict[str, list[ScoreRecord]] = defaultdict(list)
        for record in records:
            by_run[record.run].append(record)
        for run, run_records in by_run.items():
            key = batch_key(run, self.config.hash)
            compared = self._compare(run_records)
            if compared is not None:
                run_records = self._revote(run_records, compared, comparisons_key(key))
            try:
                if compared is not None:
                    self.scores.write_comparisons(comparisons_key(key), compared.comparisons, key)
                key = self.scores.write(run, self.config.hash, run_records, key=key)
                event = scores_event(run, key, run_records, report.kappa)
                self.bus.publish(self.scores_stream, event.model_dump(mode="json"))
            except Exception as error:  # the store or the bus is down: score again later
                logger.warning("writing scores failed: %s", error, extra={"event": "write_failed"})
                report.results += [
                    PrefixResult(r.prefix, "deferred", f"writing scores failed: {error}")
                    for r in run_records
                ]
                continue
            report.scores_keys.append(key)
            report.results += [PrefixResult(r.prefix, "scored", key, r) for r in run_records]
            self._count(run_records)
        if report.kappa is not None:
            self.metrics.agreement_kappa.set(report.kappa)

    def _compare(self, records: list[ScoreRecord]) -> ComparisonResult | None:
        """The judges' comparisons of the records' sampled states, measured (one run)."""
        inline = isinstance(self.judges, RulesJudges)

        def submit(judge: str, function: Callable[..., int], *args: Any) -> Future[int]:
            return self._pools[JUDGE_ROUTES[judge]].submit(function, *args)

        result = compare_states(
            records, self.judges, seeds=self.config.seeds, max_pairs=self.state_pairs,
            seed=self.config.seed, submit=None if inline else submit,
            min_pairs=self.min_measured_pairs,
        )  # fmt: skip
        if result is not None:
            for entry in result.accuracy:
                if entry.accuracy is not None:
                    self.metrics.judge_accuracy.labels(entry.judge).set(entry.accuracy)
                self.metrics.judge_votes.labels(entry.judge).set(int(entry.votes))
        return result

    def _revote(
        self, records: list[ScoreRecord], compared: ComparisonResult, key: str
    ) -> list[ScoreRecord]:
        """The records with the batch's accuracies, voted again without the excluded judges."""
        revoted = []
        for record in records:
            label, score = ensemble_vote(record.judges, compared.excluded)
            revoted.append(record.model_copy(update={
                "label": label, "score": score, "judge_accuracy": compared.accuracy,
                "comparisons_key": key,
            }))  # fmt: skip
        return revoted

    def _count(self, records: list[ScoreRecord]) -> None:
        self.metrics.segments_scored.inc(len(records))
        for record in records:
            for abstention in record.abstentions:
                self.metrics.abstentions.labels(abstention.judge).inc()

    def republish(self, prefix: str) -> None:
        """Announce an already-scored segment again (the first event may have been lost when
        the process died between writing and publishing; consumers dedupe by record_key)."""
        ref = parse_prefix(prefix)
        stored = self.scores.find(ref, self.config.hash)
        if stored is not None:
            event = scores_event(ref.run, stored.scores_key, [stored.record], None)
            self.bus.publish(self.scores_stream, event.model_dump(mode="json"))

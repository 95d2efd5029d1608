"""evaluator's Prometheus metrics, in a registry of the app's own.

The names are a contract with the dashboards (gitops): do not rename them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from koholint.schemas.evaluator import JUDGES

LATENCY_BUCKETS = (
    0.0001,
    0.001,
    0.01,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
    30.0,
    60.0,
    120.0,
)


@dataclass
class Metrics:
    registry: CollectorRegistry = field(default_factory=CollectorRegistry)

    def __post_init__(self) -> None:
        self.segments_scored = Counter(
            "evaluator_segments_scored", "segments scored (one score record each)",
            registry=self.registry,
        )  # fmt: skip
        self.abstentions = Counter(
            "evaluator_abstentions", "judges that abstained on a segment", ["judge"],
            registry=self.registry,
        )  # fmt: skip
        self.invalid_answers = Counter(
            "evaluator_invalid_answers",
            "answers that failed validation (samples repaired or rejected)", ["judge"],
            registry=self.registry,
        )  # fmt: skip
        self.judge_latency = Histogram(
            "evaluator_judge_latency_seconds", "time for one judge's answer (one sample)",
            ["judge"], buckets=LATENCY_BUCKETS, registry=self.registry,
        )  # fmt: skip
        self.consumer_lag = Gauge(
            "evaluator_consumer_lag",
            "segment messages not yet acknowledged by the group (undelivered + pending)",
            registry=self.registry,
        )  # fmt: skip
        self.agreement_kappa = Gauge(
            "evaluator_agreement_kappa", "Fleiss' kappa of the judges' labels in the last batch",
            registry=self.registry,
        )  # fmt: skip
        self.judge_accuracy = Gauge(
            "evaluator_judge_accuracy",
            "a judge's agreement with the RAM ground truth over the last batch's state pairs",
            ["judge"], registry=self.registry,
        )  # fmt: skip
        self.judge_votes = Gauge(
            "evaluator_judge_votes",
            "1 while the judge keeps its vote, 0 once measured no better than chance",
            ["judge"], registry=self.registry,
        )  # fmt: skip
        for judge in JUDGES:  # every judge's series exists from the start, at 0
            for metric in (self.abstentions, self.invalid_answers, self.judge_latency):
                metric.labels(judge)
        self.dead_letters = Counter(
            "evaluator_dead_letters", "segment messages dead-lettered (never scored)",
            registry=self.registry,
        )  # fmt: skip

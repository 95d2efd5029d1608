"""reward-model's Prometheus metrics (names are a contract with the dashboards)."""

from __future__ import annotations

from dataclasses import dataclass, field

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

TRAINING_BUCKETS = (0.1, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0)
REJECTED_REASONS = (
    "no_pairs", "too_few_pairs", "below_floor", "non_finite", "invalid_event",
    "segment_unreadable", "unscored", "comparisons_unreadable",
)  # fmt: skip


@dataclass
class Metrics:
    registry: CollectorRegistry = field(default_factory=CollectorRegistry)

    def __post_init__(self) -> None:
        self.pairs = Gauge(
            "reward_model_pairs", "preference pairs in the dataset", registry=self.registry
        )
        self.versions = Counter(
            "reward_model_versions", "reward-model versions published", registry=self.registry
        )
        self.heldout_accuracy = Gauge(
            "reward_model_heldout_accuracy", "held-out accuracy of the last trained model",
            registry=self.registry,
        )  # fmt: skip
        self.training_seconds = Histogram(
            "reward_model_training_seconds", "time to fit R_phi", buckets=TRAINING_BUCKETS,
            registry=self.registry,
        )  # fmt: skip
        self.rejected = Counter(
            "reward_model_rejected", "training attempts, events and segments refused, by reason",
            ["reason"], registry=self.registry,
        )  # fmt: skip
        self.heldout_truth_accuracy = Gauge(
            "reward_model_heldout_truth_accuracy",
            "the last trained model's agreement with the RAM ground truth on held-out pairs",
            registry=self.registry,
        )  # fmt: skip
        self.disagreement = Gauge(
            "reward_model_disagreement",
            "the last ensemble's mean std of its members' normalised R_phi on held-out states",
            registry=self.registry,
        )  # fmt: skip
        self.judge_accuracy = Gauge(
            "reward_model_judge_accuracy",
            "a judge's accuracy against the RAM ground truth in the last comparisons received",
            ["judge"], registry=self.registry,
        )  # fmt: skip
        for reason in REJECTED_REASONS:
            self.rejected.labels(reason)

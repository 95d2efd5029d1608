"""planner's Prometheus metrics, in a registry of the app's own."""

from __future__ import annotations

from dataclasses import dataclass, field

from prometheus_client import CollectorRegistry, Counter, Histogram

LATENCY_BUCKETS = (0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)


@dataclass
class Metrics:
    registry: CollectorRegistry = field(default_factory=CollectorRegistry)

    def __post_init__(self) -> None:
        self.decisions = Counter(
            "planner_decisions", "decisions made", ["backend", "mode", "macro"],
            registry=self.registry,
        )  # fmt: skip
        self.decision_seconds = Histogram(
            "planner_decision_seconds", "time to decide", ["backend"],
            buckets=LATENCY_BUCKETS, registry=self.registry,
        )  # fmt: skip
        self.autopilot_runs = Counter(
            "planner_autopilot_runs", "autopilot runs by how they stopped", ["stopped"],
            registry=self.registry,
        )  # fmt: skip
        self.llm_calls = Counter(
            "planner_llm_calls", "language-model calls by route and outcome", ["route", "outcome"],
            registry=self.registry,
        )  # fmt: skip

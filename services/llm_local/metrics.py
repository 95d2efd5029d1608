"""llm-local's Prometheus metrics, in a registry of the app's own."""

from __future__ import annotations

from dataclasses import dataclass, field

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

LATENCY_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0)


@dataclass
class Metrics:
    registry: CollectorRegistry = field(default_factory=CollectorRegistry)

    def __post_init__(self) -> None:
        self.completions = Counter(
            "llm_local_completions", "chat completions by route and finish reason",
            ["route", "finish_reason"], registry=self.registry,
        )  # fmt: skip
        self.tokens = Counter(
            "llm_local_tokens", "tokens processed, by kind (prompt, completion)", ["kind"],
            registry=self.registry,
        )  # fmt: skip
        self.completion_seconds = Histogram(
            "llm_local_completion_seconds", "time to answer, waiting for the model included",
            ["route"], buckets=LATENCY_BUCKETS, registry=self.registry,
        )  # fmt: skip
        self.model_load_seconds = Gauge(
            "llm_local_model_load_seconds", "time the model took to load", registry=self.registry
        )

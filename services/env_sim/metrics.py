"""env-sim's Prometheus metrics, in a registry of the app's own (one app, one registry)."""

from __future__ import annotations

from dataclasses import dataclass, field

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

LATENCY_BUCKETS = (0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)


@dataclass
class Metrics:
    registry: CollectorRegistry = field(default_factory=CollectorRegistry)

    def __post_init__(self) -> None:
        self.sessions = Gauge("env_sim_sessions", "open sessions", registry=self.registry)
        self.steps = Counter("env_sim_steps", "environment steps taken", registry=self.registry)
        self.latency = Histogram(
            "env_sim_operation_seconds", "time to run one operation on a session",
            ["operation"], buckets=LATENCY_BUCKETS, registry=self.registry,
        )  # fmt: skip
        self.evictions = Counter(
            "env_sim_evictions", "idle sessions evicted", registry=self.registry
        )

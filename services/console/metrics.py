"""console's Prometheus metrics, in a registry of the app's own."""

from __future__ import annotations

from dataclasses import dataclass, field

from prometheus_client import CollectorRegistry, Counter, Gauge


@dataclass
class Metrics:
    registry: CollectorRegistry = field(default_factory=CollectorRegistry)

    def __post_init__(self) -> None:
        self.clients = Gauge(
            "console_stream_clients", "live-map streams open", registry=self.registry
        )
        self.received = Counter(
            "console_positions_received",
            "position events read from the stream",
            registry=self.registry,
        )
        self.invalid = Counter(
            "console_positions_invalid",
            "stream entries that failed validation",
            registry=self.registry,
        )
        self.delivered = Counter(
            "console_positions_delivered",
            "position events sent to browsers",
            registry=self.registry,
        )
        self.coalesced = Counter(
            "console_positions_coalesced",
            "events replaced by a newer one of the same env before a browser got them",
            registry=self.registry,
        )
        self.dropped_clients = Counter(
            "console_clients_dropped", "browsers dropped", ["reason"], registry=self.registry
        )
        self.refused_clients = Counter(
            "console_clients_refused", "streams refused at max_clients", registry=self.registry
        )

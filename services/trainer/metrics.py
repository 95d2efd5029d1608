"""trainer's Prometheus metrics: each run's live status, read at scrape time."""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from koholint.env.export import EXPORT_COUNTS
from koholint.schemas.trainer import ACTIVE_STATES
from trainer.service import Trainer

GAUGES = {
    "steps_per_second": "env steps per second since the run started",
    "episode_return_mean": "mean episode return (window of 100 episodes)",
    "rooms_mean": "rooms visited per episode (window of 100 episodes)",
    "cells_mean": "cells visited per episode (window of 100 episodes)",
    "win_rate": "share of episodes won (window of 100 episodes)",
    "archive_cells": "cells in the Go-Explore archive",
}


class RunCollector(Collector):
    """Reads every run's status when scraped, so nothing has to push updates."""

    def __init__(self, trainer: Trainer) -> None:
        self.trainer = trainer

    def collect(self) -> Iterator[Metric]:
        runs = list(self.trainer.runs.values())
        steps = CounterMetricFamily("trainer_env_steps", "env steps sampled", labels=["run"])
        exported = CounterMetricFamily(
            "trainer_export_segments",
            "episode segments by outcome: written, announced (on the stream), dropped (export "
            "queue full past the wait), failed (the store refused), abandoned (unwritten at the end)",
            labels=["run", "outcome"],
        )
        unexported = GaugeMetricFamily(
            "trainer_export_pending",
            "segments not on the stream: unannounced (in the store, announced at the run's next "
            "start) and lost (dropped + failed + abandoned: never in the store)",
            labels=["run", "kind"],
        )
        waited = CounterMetricFamily(
            "trainer_export_wait_seconds",
            "time the envs waited for room in a full export queue",
            labels=["run"],
        )
        # 1 while the run is starting, running or stopping: alerts on stopped steps use it to
        # tell a stalled run from one that finished.
        active = GaugeMetricFamily(
            "trainer_run_active", "1 while the run is starting, running or stopping", labels=["run"]
        )
        gauges = {
            name: GaugeMetricFamily(f"trainer_{name}", text, labels=["run"])
            for name, text in GAUGES.items()
        }
        for run in runs:
            status = run.status
            steps.add_metric([status.run], status.env_steps)
            active.add_metric([status.run], float(status.state in ACTIVE_STATES))
            for outcome in EXPORT_COUNTS:
                exported.add_metric([status.run, outcome], status.export.get(outcome, 0))
            for kind in ("unannounced", "lost"):
                unexported.add_metric([status.run, kind], status.export.get(kind, 0))
            waited.add_metric([status.run], status.export_wait_seconds)
            for name, family in gauges.items():
                value = getattr(status, name)
                if value is not None:
                    family.add_metric([status.run], float(value))
        yield steps
        yield exported
        yield unexported
        yield waited
        yield active
        yield from gauges.values()

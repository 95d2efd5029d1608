"""The evaluator's parts, made from the settings: store, bus, judges, pipeline, consumer, jobs."""

from __future__ import annotations

import os
import socket

from evaluator.config import Settings
from evaluator.ingest import Ingestor, consumer_lag
from evaluator.jobs import Jobs
from evaluator.judges import JudgeBackend, make_judges
from evaluator.metrics import Metrics
from evaluator.scoring import Evaluator
from koholint.bus import Bus, MemoryBus, RedisBus, connect_redis
from koholint.store import ObjectStore, open_store


def open_bus(settings: Settings) -> Bus:
    """Redis when a URL is set, else the in-process bus (one machine, no server)."""
    if not settings.redis_url:
        return MemoryBus(
            reclaim_after_ms=settings.reclaim_after_ms, max_deliveries=settings.max_deliveries
        )
    client = connect_redis(
        settings.redis_url, timeout_s=settings.redis_timeout_s, block_ms=settings.block_ms
    )
    return RedisBus(
        client, reclaim_after_ms=settings.reclaim_after_ms, max_deliveries=settings.max_deliveries,
    )  # fmt: skip


def judges_from(settings: Settings) -> JudgeBackend:
    models = {
        "vision": settings.model_vision,
        "state": settings.model_state,
        "progress": settings.model_puzzle,
    }
    return make_judges(
        settings.backend, base_url=settings.llm_base_url, models=models,
        timeout_s=settings.llm_timeout_s, attempts=settings.llm_attempts,
        max_tokens=settings.llm_max_tokens, noisy_accuracy=settings.noisy_accuracy,
        seed=settings.seed, state_question=settings.state_question,
        api_key=settings.llm_token.get_secret_value(),
    )  # fmt: skip


class EvaluatorService:
    def __init__(
        self,
        settings: Settings,
        metrics: Metrics,
        *,
        store: ObjectStore | None = None,
        bus: Bus | None = None,
        judges: JudgeBackend | None = None,
    ) -> None:
        self.settings, self.metrics = settings, metrics
        self.store = store or open_store(settings.store_url)
        self.bus = bus or open_bus(settings)
        self.evaluator = Evaluator(
            self.store, self.bus, judges or judges_from(settings), settings, metrics=metrics
        )
        self.ingestor = Ingestor(
            self.bus, self.evaluator, stream=settings.segments_stream, group=settings.group,
            consumer=settings.consumer or f"{socket.gethostname()}-{os.getpid()}",
            batch_size=settings.batch_size, block_ms=settings.block_ms,
            unavailable_pause_s=settings.unavailable_pause_s,
        )  # fmt: skip
        self.jobs = Jobs(
            self.evaluator, batch_size=settings.batch_size,
            max_segments=settings.max_job_segments, max_running=settings.max_running_jobs,
            max_kept=settings.max_jobs_kept,
        )  # fmt: skip

    def start(self) -> None:
        if self.settings.consume:
            self.ingestor.start()

    def close(self) -> None:
        self.ingestor.stop()
        self.evaluator.close()

    def update_lag(self) -> int | None:
        lag = consumer_lag(self.bus, self.settings.segments_stream, self.settings.group)
        if lag is not None:
            self.metrics.consumer_lag.set(lag)
        return lag

    def check_judges(self) -> dict[str, str]:
        """GET /v1/models on each judge route (llm-d) or on the server (local); raises if one
        does not answer."""
        client = getattr(self.evaluator.judges, "client", None)
        if client is None:
            return {}
        import httpx

        paths = [""] if self.settings.backend == "local" else [f"/{r}" for r in client.routes]
        for path in paths:
            httpx.get(f"{client.base_url}{path}/v1/models", timeout=5).raise_for_status()
        return {f"route_{route}": breaker.state for route, breaker in client.breakers.items()}

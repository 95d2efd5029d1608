"""reward-model: ``create_app()`` builds the FastAPI app; ``koholint serve reward-model`` runs it."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import AsyncIterator
from typing import Any

from fastapi import FastAPI

from koholint.bus import Bus, RedisBus, connect_redis
from koholint.store import open_store
from koholint.web.scaffold import check_in_thread, create_service_app, service_factory
from reward_model.config import Settings
from reward_model.metrics import Metrics
from reward_model.routes import models, scoring, training
from reward_model.service import RewardModelService


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or Settings()
    metrics = Metrics()

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        import torch

        torch.set_num_threads(1)  # two threads under contention made fitting ~10x slower here
        redis_client, bus = _open_bus(settings)
        app.state.service = service = RewardModelService(
            settings, open_store(settings.store_url), bus, metrics
        )
        app.state.redis = redis_client
        stop = threading.Event()
        # Restores the dataset from the store's scores, then consumes koholint.scores.
        consumer = threading.Thread(
            target=service.run_background, args=(stop,), name="scores", daemon=True
        )
        consumer.start()
        try:
            yield
        finally:
            stop.set()
            await asyncio.to_thread(consumer.join, settings.block_ms / 1000 + 5)
            if redis_client is not None:
                redis_client.close()

    return create_service_app(
        name="reward-model", lifespan=lifespan, routers=[training.router, models.router, scoring.router],
        registry=metrics.registry, max_body_bytes=settings.max_body_bytes, readiness=readiness,
        access=settings,
        tracing_exporter=settings.tracing_exporter,
        description="Judges' preferences -> Bradley-Terry R_phi -> versions the trainer shapes with.",
    )  # fmt: skip


def _open_bus(settings: Settings) -> tuple[Any, Bus | None]:
    if not settings.redis_url:
        return None, None
    client = connect_redis(
        settings.redis_url, timeout_s=settings.redis_timeout_s, block_ms=settings.block_ms
    )
    return client, RedisBus(client)


async def readiness(app: FastAPI) -> dict[str, str]:
    """The object store is writable and Redis (when configured) answers."""
    service: RewardModelService = app.state.service
    await check_in_thread("object store", service.store.check)
    if app.state.redis is not None:
        await check_in_thread("redis", app.state.redis.ping)
    return {"store": "ok", "redis": "ok" if app.state.redis is not None else "off"}


main_app = service_factory(Settings, create_app)

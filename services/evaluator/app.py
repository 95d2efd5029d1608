"""evaluator: ``create_app()`` builds the FastAPI app; ``koholint serve evaluator`` runs it."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

from fastapi import FastAPI

from evaluator.config import Settings
from evaluator.metrics import Metrics
from evaluator.routes import evaluations, scores
from evaluator.service import EvaluatorService
from koholint.web.problems import UnavailableError
from koholint.web.scaffold import check_in_thread, create_service_app, service_factory

LAG_REFRESH_S = 5.0


def create_app(settings: Settings | None = None, **parts: Any) -> FastAPI:
    """The app; `parts` (store, bus, judges) replace the ones the settings would make."""
    settings = settings or Settings()
    metrics = Metrics()

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        service = await asyncio.to_thread(EvaluatorService, settings, metrics, **parts)
        app.state.evaluator = service
        service.start()
        lag = asyncio.create_task(_refresh_lag(service))
        try:
            yield
        finally:
            lag.cancel()
            await asyncio.to_thread(service.close)

    return create_service_app(
        name="evaluator",
        lifespan=lifespan,
        routers=[evaluations.router, scores.router],
        registry=metrics.registry,
        max_body_bytes=settings.max_body_bytes,
        access=settings,
        readiness=readiness,
        tracing_exporter=settings.tracing_exporter,
        description="A judge ensemble that scores the segments the trainer exports.",
    )


async def _refresh_lag(service: EvaluatorService) -> None:
    """Keep evaluator_consumer_lag current (the bus is asked off the event loop)."""
    while True:
        with contextlib.suppress(Exception):
            await asyncio.to_thread(service.update_lag)
        await asyncio.sleep(LAG_REFRESH_S)


async def readiness(app: FastAPI) -> dict[str, str]:
    """Ready when the store and the bus answer and, for llm-d/local, the judge routes do."""
    service: EvaluatorService = app.state.evaluator
    await check_in_thread("object store", service.store.check)
    await check_in_thread("bus", lambda: service.bus.ensure_group(
        service.settings.segments_stream, service.settings.group))  # fmt: skip
    try:
        routes = await asyncio.to_thread(service.check_judges)
    except Exception as error:
        raise UnavailableError(f"judge routes not ready: {error}") from error
    return {"backend": service.settings.backend, **routes}


main_app = service_factory(Settings, create_app)

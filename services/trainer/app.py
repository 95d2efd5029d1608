"""trainer: ``create_app()`` builds the FastAPI app; ``koholint serve trainer`` runs it."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

from fastapi import FastAPI
from prometheus_client import CollectorRegistry

from koholint.store import open_store
from koholint.web.scaffold import check_in_thread, create_service_app, service_factory
from trainer.config import Settings, is_loopback
from trainer.metrics import RunCollector
from trainer.routes import checkpoints, runs
from trainer.service import Trainer


def create_app(settings: Settings | None = None, *, span_exporter: object = None) -> FastAPI:
    """`span_exporter`: an OpenTelemetry SpanExporter instead of the tracing_exporter setting."""
    settings = settings or Settings()
    if not is_loopback(settings.host) and not settings.token.get_secret_value():
        raise RuntimeError(
            f"trainer: listening on {settings.host} (beyond loopback) needs a token for run "
            "control: set KOHOLINT_TRAINER_TOKEN"
        )
    registry = CollectorRegistry()

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        app.state.settings = settings
        app.state.trainer = Trainer(open_store(settings.store_url), settings)
        collector = RunCollector(app.state.trainer)
        registry.register(collector)
        try:
            yield
        finally:
            app.state.trainer.shutdown()
            registry.unregister(collector)

    return create_service_app(
        name="trainer",
        lifespan=lifespan,
        routers=[runs.router, checkpoints.router],
        registry=registry,
        max_body_bytes=settings.max_body_bytes,
        access=settings,
        readiness=readiness,
        tracing_exporter=span_exporter or settings.tracing_exporter,
    )


async def readiness(app: FastAPI) -> dict[str, str]:
    """The object store is writable."""
    await check_in_thread("object store", app.state.trainer.store.check)
    return {}


main_app = service_factory(Settings, create_app)

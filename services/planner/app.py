"""planner: ``create_app()`` builds the FastAPI app; ``koholint serve planner`` runs it."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

from fastapi import FastAPI, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from prometheus_fastapi_instrumentator import Instrumentator

from koholint.problems import BodySizeLimitMiddleware, add_exception_handlers
from koholint.telemetry import configure_logging
from planner.config import Settings
from planner.metrics import Metrics
from planner.routes import api, health
from planner.service import Planner


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or Settings()
    metrics = Metrics()

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        app.state.planner = Planner(settings, metrics)
        try:
            yield
        finally:
            app.state.planner.close()

    app = FastAPI(title="koholint planner", version="1.0.0", lifespan=lifespan)
    add_exception_handlers(app)
    app.add_middleware(BodySizeLimitMiddleware, max_bytes=settings.max_body_bytes)
    app.include_router(health.router)
    app.include_router(api.router)
    Instrumentator(registry=metrics.registry).instrument(app)

    @app.get("/metrics", include_in_schema=False)
    async def prometheus_metrics() -> Response:
        return Response(generate_latest(metrics.registry), media_type=CONTENT_TYPE_LATEST)

    return app


def main_app() -> FastAPI:
    """Factory for uvicorn: settings from the environment, JSON logs."""
    settings = Settings()
    configure_logging(settings.log_level)
    return create_app(settings)

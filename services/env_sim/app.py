"""env-sim: ``create_app()`` builds the FastAPI app; ``koholint serve env-sim`` runs it."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

from fastapi import FastAPI, Request, Response
from fastapi.responses import JSONResponse
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from prometheus_fastapi_instrumentator import Instrumentator

from env_sim.config import Settings
from env_sim.metrics import Metrics
from env_sim.roms import RomRegistry
from env_sim.routes import health, roms, sessions
from env_sim.sessions import SessionManager
from koholint.problems import BodySizeLimitMiddleware, add_exception_handlers, problem_response
from koholint.store import StoreError, open_store
from koholint.telemetry import configure_logging, setup_tracing


def create_app(settings: Settings | None = None, *, span_exporter: object = None) -> FastAPI:
    settings = settings or Settings()
    metrics = Metrics()

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        app.state.settings = settings
        app.state.store = open_store(settings.store_url)
        app.state.roms = RomRegistry(
            configured=settings.rom_path,
            upload_dir=Path(settings.rom_dir),
            max_upload_bytes=settings.max_rom_bytes,
        )
        manager = SessionManager(
            max_sessions=settings.max_sessions, ttl_seconds=settings.session_ttl_seconds,
            workers=settings.workers, metrics=metrics,
        )  # fmt: skip
        app.state.sessions = manager
        evictor = asyncio.create_task(manager.evict_forever())
        try:
            yield
        finally:
            evictor.cancel()
            manager.close()

    app = FastAPI(title="koholint env-sim", version="1.0.0", lifespan=lifespan)
    add_exception_handlers(app)

    @app.exception_handler(StoreError)
    async def store_failed(request: Request, error: StoreError) -> JSONResponse:
        return problem_response(503, "Object store failed", str(error), request.url.path)

    app.add_middleware(BodySizeLimitMiddleware, max_bytes=settings.max_body_bytes)
    for router in (health.router, sessions.router, roms.router):
        app.include_router(router)
    Instrumentator(registry=metrics.registry).instrument(app)

    @app.get("/metrics", include_in_schema=False)
    async def prometheus_metrics() -> Response:
        return Response(generate_latest(metrics.registry), media_type=CONTENT_TYPE_LATEST)

    setup_tracing(app, "env-sim", span_exporter or settings.tracing_exporter)
    return app


def main_app() -> FastAPI:
    """Factory for uvicorn: settings from the environment, JSON logs."""
    settings = Settings()
    configure_logging(settings.log_level)
    return create_app(settings)

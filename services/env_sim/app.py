"""env-sim: ``create_app()`` builds the FastAPI app; ``koholint serve env-sim`` runs it."""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import AsyncIterator
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from env_sim.config import Settings
from env_sim.live import LiveStreams
from env_sim.metrics import Metrics
from env_sim.roms import RomRegistry
from env_sim.routes import live, roms, sessions
from env_sim.sessions import SessionManager
from koholint.env.wrappers.positions import process_position_publisher
from koholint.store import StoreError, open_store
from koholint.web.problems import problem_response
from koholint.web.scaffold import check_in_thread, create_service_app, service_factory


def create_app(settings: Settings | None = None, *, span_exporter: object = None) -> FastAPI:
    settings = settings or Settings()
    metrics = Metrics()
    app = create_service_app(
        name="env-sim",
        lifespan=functools.partial(lifespan, settings=settings, metrics=metrics),
        routers=[sessions.router, live.router, roms.router],
        registry=metrics.registry,
        max_body_bytes=settings.max_body_bytes,
        readiness=readiness,
        access=settings,
        tracing_exporter=span_exporter or settings.tracing_exporter,
        schema_limits={
            "StepsRequest": {"actions": {"maxItems": settings.max_batch}},
            "SessionSettings": {"frame_skip": {"maximum": settings.max_frame_skip}},
        },
    )
    app.add_exception_handler(StoreError, store_failed)  # type: ignore[arg-type]
    return app


@contextlib.asynccontextmanager
async def lifespan(app: FastAPI, *, settings: Settings, metrics: Metrics) -> AsyncIterator[None]:
    """The store, the ROMs, the sessions (and their evictor), the live streams."""
    app.state.settings = settings
    app.state.store = open_store(settings.store_url)
    app.state.roms = RomRegistry(
        configured=settings.rom_path,
        upload_dir=Path(settings.rom_dir),
        max_upload_bytes=settings.max_rom_bytes,
        worlds_dir=settings.worlds_dir,
    )
    app.state.sessions = manager = session_manager(settings, metrics)
    app.state.live = LiveStreams(
        settings.max_live_clients, settings.max_live_fps, settings.live_send_timeout_seconds
    )
    evictor = asyncio.create_task(manager.evict_forever())
    try:
        yield
    finally:
        evictor.cancel()
        manager.close()


def session_manager(settings: Settings, metrics: Metrics) -> SessionManager:
    manager = SessionManager(
        max_sessions=settings.max_sessions, ttl_seconds=settings.session_ttl_seconds,
        workers=settings.workers, metrics=metrics,
    )  # fmt: skip
    if settings.redis_url:  # sessions' positions for the console, never stalling a step
        manager.positions = process_position_publisher(
            settings.redis_url, settings.positions_stream, timeout_s=settings.redis_timeout_s
        )
        manager.positions_every = settings.positions_every
    return manager


async def store_failed(request: Request, error: StoreError) -> JSONResponse:
    return problem_response(503, "Object store failed", str(error), request.url.path)


async def readiness(app: FastAPI) -> dict[str, str]:
    """The object store is reachable and writable, and the ROMs are loaded."""
    await check_in_thread("object store", app.state.store.check)
    return {"roms": str(len(app.state.roms.describe()))}


main_app = service_factory(Settings, create_app)

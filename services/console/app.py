"""console: ``create_app()`` builds the FastAPI app; ``koholint serve console`` runs it."""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from fastapi.staticfiles import StaticFiles

from console.config import Settings
from console.fleet import Fleet
from console.live import live_viewers
from console.metrics import Metrics
from console.relay import READ_BLOCK_MS, PositionHub
from console.routes import archive, fleet, judges, map, page, positions, runs, watch
from console.routes.page import STATIC_DIR
from console.worldmap import MapCache
from koholint.bus import connect_redis_async
from koholint.clients import ServiceError
from koholint.store import open_store
from koholint.web.problems import UnavailableError, problem_response
from koholint.web.scaffold import create_service_app, service_factory


def create_app(
    settings: Settings | None = None, *, transport: httpx.AsyncBaseTransport | None = None
) -> FastAPI:
    """The console; `transport` routes its calls to the fleet (tests mount apps in process)."""
    settings = settings or Settings()
    metrics = Metrics()
    app = create_service_app(
        name="console",
        lifespan=functools.partial(
            lifespan, settings=settings, metrics=metrics, transport=transport
        ),
        routers=[
            page.router,
            map.router,
            positions.router,
            watch.router,
            runs.router,
            archive.router,
            judges.router,
            fleet.router,
        ],  # fmt: skip
        registry=metrics.registry,
        max_body_bytes=settings.max_body_bytes,
        readiness=readiness,
        access=settings,
        tracing_exporter=settings.tracing_exporter,
        description="The console: the live map, one env's frames, runs, checkpoints, the fleet.",
    )
    app.mount("/static", StaticFiles(directory=STATIC_DIR), name="static")
    _add_upstream_handlers(app)
    return app


@contextlib.asynccontextmanager
async def lifespan(
    app: FastAPI,
    *,
    settings: Settings,
    metrics: Metrics,
    transport: httpx.AsyncBaseTransport | None,
) -> AsyncIterator[None]:
    """The fleet's clients, the map, the position hub (following Redis), the live viewers."""
    app.state.settings = settings
    app.state.fleet = Fleet(settings, transport=transport)
    app.state.map = MapCache(Path(settings.map_cache_dir), settings.rom_path)
    app.state.hub = hub = PositionHub(
        max_clients=settings.max_clients, max_pending=settings.max_pending,
        history_size=settings.history_size, metrics=metrics,
    )  # fmt: skip
    app.state.live = live_viewers(settings.max_live_clients, settings.send_timeout_seconds)
    app.state.redis = _redis(settings.redis_url, settings.redis_timeout_s)
    app.state.store = open_store(settings.store_url) if settings.store_url else None
    tasks = [asyncio.create_task(asyncio.to_thread(app.state.map.get))]  # render early
    if app.state.redis is not None:
        tasks.append(asyncio.create_task(hub.follow(app.state.redis, settings.positions_stream)))
    try:
        yield
    finally:
        for task in tasks:
            task.cancel()
        await app.state.fleet.aclose()
        if app.state.redis is not None:
            await app.state.redis.aclose()


def _redis(url: str, timeout_s: float) -> Any:
    return connect_redis_async(url, timeout_s=timeout_s, block_ms=READ_BLOCK_MS) if url else None


def _add_upstream_handlers(app: FastAPI) -> None:
    @app.exception_handler(ServiceError)
    async def upstream_failed(request: Request, error: ServiceError) -> JSONResponse:
        """A service's 4xx is passed on as it said it; its 5xx is a 503 naming it."""
        status = error.status if 400 <= error.status < 500 else 503
        detail = str(error.problem.get("detail", error.problem))
        extra = {k: v for k, v in error.problem.items() if k not in ("type", "title", "status",
                 "detail", "instance")}  # fmt: skip
        return problem_response(status, f"{error.service} answered {error.status}", detail,
                                request.url.path, service=error.service, **extra)  # fmt: skip

    @app.exception_handler(httpx.HTTPError)
    async def upstream_unreachable(request: Request, error: httpx.HTTPError) -> JSONResponse:
        return problem_response(503, "Service unreachable", f"a fleet service did not answer: "
                                f"{type(error).__name__}", request.url.path)  # fmt: skip


async def readiness(app: FastAPI) -> dict[str, str]:
    """Redis answers when the live map is configured."""
    if app.state.redis is None:
        return {"positions": "not configured"}
    try:
        await app.state.redis.ping()
    except Exception as error:
        raise UnavailableError(f"redis not ready: {error}") from error
    return {"positions": "connected"}


main_app = service_factory(Settings, create_app)

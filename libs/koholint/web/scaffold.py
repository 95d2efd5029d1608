"""The one way to build a service: ``create_service_app`` adds what every service has.

Each service's ``create_app()`` opens its clients in a lifespan, then calls this with its
routers, its metrics registry and a readiness check. It adds the problem+json exception
handlers, the request-body limit, routing on the path segments as sent (``SegmentsAsSent``),
an OpenAPI spec whose errors are problem+json, ``/healthz``, ``/readyz``, ``/metrics`` (the service's
registry plus the HTTP instrumentator) and tracing when an exporter is configured.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any, Protocol
from urllib.parse import unquote

from fastapi import APIRouter, FastAPI, Request, Response
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from starlette.types import ASGIApp, Receive, Scope, Send

from koholint.web.auth import ControlAccess
from koholint.web.problems import (
    BodySizeLimitMiddleware,
    UnavailableError,
    add_exception_handlers,
    document_problems,
    problem_responses,
)
from koholint.web.streaming import bind_connection
from koholint.web.telemetry import configure_logging, setup_tracing

ENCODED_SLASH = re.compile(r"%2f", re.IGNORECASE)
SchemaLimits = Mapping[str, Mapping[str, Mapping[str, Any]]]
ReadinessCheck = Callable[[FastAPI], Awaitable[dict[str, str]]]
"""Awaited by ``/readyz``: returns details when ready, raises ``UnavailableError`` when not."""


class LoggingSettings(Protocol):
    """What the scaffold's factory reads from a service's settings (koholint.settings)."""

    @property
    def log_level(self) -> str: ...


def create_service_app(
    *,
    name: str,
    lifespan: Callable[[FastAPI], AbstractAsyncContextManager[None]],
    routers: Sequence[APIRouter],
    registry: CollectorRegistry,
    max_body_bytes: int,
    readiness: ReadinessCheck | None = None,
    tracing_exporter: Any = None,
    description: str = "",
    schema_limits: SchemaLimits | None = None,
    access: ControlAccess | None = None,
) -> FastAPI:
    """A FastAPI app for the service `name` with the fleet's common routes and middleware.

    `schema_limits` writes limits that come from settings into the spec (component name ->
    property -> JSON Schema keywords), so that it states the limits this server enforces.
    `access`: the settings of ``koholint.web.auth``'s rule for the state-changing routes.
    """
    app = ServiceApp(
        title=f"koholint {name}",
        version="1.0.0",
        description=description,
        lifespan=lifespan,
    )
    app.state.access = access
    add_exception_handlers(app)
    app.add_middleware(BodySizeLimitMiddleware, max_bytes=max_body_bytes)
    app.add_middleware(SegmentsAsSent)
    app.include_router(_health_router(readiness))
    for router in routers:
        app.include_router(router)
    _add_metrics(app, registry)
    setup_tracing(app, name, tracing_exporter)
    _document(app, schema_limits or {})
    return app


class ServiceApp(FastAPI):
    """FastAPI that learns, per request, how to cut the connection (see ``bind_connection``)."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            bind_connection(send)  # the server's own send: middleware wraps it further in
        await super().__call__(scope, receive, send)


class SegmentsAsSent:
    """Routes on the path segments the client sent: a percent-encoded '/' stays inside its
    segment (as '%2F'), where the server's decoded path would split there and route the
    request elsewhere. So ``..%2F`` is one path parameter, which the path id rule refuses
    (422 naming the field, ``koholint.schemas.fields.PATH_ID``), never a route's parent."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        raw = scope.get("raw_path") if scope["type"] == "http" else None
        if raw:
            sent = raw.split(b"?", 1)[0].decode("latin-1")
            if ENCODED_SLASH.search(sent):
                path = unquote(ENCODED_SLASH.sub("%252F", sent))
                root = scope.get("root_path", "")
                if root and scope["path"].startswith(root):
                    path = root + path  # the server's path is its root, then the request's
                scope = {**scope, "path": path}
        await self.app(scope, receive, send)


def _document(app: FastAPI, schema_limits: SchemaLimits) -> None:
    """The app's spec as the server behaves: errors as problem+json, the configured limits."""
    generate = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            spec = document_problems(generate())
            components = spec["components"]["schemas"]
            for component, properties in schema_limits.items():
                for name, keywords in properties.items():
                    components[component]["properties"][name].update(keywords)
            app.openapi_schema = spec
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]


def _health_router(readiness: ReadinessCheck | None) -> APIRouter:
    router = APIRouter(tags=["health"])

    @router.get("/healthz")
    async def get_healthz() -> dict[str, str]:
        """The process is alive."""
        return {"status": "ok"}

    @router.get("/readyz", responses=problem_responses(503))
    async def get_readyz(request: Request) -> dict[str, str]:
        """The service's dependencies answer (503 naming the one that does not)."""
        details = await readiness(request.app) if readiness else {}
        return {"status": "ready", **details}

    return router


def _add_metrics(app: FastAPI, registry: CollectorRegistry) -> None:
    from prometheus_fastapi_instrumentator import Instrumentator

    Instrumentator(registry=registry).instrument(app)

    @app.get("/metrics", include_in_schema=False)
    async def get_metrics() -> Response:
        return Response(generate_latest(registry), media_type=CONTENT_TYPE_LATEST)


async def check_in_thread(what: str, check: Callable[[], object]) -> None:
    """Run a blocking dependency check off the event loop; 503 naming `what` if it fails."""
    try:
        await asyncio.to_thread(check)
    except Exception as error:
        raise UnavailableError(f"{what} not ready: {error}") from error


def service_factory(
    settings_type: Callable[[], LoggingSettings], create_app: Callable[[Any], FastAPI]
) -> Callable[[], FastAPI]:
    """The uvicorn factory of a service: settings from the environment, JSON logs."""

    def main_app() -> FastAPI:
        settings = settings_type()
        configure_logging(settings.log_level)
        return create_app(settings)

    main_app.__doc__ = "Factory for uvicorn: settings from the environment, JSON logs."
    return main_app

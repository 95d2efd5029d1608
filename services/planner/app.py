"""planner: ``create_app()`` builds the FastAPI app; ``koholint serve planner`` runs it."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

from fastapi import FastAPI

from koholint.planning.backends import LlmBackend
from koholint.web.problems import UnavailableError
from koholint.web.scaffold import create_service_app, service_factory
from planner.config import Settings
from planner.metrics import Metrics
from planner.routes import api
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

    return create_service_app(
        name="planner",
        lifespan=lifespan,
        routers=[api.router],
        registry=metrics.registry,
        max_body_bytes=settings.max_body_bytes,
        readiness=readiness,
        access=settings,
        tracing_exporter=settings.tracing_exporter,
        schema_limits={
            "AutopilotRequest": {
                "max_macros": {"maximum": settings.max_autopilot_macros},
                "max_frames": {"maximum": settings.max_autopilot_frames},
            }
        },
    )


async def readiness(app: FastAPI) -> dict[str, str]:
    """Ready unless every language-model route's circuit is open."""
    backend = app.state.planner.backend
    if isinstance(backend, LlmBackend):
        states = {route: breaker.state for route, breaker in backend.client.breakers.items()}
        if all(state == "open" for state in states.values()):
            raise UnavailableError(f"every route's circuit is open: {states}")
    return {"backend": backend.name}


main_app = service_factory(Settings, create_app)

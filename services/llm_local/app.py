"""llm-local: ``create_app()`` builds the FastAPI app; ``koholint serve llm-local`` runs it."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator

from fastapi import FastAPI, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from prometheus_fastapi_instrumentator import Instrumentator
from starlette.concurrency import run_in_threadpool

from koholint.problems import BodySizeLimitMiddleware, add_exception_handlers
from koholint.telemetry import configure_logging
from llm_local.config import Settings
from llm_local.metrics import Metrics
from llm_local.model import ChatModel
from llm_local.routes import chat, health

logger = logging.getLogger("llm_local")


def create_app(settings: Settings | None = None, model: ChatModel | None = None) -> FastAPI:
    """The app; its lifespan loads the model unless one is given (tests share one)."""
    settings = settings or Settings()
    metrics = Metrics()

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        app.state.settings = settings
        app.state.metrics = metrics
        loaded = model if model is not None else await run_in_threadpool(ChatModel.load, settings)
        app.state.model = loaded
        metrics.model_load_seconds.set(loaded.load_seconds)
        logger.info("model %s loaded in %.2f s", loaded.path.name, loaded.load_seconds)
        try:
            yield
        finally:
            if model is None:  # an injected model belongs to the caller
                loaded.close()

    app = FastAPI(title="koholint llm-local", version="1.0.0", lifespan=lifespan)
    add_exception_handlers(app)
    app.add_middleware(BodySizeLimitMiddleware, max_bytes=settings.max_body_bytes)
    app.include_router(health.router)
    app.include_router(chat.router)
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

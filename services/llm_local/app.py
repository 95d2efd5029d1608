"""llm-local: ``create_app()`` builds the FastAPI app; ``koholint serve llm-local`` runs it."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator

from fastapi import FastAPI
from starlette.concurrency import run_in_threadpool

from koholint.web.problems import UnavailableError
from koholint.web.scaffold import create_service_app, service_factory
from llm_local.config import Settings
from llm_local.metrics import Metrics
from llm_local.model import ChatModel
from llm_local.routes import chat

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

    return create_service_app(
        name="llm-local",
        lifespan=lifespan,
        routers=[chat.router],
        registry=metrics.registry,
        max_body_bytes=settings.max_body_bytes,
        readiness=readiness,
        access=settings,
        schema_limits=schema_limits(settings),
    )


def schema_limits(settings: Settings) -> dict[str, dict[str, dict[str, int]]]:
    """The configured limits, stated in the spec (the server answers 413/422 past them)."""
    tokens = {"maximum": settings.max_tokens_limit}
    return {
        "ChatCompletionRequest": {
            "messages": {"maxItems": settings.max_messages},
            "max_tokens": tokens,
            "max_completion_tokens": tokens,
        }
    }


async def readiness(app: FastAPI) -> dict[str, str]:
    """The model is loaded (503 until then)."""
    model = getattr(app.state, "model", None)
    if model is None:
        raise UnavailableError("the model is still loading")
    return {"model": model.path.name}


main_app = service_factory(Settings, create_app)

"""trainer: ``create_app()`` builds the FastAPI app; ``koholint serve trainer`` runs it."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Annotated, Any

from fastapi import Body, Depends, FastAPI, Query, Request, Response
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_fastapi_instrumentator import Instrumentator
from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from koholint.problems import UnavailableError, add_exception_handlers
from koholint.store import StoreError, open_store
from koholint.telemetry import configure_logging, setup_tracing
from trainer.metrics import RunCollector
from trainer.service import Trainer


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="KOHOLINT_TRAINER_", extra="ignore")

    store_url: str = Field(
        "runs/store", description="object store for episodes, archives and checkpoints"
    )
    run_dir: str = "runs"
    redis_url: str = ""
    ray_address: str = ""
    tracing_exporter: str = "none"
    log_level: str = "INFO"


async def get_trainer(request: Request) -> Trainer:
    return request.app.state.trainer  # type: ignore[no-any-return]


TrainerDep = Annotated[Trainer, Depends(get_trainer)]


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or Settings()
    registry = CollectorRegistry()

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        defaults = {"store_url": settings.store_url, "run_dir": settings.run_dir,
                    "redis_url": settings.redis_url, "ray_address": settings.ray_address}  # fmt: skip
        app.state.trainer = Trainer(open_store(settings.store_url), defaults)
        collector = RunCollector(app.state.trainer)
        registry.register(collector)
        try:
            yield
        finally:
            app.state.trainer.shutdown()
            registry.unregister(collector)

    app = FastAPI(title="koholint trainer", version="1.0.0", lifespan=lifespan)
    add_exception_handlers(app)

    @app.post("/v1/runs", status_code=201)
    async def create_run(
        trainer: TrainerDep, body: Annotated[dict[str, Any], Body()]
    ) -> dict[str, Any]:
        """Start a training run (409 while another is active); fields as in TrainConfig."""
        return trainer.start(body).status.public()

    @app.get("/v1/runs/{run}")
    async def get_run(run: str, trainer: TrainerDep) -> dict[str, Any]:
        """Live status: steps, steps/s, return, rooms, cells, win rate, archive size."""
        return trainer.get(run).status.public()

    @app.post("/v1/runs/{run}/stop")
    async def stop_run(run: str, trainer: TrainerDep) -> dict[str, Any]:
        """Stop after the current iteration (a final checkpoint is saved)."""
        training = trainer.get(run)
        training.stop()
        return training.status.public()

    @app.get("/v1/checkpoints")
    async def list_checkpoints(
        trainer: TrainerDep, run: Annotated[str | None, Query(max_length=128)] = None
    ) -> dict[str, Any]:
        """The checkpoint ledger of a run (the latest run by default)."""
        ledger = trainer.ledger(run)
        return {"run": ledger.run, "checkpoints": ledger.as_json()}

    @app.get("/v1/checkpoints/best")
    async def best_checkpoint(
        trainer: TrainerDep,
        metric: Annotated[str, Query(max_length=64)],
        run: Annotated[str | None, Query(max_length=128)] = None,
    ) -> dict[str, Any]:
        """The checkpoint with the highest value of a metric (e.g. rooms, cells, win_rate)."""
        return trainer.best(run, metric)

    @app.get("/healthz")
    async def healthz() -> dict[str, str]:
        """The process is alive."""
        return {"status": "ok"}

    @app.get("/readyz")
    async def readyz(trainer: TrainerDep) -> dict[str, str]:
        """The object store is writable."""
        try:
            trainer.store.check()
        except StoreError as error:
            raise UnavailableError(f"object store not ready: {error}") from error
        return {"status": "ready"}

    Instrumentator(registry=registry).instrument(app)

    @app.get("/metrics", include_in_schema=False)
    async def prometheus_metrics() -> Response:
        return Response(generate_latest(registry), media_type=CONTENT_TYPE_LATEST)

    setup_tracing(app, "trainer", settings.tracing_exporter)
    return app


def main_app() -> FastAPI:
    settings = Settings()
    configure_logging(settings.log_level)
    return create_app(settings)

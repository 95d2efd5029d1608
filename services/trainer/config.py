"""The trainer service's settings: deployment facts that belong to the operator, never to a request."""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="KOHOLINT_TRAINER_", extra="ignore")

    store_url: str = Field(
        "runs/store", description="object store for episodes, archives and checkpoints"
    )
    run_dir: str = Field("runs", description="local folder for Ray's files, curves and logs")
    redis_url: str = Field("", description="Redis for the streams; empty = no bus")
    ray_address: str = Field("", description="a Ray cluster to join; empty starts Ray locally")
    max_body_bytes: int = Field(64 * 1024, ge=1024, description="request body limit")
    tracing_exporter: str = Field("none", description="none | console | otlp")
    log_level: str = "INFO"

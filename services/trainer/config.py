"""The trainer service's settings: deployment facts that belong to the operator, never to a request.

The deployment fields (store, run folder, Redis, Ray, planner URL) are ``Deployment``'s, read
here from KOHOLINT_TRAINER_* (``RAY_ADDRESS``, Ray's own name, also works).
"""

from __future__ import annotations

from pydantic import AliasChoices, Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

from koholint.web.auth import ControlAccess, is_loopback
from koholint.web.telemetry import TracingExporter
from trainer.ppo.config import Deployment

__all__ = ["Settings", "is_loopback"]


class Settings(BaseSettings, Deployment, ControlAccess):
    model_config = SettingsConfigDict(
        env_prefix="KOHOLINT_TRAINER_", extra="ignore", populate_by_name=True
    )

    ray_address: str = Field(
        "",
        validation_alias=AliasChoices("ray_address", "KOHOLINT_TRAINER_RAY_ADDRESS", "RAY_ADDRESS"),
        description="join this Ray cluster (KubeRay); empty starts Ray locally, on loopback",
    )
    host: str = Field(
        "127.0.0.1",
        description="the address the service listens on (as `koholint serve --host`); beyond "
        "loopback it refuses to start without a token",
    )
    token: SecretStr = Field(
        SecretStr(""),
        description="bearer token that POST requests (run control) must carry; required when "
        "the service listens beyond localhost",
    )
    trajectory_dir: str = Field(
        "",
        description="the folder whose files a request may name as curriculum_trajectory "
        "(beside keys in the object store); empty: the run folder (run_dir)",
    )
    max_kept_runs: int = Field(
        20, ge=1, le=10_000, description="finished and failed runs kept in memory (and /metrics)"
    )
    max_body_bytes: int = Field(64 * 1024, ge=1024, description="request body limit")
    tracing_exporter: TracingExporter = Field("none", description="none | console | otlp")
    log_level: str = "INFO"

    def deployment(self) -> Deployment:
        return Deployment.model_validate(self.model_dump(include=set(Deployment.model_fields)))

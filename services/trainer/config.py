"""The trainer's deployment: where runs keep their files and find their services.

``Deployment`` is what only the operator chooses (store, run folder, Redis, Ray, the planner's
URL): the service reads it from KOHOLINT_TRAINER_* (``RAY_ADDRESS``, Ray's own name, also
works) and ``koholint train`` takes it as flags; a request body never sets it. ``Settings``
adds what the service alone needs.
"""

from __future__ import annotations

from pydantic import AliasChoices, Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

from koholint.settings import (
    RedisSettings,
    RunFolderSettings,
    ServiceSettings,
    StoreSettings,
    WorldsFolderSettings,
)
from koholint.web.auth import ControlAccess, is_loopback

__all__ = ["Deployment", "Settings", "is_loopback"]

PREFIX = "KOHOLINT_TRAINER_"


class Deployment(
    BaseSettings, StoreSettings, RedisSettings, RunFolderSettings, WorldsFolderSettings
):
    """Where a run keeps its files and finds its services: the operator's choice."""

    model_config = SettingsConfigDict(
        env_prefix=PREFIX, extra="ignore", populate_by_name=True, use_attribute_docstrings=True
    )

    ray_address: str = Field(
        "",
        max_length=4096,
        validation_alias=AliasChoices("ray_address", f"{PREFIX}RAY_ADDRESS", "RAY_ADDRESS"),
    )
    """join this Ray cluster (KubeRay); empty starts Ray locally, on loopback"""
    planner_url: str = Field("", max_length=4096)
    """the planner service (planner=http) or the language-model base URL (local, llm-d)"""
    planner_token: SecretStr = Field(SecretStr(""), max_length=4096)
    """the bearer token of planner_url's service (its KOHOLINT_PLANNER_TOKEN, or llm-local's
    KOHOLINT_LLM_LOCAL_TOKEN); from the environment only, never a flag"""


class Settings(ServiceSettings, Deployment, ControlAccess):
    """The trainer service: its deployment, who may control runs, how many it remembers."""

    model_config = SettingsConfigDict(
        env_prefix=PREFIX, extra="ignore", populate_by_name=True, use_attribute_docstrings=True
    )

    host: str = Field("127.0.0.1", max_length=255)
    """the address the service listens on (as `koholint serve --host`); beyond loopback it
    refuses to start without a token"""
    trajectory_dir: str = Field("", max_length=4096)
    """the folder whose files a request may name as curriculum.trajectory (beside keys in the
    object store); empty: the run folder (run_dir)"""
    max_kept_runs: int = Field(20, ge=1, le=10_000)
    """finished and failed runs kept in memory (and /metrics)"""

    def deployment(self) -> Deployment:
        return Deployment.model_validate(self.model_dump(include=set(Deployment.model_fields)))

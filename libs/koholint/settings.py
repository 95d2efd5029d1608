"""The settings that more than one service has, declared once.

Each service's ``Settings`` inherits ``ServiceSettings`` (body limit, tracing, log level) and
the mixins for the parts of the fleet it uses — the object store, Redis, the streams, a stream
consumer — under its own environment prefix. Where a service wants another default for a
shared field it says so in ``service_defaults``, never by declaring the field again.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, BeforeValidator, Field, SecretStr, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from koholint.bus import (
    REDIS_TIMEOUT_SECONDS,
    STREAM_POSITIONS,
    STREAM_REWARD_MODELS,
    STREAM_SCORES,
    STREAM_SEGMENTS,
)
from koholint.web.telemetry import TracingExporter

MAX_BODY_BYTES = 1024**3
STREAM_NAME_PATTERN = r"^[A-Za-z0-9_.:-]{1,128}$"
LogLevel = Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"]


def _upper(value: Any) -> Any:
    return value.upper() if isinstance(value, str) else value


class ServiceSettings(BaseSettings):
    """What the service scaffold (``koholint.web.scaffold``) reads from a service's settings."""

    model_config = SettingsConfigDict(extra="ignore", use_attribute_docstrings=True)
    service_defaults: ClassVar[dict[str, Any]] = {}
    """this service's own defaults for fields declared in a shared base (its body limit, say)"""

    max_body_bytes: int = Field(64 * 1024, ge=1024, le=MAX_BODY_BYTES)
    """request body limit in bytes (413 beyond it); each service has its own default"""
    tracing_exporter: TracingExporter = "none"
    """OpenTelemetry spans: none, console (printed) or otlp (OTEL_EXPORTER_OTLP_*)"""
    log_level: Annotated[LogLevel, BeforeValidator(_upper)] = "INFO"
    """the service's log level"""

    @model_validator(mode="before")
    @classmethod
    def _with_service_defaults(cls, values: Any) -> Any:
        if isinstance(values, dict):
            return {**cls.service_defaults, **values}
        return values


class StoreSettings(BaseModel):
    """The object store the fleet shares: episodes, scores, reward models, checkpoints."""

    store_url: str = Field("runs/store", max_length=4096)
    """object store: a path, file:// or s3:// (empty where the store is optional: none)"""


class RedisSettings(BaseModel):
    """The Redis that carries the fleet's streams."""

    redis_url: str = Field("", max_length=4096)
    """redis://...; empty = no Redis (the in-process bus, or no stream where it is optional)"""
    redis_timeout_s: float = Field(REDIS_TIMEOUT_SECONDS, gt=0, le=300)
    """connect and socket timeout of every Redis call (blocking reads add their block time):
    a stalled Redis fails a call, it never hangs a thread"""


class StreamSettings(BaseModel):
    """The fleet's stream names: a producer and its consumers must agree, so they are one setting."""

    segments_stream: str = Field(STREAM_SEGMENTS, pattern=STREAM_NAME_PATTERN)
    """exported segments, trainer -> evaluator"""
    scores_stream: str = Field(STREAM_SCORES, pattern=STREAM_NAME_PATTERN)
    """scored segments, evaluator -> reward model"""
    models_stream: str = Field(STREAM_REWARD_MODELS, pattern=STREAM_NAME_PATTERN)
    """published reward-model versions, reward model -> trainer"""
    positions_stream: str = Field(STREAM_POSITIONS, pattern=STREAM_NAME_PATTERN)
    """where each env is, envs -> console (capped, lossy by design)"""


class ConsumerSettings(BaseModel):
    """A service that consumes a stream in a consumer group."""

    consume: bool = True
    """consume the stream in the background (needs redis_url, or the in-process bus)"""
    group: str = Field("koholint", pattern=r"^[A-Za-z0-9_.-]{1,64}$")
    """the consumer group (the service's name by default)"""
    block_ms: int = Field(2000, ge=1, le=60_000)
    """wait for new messages at most this long per read"""


class EnvSimClientSettings(BaseModel):
    """A service that drives env-sim sessions (the planner's autopilot, the console's play)."""

    env_sim_url: str = Field("", max_length=4096)
    """env-sim's base URL; empty = not deployed"""
    env_sim_token: SecretStr = Field(SecretStr(""), max_length=4096)
    """env-sim's token (its KOHOLINT_ENV_SIM_TOKEN), sent with every state-changing request"""


class RunFolderSettings(BaseModel):
    """The local folder of a run's files: the trainer's and the loop's, which hands it on."""

    run_dir: str = Field(
        "runs",
        max_length=4096,
        description="local folder for Ray's files, the learning curve and logs (one folder per run)",
    )


class WorldsFolderSettings(BaseModel):
    """An operator's folder of worlds that requests name (env-sim's ROMs, the trainer's runs)."""

    worlds_dir: str = Field(
        "",
        max_length=4096,
        description="a folder of worlds (NAME/cartridge.gb from `koholint cartridge generate "
        "--out`) that requests name; empty: none",
    )

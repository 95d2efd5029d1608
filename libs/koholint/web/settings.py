"""The settings every service has, declared once: body limit, tracing, log level.

Each service's ``Settings`` inherits ``ServiceSettings`` and sets its environment prefix and,
where its bodies are larger than most, its own default body limit.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import BeforeValidator, Field, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from koholint.web.telemetry import TracingExporter

MAX_BODY_BYTES = 1024**3
LogLevel = Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"]


def _upper(value: Any) -> Any:
    return value.upper() if isinstance(value, str) else value


class ServiceSettings(BaseSettings):
    """What the service scaffold (``koholint.web.scaffold``) reads from a service's settings."""

    model_config = SettingsConfigDict(extra="ignore", use_attribute_docstrings=True)
    default_body_bytes: ClassVar[int] = 64 * 1024
    """the service's own body limit, when max_body_bytes is not set"""

    max_body_bytes: int = Field(64 * 1024, ge=1024, le=MAX_BODY_BYTES)
    """request body limit in bytes (413 beyond it); each service has its own default"""
    tracing_exporter: TracingExporter = "none"
    """OpenTelemetry spans: none, console (printed) or otlp (OTEL_EXPORTER_OTLP_*)"""
    log_level: Annotated[LogLevel, BeforeValidator(_upper)] = "INFO"
    """the service's log level"""

    @model_validator(mode="before")
    @classmethod
    def _service_body_limit(cls, values: Any) -> Any:
        if isinstance(values, dict) and "max_body_bytes" not in values:
            return {**values, "max_body_bytes": cls.default_body_bytes}
        return values

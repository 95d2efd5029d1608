"""Tracing and structured logs for the services. Tracing is off unless an exporter is set."""

from __future__ import annotations

import json
import logging
import sys
from typing import Any

LOG_FIELDS = ("service", "session", "rom", "event")


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message, and known extra fields."""

    def format(self, record: logging.LogRecord) -> str:
        document: dict[str, Any] = {
            "time": self.formatTime(record, "%Y-%m-%dT%H:%M:%S"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        for name in LOG_FIELDS:
            if hasattr(record, name):
                document[name] = getattr(record, name)
        if record.exc_info:
            document["error"] = self.formatException(record.exc_info)
        return json.dumps(document)


def configure_logging(level: str = "INFO") -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())


def setup_tracing(app: Any, service_name: str, exporter: Any = None) -> Any:
    """Instrument a FastAPI app when `exporter` is 'console', 'otlp' or a SpanExporter; else no-op.

    Returns the tracer provider (None when tracing is off)."""
    if exporter in (None, "", "none"):
        return None
    from opentelemetry.instrumentation.fastapi import FastAPIInstrumentor
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import (
        BatchSpanProcessor,
        ConsoleSpanExporter,
        SimpleSpanProcessor,
    )

    provider = TracerProvider(resource=Resource.create({"service.name": service_name}))
    if exporter == "console":
        provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter()))
    elif exporter == "otlp":
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        provider.add_span_processor(
            BatchSpanProcessor(OTLPSpanExporter())
        )  # OTEL_EXPORTER_OTLP_* settings
    elif isinstance(exporter, str):
        raise ValueError(f"tracing exporter {exporter!r}: use 'none', 'console' or 'otlp'")
    else:
        provider.add_span_processor(SimpleSpanProcessor(exporter))
    FastAPIInstrumentor.instrument_app(app, tracer_provider=provider)
    return provider

"""Tracing and structured logs for the services. Tracing is off unless an exporter is set."""

from __future__ import annotations

import contextvars
import json
import logging
import sys
from typing import Any, Literal

import httpx

TracingExporter = Literal["none", "console", "otlp"]
"""A service's ``tracing_exporter`` setting: off, spans printed, or OTLP (OTEL_EXPORTER_OTLP_*)."""

LOG_FIELDS = ("service", "session", "rom", "event")
CLIENT_SPAN = "koholint.client_span"  # request.extensions key of an outgoing call's span

# The tracer of the service handling the current request (set per request by setup_tracing's
# server hook); outgoing calls made for that request get client spans from it.
_service_tracer: contextvars.ContextVar[Any] = contextvars.ContextVar(
    "koholint_tracer", default=None
)


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
    tracer = provider.get_tracer(__name__)

    def on_request(span: Any, scope: dict[str, Any]) -> None:
        _service_tracer.set(tracer)

    FastAPIInstrumentor.instrument_app(
        app, tracer_provider=provider, server_request_hook=on_request
    )
    return provider


class BackgroundSpan:
    """A span for work a request starts and a thread carries on (a training run): a child of
    the request's span, current in the thread that enters it, ended when that thread leaves.
    Without tracing (no service tracer in the request) it does nothing."""

    def __init__(self, name: str, attributes: dict[str, Any]) -> None:
        # Created in the request: threads start with an empty context, so take the tracer and
        # the request's span here.
        self._tracer = _service_tracer.get()
        otel = _otel()
        self._span = (
            None
            if self._tracer is None or otel is None
            else self._tracer.start_span(name, attributes=attributes)
        )
        self._scope: Any = None

    def set_attributes(self, attributes: dict[str, Any]) -> None:
        if self._span is not None:
            self._span.set_attributes(attributes)

    def fail(self, description: str) -> None:
        """Mark the work failed (for work that records its error instead of raising it)."""
        if self._span is not None:
            from opentelemetry.trace import Status, StatusCode

            self._span.set_status(Status(StatusCode.ERROR, description))

    def __enter__(self) -> BackgroundSpan:
        if self._span is not None:
            from opentelemetry import trace

            _service_tracer.set(self._tracer)  # calls made in this thread get client spans
            self._scope = trace.use_span(self._span, end_on_exit=True, record_exception=True)
            self._scope.__enter__()
        return self

    def __exit__(self, *exc_info: Any) -> None:
        if self._scope is not None:
            self._scope.__exit__(*exc_info)


def _otel() -> tuple[Any, Any] | None:
    """(opentelemetry.propagate, opentelemetry.trace), or None without OpenTelemetry."""
    try:
        from opentelemetry import propagate, trace
    except ImportError:  # an optional dependency
        return None
    return propagate, trace


def _inject_trace_context(request: httpx.Request) -> None:
    """Request hook: a client span for the call (when a tracer is active: the serving app's, else
    the global provider's) and the W3C trace context (traceparent) in the request's headers."""
    otel = _otel()
    if otel is None:
        return
    propagate, trace = otel
    tracer = _service_tracer.get() or trace.get_tracer(__name__)
    span = tracer.start_span(
        request.method,
        kind=trace.SpanKind.CLIENT,
        attributes={
            "http.request.method": request.method,
            "url.full": str(request.url.copy_with(query=None)),
            "server.address": request.url.host,
            "server.port": request.url.port or (443 if request.url.scheme == "https" else 80),
        },
    )
    if span.is_recording():
        request.extensions[CLIENT_SPAN] = span
    propagate.inject(request.headers, context=trace.set_span_in_context(span))


def _end_client_span(response: httpx.Response) -> None:
    """Response hook: the call's client span ends with the response's status."""
    span = response.request.extensions.get(CLIENT_SPAN)
    if span is None:
        return
    from opentelemetry.trace import Status, StatusCode

    span.set_attribute("http.response.status_code", response.status_code)
    if response.status_code >= 400:
        span.set_status(Status(StatusCode.ERROR))
    span.end()


def tracing_event_hooks() -> dict[str, list[Any]]:
    """httpx event hooks that carry the current trace into outgoing calls (no-op without
    OpenTelemetry). A call that fails before any response leaves its client span unexported."""
    return {"request": [_inject_trace_context], "response": [_end_client_span]}

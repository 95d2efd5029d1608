"""One trace across trainer -> planner -> LLM route, over real HTTP, and the hooks without a trace."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from fastapi import FastAPI, Request
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

import planner.app
from console.config import Settings as ConsoleSettings
from env_sim.config import Settings as EnvSimSettings
from evaluator.config import Settings as EvaluatorSettings
from koholint.clients.planner import PlannerClient
from koholint.game.emulator import GameBoy
from koholint.planning.memory import SessionMemory
from koholint.planning.view import read_view
from koholint.web.telemetry import setup_tracing, tracing_event_hooks
from planner.config import Settings
from reward_model.config import Settings as RewardModelSettings
from trainer.config import Settings as TrainerSettings


def scripted_llm(exporter: InMemorySpanExporter) -> tuple[FastAPI, list[dict[str, str]]]:
    """An OpenAI-compatible route server answering every call with a valid /state answer."""
    app, seen = FastAPI(), []

    @app.post("/{route}/v1/chat/completions")
    async def complete(route: str, request: Request) -> dict[str, Any]:
        seen.append(dict(request.headers))
        content = json.dumps({"goal": "find the sword"})
        return {
            "id": "chatcmpl-test", "object": "chat.completion", "created": 0, "model": route,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                         "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 11, "completion_tokens": 5, "total_tokens": 16},
        }  # fmt: skip

    setup_tracing(app, "llm-route", exporter)
    return app, seen


def server_span(spans: tuple[ReadableSpan, ...]) -> ReadableSpan:
    (span,) = [s for s in spans if s.kind == SpanKind.SERVER]
    return span


def parent_of(span: ReadableSpan) -> int | None:
    return None if span.parent is None else span.parent.span_id


def test_one_trace_from_trainer_to_planner_to_llm_route(
    serve: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    llm_spans, planner_spans, trainer_spans = (InMemorySpanExporter() for _ in range(3))
    llm_app, llm_headers = scripted_llm(llm_spans)
    llm_url = serve(llm_app)

    create_service_app = planner.app.create_service_app

    def with_memory_exporter(**kwargs: Any) -> FastAPI:
        assert kwargs["tracing_exporter"] == "console"  # the setting reaches the scaffold
        return create_service_app(**{**kwargs, "tracing_exporter": planner_spans})

    monkeypatch.setattr(planner.app, "create_service_app", with_memory_exporter)
    settings = Settings(
        backend="llm-d", llm_base_url=llm_url, llm_attempts=1, tracing_exporter="console"
    )
    planner_url = serve(planner.app.create_app(settings))

    trainer = TracerProvider()
    trainer.add_span_processor(SimpleSpanProcessor(trainer_spans))
    with GameBoy() as gameboy:
        gameboy.reset("start_of_play")
        situation = read_view(gameboy).situation()
    client = PlannerClient(planner_url, session="traced")
    with trainer.get_tracer("trainer").start_as_current_span("rollout step"):
        decision = client.decide(situation, SessionMemory())
    client.close()
    assert decision.goal == "find the sword"
    assert len(llm_headers) == 1
    assert "traceparent" in llm_headers[0]

    (step,) = trainer_spans.get_finished_spans()
    planned = planner_spans.get_finished_spans()
    planner_server = server_span(planned)
    (call,) = [s for s in planned if s.kind == SpanKind.CLIENT]
    route = server_span(llm_spans.get_finished_spans())
    trace_id = step.context.trace_id
    assert {s.context.trace_id for s in (planner_server, call, route)} == {trace_id}
    assert parent_of(planner_server) == step.context.span_id
    assert parent_of(call) == planner_server.context.span_id
    assert parent_of(route) == call.context.span_id
    assert call.name == "POST"
    assert call.attributes is not None
    assert call.attributes["http.response.status_code"] == 200
    assert call.attributes["url.full"] == f"{llm_url}/state/v1/chat/completions"


def test_hooks_add_nothing_outside_a_trace() -> None:
    seen: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(204)

    transport = httpx.MockTransport(answer)
    with httpx.Client(transport=transport, event_hooks=tracing_event_hooks()) as http:
        assert http.get("http://example.test/").status_code == 204
    assert "traceparent" not in seen[0].headers


@pytest.mark.parametrize(
    "settings",
    [
        Settings,
        EvaluatorSettings,
        ConsoleSettings,
        EnvSimSettings,
        RewardModelSettings,
        TrainerSettings,
    ],
)
def test_tracing_setting_is_checked(settings: Any) -> None:
    assert settings().tracing_exporter == "none"
    with pytest.raises(ValueError, match="'none', 'console' or 'otlp'"):
        settings(tracing_exporter="jaeger")

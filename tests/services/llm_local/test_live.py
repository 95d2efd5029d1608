"""The real model behind a real server: structure and validity of answers, never their meaning."""

from __future__ import annotations

import json
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import jsonschema
import pytest

from koholint.llm.client import LlmClient, RetryPolicy, RouteSettings
from koholint.planning.backends import DialogAnswer
from koholint.web.problems import PROBLEM_JSON
from llm_local.config import Settings
from llm_local.routes.chat import ROUTES

ANSWER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "action": {"type": "string", "enum": ["advance", "choose", "wait"]},
        "option": {"type": "integer", "minimum": 0, "maximum": 3},
        "note": {"type": "string", "maxLength": 12},
    },
    "required": ["action", "option", "note"],
    "additionalProperties": False,
}
MESSAGES = [
    {"role": "system", "content": "You play a game. Answer with one JSON object."},
    {"role": "user", "content": "A dialog box asks: buy the shield? Options: 0 yes, 1 no."},
]


def structured_request(seed: int, **overrides: Any) -> dict[str, Any]:
    body = {
        "model": "any-name",
        "messages": MESSAGES,
        "seed": seed,
        "temperature": 1.0,
        "max_tokens": 96,
        "response_format": {
            "type": "json_schema",
            "json_schema": {"name": "Answer", "schema": ANSWER_SCHEMA, "strict": True},
        },
    }
    return body | overrides


def assert_problem(response: httpx.Response, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith(PROBLEM_JSON)
    problem = response.json()
    assert problem["status"] == status
    assert problem["detail"]
    return problem  # type: ignore[no-any-return]


@pytest.mark.parametrize("seed", [0, 1, 2, 3, 4, 2**40])
def test_json_schema_answer_validates(http: httpx.Client, seed: int) -> None:
    response = http.post("/dialog/v1/chat/completions", json=structured_request(seed))
    assert response.status_code == 200, response.text
    choice = response.json()["choices"][0]
    assert choice["finish_reason"] == "stop"
    jsonschema.validate(json.loads(choice["message"]["content"]), ANSWER_SCHEMA)


@pytest.mark.parametrize("seed", [10, 11])
def test_free_strings_are_valid_json(http: httpx.Client, seed: int) -> None:
    """llama-cpp's own grammar let a raw newline into a string here (seed 11): not valid JSON."""
    schema = {
        "type": "object",
        "properties": {
            "action": {"type": "string", "enum": ["advance", "choose", "wait"]},
            "note": {"type": "string", "maxLength": 12},
        },
        "required": ["action", "note"],
        "additionalProperties": False,
    }
    messages = [
        MESSAGES[0],
        {"role": "user", "content": MESSAGES[1]["content"] + " Explain in several lines."},
    ]
    body = {
        "messages": messages, "seed": seed, "temperature": 1.0, "max_tokens": 64,
        "response_format": {"type": "json_object", "schema": schema},
    }  # fmt: skip
    content = http.post("/v1/chat/completions", json=body).json()["choices"][0]["message"][
        "content"
    ]
    jsonschema.validate(json.loads(content), schema)


def test_same_seed_same_prompt_same_answer(http: httpx.Client) -> None:
    first = http.post("/v1/chat/completions", json=structured_request(seed=11)).json()
    http.post("/v1/chat/completions", json=structured_request(seed=12))  # state in between
    again = http.post("/v1/chat/completions", json=structured_request(seed=11)).json()
    assert again["choices"][0]["message"] == first["choices"][0]["message"]
    assert again["usage"] == first["usage"]


def test_completion_has_the_openai_shape(http: httpx.Client, settings: Settings) -> None:
    completion = http.post("/v1/chat/completions", json=structured_request(seed=5)).json()
    assert completion["object"] == "chat.completion"
    assert completion["id"].startswith("chatcmpl-")
    assert isinstance(completion["created"], int)
    assert completion["model"] == settings.model_name  # whatever name was asked for
    assert completion["choices"][0]["message"]["role"] == "assistant"
    usage = completion["usage"]
    for key in ("prompt_tokens", "completion_tokens", "total_tokens"):
        assert isinstance(usage[key], int)
        assert usage[key] > 0
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]


@pytest.mark.parametrize("route", ROUTES)
def test_gateway_routes_answer(http: httpx.Client, route: str) -> None:
    body = {"model": route, "messages": MESSAGES, "seed": 1, "max_tokens": 4}
    response = http.post(f"/{route}/v1/chat/completions", json=body)
    assert response.status_code == 200, response.text
    assert isinstance(response.json()["choices"][0]["message"]["content"], str)


def test_unknown_route_is_404(http: httpx.Client) -> None:
    body = {"messages": MESSAGES, "max_tokens": 4}
    problem = assert_problem(http.post("/nope/v1/chat/completions", json=body), 404)
    assert "dialog" in problem["detail"]


def test_json_object_and_text_parts(http: httpx.Client) -> None:
    messages = [{"role": "user", "content": [{"type": "text", "text": "Give a JSON object."}]}]
    body = {
        "messages": messages,
        "seed": 3,
        "max_tokens": 24,
        "response_format": {"type": "json_object"},
    }
    response = http.post("/state/v1/chat/completions", json=body)
    assert response.status_code == 200, response.text
    choice = response.json()["choices"][0]
    assert choice["message"]["content"].startswith("{")  # the grammar's root is an object
    if choice["finish_reason"] == "stop":
        assert isinstance(json.loads(choice["message"]["content"]), dict)


def test_planner_client_gets_validated_answers(live_server: Any) -> None:
    """The planner's own client (koholint.llm.client) against this server."""
    routes = {"dialog": RouteSettings(model="local", timeout_s=60, temperature=0.7)}
    client = LlmClient(live_server.url, routes, retry=RetryPolicy(attempts=1))
    try:
        answer = client.ask("dialog", MESSAGES, DialogAnswer, seed=1)
    finally:
        client.close()
    assert isinstance(answer.value, DialogAnswer)
    assert answer.record.outcome == "valid"
    assert answer.record.completion_tokens > 0


def test_event_loop_answers_while_generating(http: httpx.Client, live_server: Any) -> None:
    # At least 60 digits: the grammar forces all 64 tokens to be generated.
    schema = {
        "type": "array",
        "items": {"type": "integer", "minimum": 0, "maximum": 9},
        "minItems": 60,
    }
    long_answer = {
        "messages": MESSAGES, "seed": 2, "max_tokens": 64,
        "response_format": {"type": "json_object", "schema": schema},
    }  # fmt: skip
    finished: list[float] = []
    with ThreadPoolExecutor(max_workers=2) as pool:
        generations = [
            pool.submit(http.post, "/puzzle/v1/chat/completions", json=long_answer)
            for _ in range(2)
        ]
        for generation in generations:
            generation.add_done_callback(lambda _: finished.append(time.perf_counter()))
        time.sleep(0.1)
        health = httpx.get(f"{live_server.url}/healthz", timeout=30)
        health_answered = time.perf_counter()
        responses = [generation.result() for generation in generations]
    assert health.status_code == 200
    assert health_answered < min(finished), "/healthz waited for a generation"
    # Two requests at once, serialised by the model's lock: both answered in full.
    assert [response.status_code for response in responses] == [200, 200]
    assert {response.json()["choices"][0]["finish_reason"] for response in responses} == {"length"}


def test_health_ready_models_metrics(http: httpx.Client, settings: Settings) -> None:
    assert http.get("/healthz").json() == {"status": "ok"}
    assert http.get("/readyz").json()["status"] == "ready"
    models = http.get("/v1/models").json()
    assert [card["id"] for card in models["data"]] == [settings.model_name]
    http.post("/dialog/v1/chat/completions", json={"messages": MESSAGES, "max_tokens": 2})
    metrics = http.get("/metrics").text
    assert 'llm_local_completions_total{finish_reason="length",route="dialog"}' in metrics
    assert 'llm_local_tokens_total{kind="completion"}' in metrics


def test_image_part_is_400(http: httpx.Client) -> None:
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}
    messages = [{"role": "user", "content": [{"type": "text", "text": "What is this?"}, image]}]
    problem = assert_problem(
        http.post("/vision/v1/chat/completions", json={"messages": messages}), 400
    )
    assert "text-only" in problem["detail"]


def test_body_over_the_limit_is_413(http: httpx.Client, settings: Settings) -> None:
    text = "x" * (settings.max_body_bytes + 1)
    body = {"messages": [{"role": "user", "content": text}]}
    problem = assert_problem(http.post("/v1/chat/completions", json=body), 413)
    assert problem["limit_bytes"] == settings.max_body_bytes


def test_malformed_json_is_422(http: httpx.Client) -> None:
    response = http.post(
        "/v1/chat/completions",
        content=b'{"messages": [',
        headers={"content-type": "application/json"},
    )
    assert_problem(response, 422)


def test_max_tokens_over_the_limit_names_the_limit(http: httpx.Client, settings: Settings) -> None:
    body = {"messages": MESSAGES, "max_tokens": settings.max_tokens_limit + 1}
    problem = assert_problem(http.post("/v1/chat/completions", json=body), 422)
    assert problem["limit"] == settings.max_tokens_limit


def test_too_many_messages_is_422(http: httpx.Client, settings: Settings) -> None:
    body = {"messages": [{"role": "user", "content": "hi"}] * (settings.max_messages + 1)}
    problem = assert_problem(http.post("/v1/chat/completions", json=body), 422)
    assert problem["limit"] == settings.max_messages


def test_too_long_message_is_413(http: httpx.Client, settings: Settings) -> None:
    body = {"messages": [{"role": "user", "content": "y" * (settings.max_message_chars + 1)}]}
    problem = assert_problem(http.post("/v1/chat/completions", json=body), 413)
    assert problem["limit"] == settings.max_message_chars


def test_prompt_over_the_context_window_is_413(http: httpx.Client, settings: Settings) -> None:
    words = "castle key sword shield " * (settings.max_message_chars // 25)
    body = {"messages": [{"role": "user", "content": words}] * 4, "max_tokens": 4}
    problem = assert_problem(http.post("/v1/chat/completions", json=body), 413)
    assert problem["limit_tokens"] == settings.n_ctx
    # The failure happened under the model's lock: the next request must still be served.
    assert http.post("/v1/chat/completions", json=structured_request(seed=1)).status_code == 200


@pytest.mark.parametrize(
    ("overrides", "status"),
    [
        ({"n": 2}, 400),
        ({"stream": True}, 400),
        ({"response_format": {"type": "grammar"}}, 400),
        ({"response_format": {"type": "json_schema", "json_schema": "nope"}}, 400),
        (
            {"response_format": {"type": "json_schema", "json_schema": {"schema": {"$ref": "x"}}}},
            400,
        ),
        ({"messages": []}, 422),
        ({"messages": [{"role": "tool", "content": "hi"}]}, 422),
        ({"temperature": 3}, 422),
        ({"max_tokens": 0}, 422),
        ({"stop": ["a", "b", "c", "d", "e"]}, 422),
        ({"messages": "hello"}, 422),
    ],
)
def test_bad_requests_are_problems(
    http: httpx.Client, overrides: dict[str, Any], status: int
) -> None:
    body = {"messages": MESSAGES, "max_tokens": 4} | overrides
    assert_problem(http.post("/v1/chat/completions", json=body), status)


def test_json_array_body_is_422(http: httpx.Client) -> None:
    assert_problem(http.post("/v1/chat/completions", json=[1, 2]), 422)

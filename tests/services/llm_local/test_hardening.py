"""llm-local under hostile input and the official OpenAI SDK: its spec says what it
does, schemas have limits, and the same seed gives the same answer whatever came before."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Literal

import httpx
import openai
import pytest
from pydantic import BaseModel
from tests.contracts import assert_problem, assert_problem_spec, check_openapi_contract

from koholint.llm.client import ROUTES
from llm_local.app import create_app
from llm_local.config import Settings
from llm_local.model import MAX_ENUM_VALUES, MAX_SCHEMA_DEPTH, ChatModel

CHAT_PATHS = ("/v1/chat/completions", "/{route}/v1/chat/completions")
# A schema-valid request may still be refused there: the JSON Schema inside response_format is
# data that no OpenAPI schema can judge (422, or 400 when it names an unknown format), and the
# sum of text parts and the context window are not expressible either (413).
OPAQUE_BODIES = {path: [400, 413, 422] for path in CHAT_PATHS}
# Small enough that any schema-valid prompt fits the test model's 1024-token context.
CONTRACT_LIMITS = {"max_tokens_limit": 8, "max_messages": 2, "max_message_chars": 64}


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_openapi_contract_holds_under_schemathesis(
    settings: Settings, model: ChatModel, tmp_path: Path
) -> None:
    limited = settings.model_copy(update=CONTRACT_LIMITS)
    check_openapi_contract(
        create_app(limited, model=model), max_examples=3, opaque_bodies=OPAQUE_BODIES,
        tmp_dir=tmp_path,
    )  # fmt: skip


def test_spec_documents_problem_json_and_the_limits(settings: Settings) -> None:
    spec = create_app(settings).openapi()
    assert_problem_spec(spec)
    request = spec["components"]["schemas"]["ChatCompletionRequest"]["properties"]
    assert request["max_tokens"]["maximum"] == settings.max_tokens_limit
    assert request["messages"]["maxItems"] == settings.max_messages
    chat = spec["paths"]["/{route}/v1/chat/completions"]["post"]["responses"]
    assert set(chat) >= {"200", "400", "404", "413", "422", "500"}


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"temperature": "hot"}, "temperature"),
        ({"max_tokens": True}, "max_tokens"),
        ({"messages": [{"role": "tool", "content": "hi"}]}, "messages.0.role"),
    ],
)
def test_malformed_requests_get_problems_naming_the_field(
    http: httpx.Client, change: dict[str, Any], field: str
) -> None:
    body = {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 2} | change
    assert_problem(http.post("/v1/chat/completions", json=body), 422, field)


def json_schema_format(schema: dict[str, Any]) -> dict[str, Any]:
    return {"type": "json_schema", "json_schema": {"name": "Answer", "schema": schema}}


def nested(depth: int) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(depth):
        schema = {"type": "object", "properties": {"inner": schema}}
    return schema


@pytest.mark.parametrize(
    ("schema", "reason"),
    [
        (nested(300), "deeper than"),
        ({"type": "string", "enum": [str(n) for n in range(5_000)]}, "values"),
    ],
)
def test_schemas_over_the_limits_are_refused_at_once(
    http: httpx.Client, schema: dict[str, Any], reason: str
) -> None:
    """A 300-deep schema was a 500 (RecursionError); a 20,000-string enum cost 9 s of CPU
    (5,000 here, to stay under the test server's body limit)."""
    body = {
        "messages": [{"role": "user", "content": "pick one"}],
        "max_tokens": 8,
        "response_format": json_schema_format(schema),
    }
    started = time.perf_counter()
    problem = assert_problem(http.post("/v1/chat/completions", json=body), 422, "response_format")
    assert time.perf_counter() - started < 2
    assert reason in problem["detail"]
    assert str(MAX_SCHEMA_DEPTH) in problem["limits"]
    assert str(MAX_ENUM_VALUES) in problem["limits"]


def sdk(base_url: str) -> openai.OpenAI:
    return openai.OpenAI(api_key="unused", base_url=base_url, max_retries=0, timeout=120)


def test_sdk_lists_models_at_every_route(live_server: Any, settings: Settings) -> None:
    for prefix in ("", *(f"/{route}" for route in ROUTES)):
        models = sdk(f"{live_server.url}{prefix}/v1").models.list()
        assert [model.id for model in models] == [settings.model_name]


QUESTIONS = {
    "vision": "Describe a green field with a sword in it.",
    "dialog": "An old man says: take this. Do you take it?",
    "puzzle": "A block sits next to a plate. What do you push?",
    "state": "Link has three hearts and no key. What next?",
}


def ask(client: openai.OpenAI, route: str, seed: int) -> str:
    answer = client.chat.completions.create(
        model=route, messages=[{"role": "user", "content": QUESTIONS[route]}],
        seed=seed, temperature=1.0, max_tokens=8,
    )  # fmt: skip
    return answer.choices[0].message.content or ""


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_same_seed_same_answer_whatever_came_before(live_server: Any) -> None:
    """20 (route, seed) pairs over the SDK, asked in one order and again in the reverse order:
    every second answer follows another request than the first did (before the fix, llama-cpp's
    reused prompt prefix made /dialog seed 3 answer `choose`, then `advance`)."""
    clients = {route: sdk(f"{live_server.url}/{route}/v1") for route in ROUTES}
    pairs = [(route, seed) for route in ROUTES for seed in range(5)]
    first = {pair: ask(clients[pair[0]], *pair) for pair in pairs}
    again = {pair: ask(clients[pair[0]], *pair) for pair in reversed(pairs)}
    assert again == first
    assert len(set(first.values())) > 4  # the seed matters: this is not greedy decoding


class DialogChoice(BaseModel):
    action: Literal["advance", "choose", "wait"]
    option: int


@pytest.mark.slow
def test_sdk_parse_returns_the_model(live_server: Any) -> None:
    completion = sdk(f"{live_server.url}/dialog/v1").chat.completions.parse(
        model="dialog",
        messages=[{"role": "user", "content": "Buy the shield? 0 yes, 1 no. Answer in JSON."}],
        response_format=DialogChoice,
        seed=3,
        max_tokens=48,
    )
    parsed = completion.choices[0].message.parsed
    assert isinstance(parsed, DialogChoice)

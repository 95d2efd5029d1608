"""LlmClient against a real scripted HTTP server: retries, repair, rejection, breaker, records."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Literal

import pytest
from pydantic import BaseModel, ConfigDict, Field

from koholint.llm.client import (
    CallLog,
    CircuitBreaker,
    CircuitOpenError,
    LlmClient,
    LlmRejectedError,
    LlmUnavailableError,
    RetryPolicy,
    RouteSettings,
)

from .conftest import Reply, ScriptedLlm, answer


class Pick(BaseModel):
    model_config = ConfigDict(extra="forbid")
    action: Literal["advance", "choose"]
    option: int = Field(ge=0, le=1)


MESSAGES = [{"role": "user", "content": "pick"}]


def make_client(llm: ScriptedLlm, **options: object) -> LlmClient:
    sleeps: list[float] = []
    defaults: dict[str, object] = {
        "retry": RetryPolicy(attempts=3, base_s=0.01, max_s=0.05),
        "sleep": sleeps.append,
        "rng": random.Random(0),
    }
    client = LlmClient(
        llm.url,  # type: ignore[attr-defined]
        {"dialog": RouteSettings(model="dialog-model", timeout_s=0.5)},
        **{**defaults, **options},  # type: ignore[arg-type]
    )
    client.sleeps = sleeps  # type: ignore[attr-defined]
    return client


def test_valid_answer_sends_the_contract(scripted_llm: ScriptedLlm) -> None:
    scripted_llm.script(answer(action="choose", option=1))
    client = make_client(scripted_llm)
    result = client.ask("dialog", MESSAGES, Pick, seed=42)
    assert result.value == Pick(action="choose", option=1)
    route, body = scripted_llm.requests[0]
    assert route == "dialog"
    assert body["model"] == "dialog-model"
    assert body["seed"] == 42
    assert body["response_format"]["type"] == "json_schema"
    assert body["response_format"]["json_schema"]["schema"] == Pick.model_json_schema()
    record = result.record
    assert (record.outcome, record.attempts, record.prompt_tokens) == ("valid", 1, 11)
    assert record.latency_ms > 0


@pytest.mark.parametrize(
    "bad",
    [
        Reply(content="not json at all"),
        answer(action="dance", option=0),  # schema violation
        answer(action="choose", option=7),
        answer(action="choose", option=0, extra=1),
    ],
)
def test_one_repair_round_with_the_error(scripted_llm: ScriptedLlm, bad: Reply) -> None:
    scripted_llm.script(bad, answer(action="advance", option=0))
    result = make_client(scripted_llm).ask("dialog", MESSAGES, Pick, seed=1)
    assert result.value.action == "advance"
    assert result.record.outcome == "repaired"
    repair = scripted_llm.requests[1][1]["messages"]
    assert repair[-2] == {"role": "assistant", "content": bad.content}
    assert "invalid" in repair[-1]["content"]
    assert len(result.record.validation_errors) == 1


def test_rejected_after_a_failed_repair(scripted_llm: ScriptedLlm) -> None:
    scripted_llm.script(Reply(content="{"), answer(action="sing", option=0))
    client = make_client(scripted_llm)
    with pytest.raises(LlmRejectedError) as caught:
        client.ask("dialog", MESSAGES, Pick, seed=1)
    assert len(caught.value.errors) == 2
    assert client.log.records()[-1].outcome == "rejected"
    assert len(scripted_llm.requests) == 2


def test_caller_check_is_part_of_validation(scripted_llm: ScriptedLlm) -> None:
    scripted_llm.script(answer(action="advance", option=0), answer(action="choose", option=0))
    result = make_client(scripted_llm).ask(
        "dialog", MESSAGES, Pick, seed=1,
        check=lambda pick: None if pick.action == "choose" else "a question is on screen",
    )  # fmt: skip
    assert result.value.action == "choose"
    assert "a question is on screen" in scripted_llm.requests[1][1]["messages"][-1]["content"]


@pytest.mark.parametrize("failure", [Reply(status=429), Reply(status=503), Reply(raw="<html>")])
def test_retries_transient_failures(scripted_llm: ScriptedLlm, failure: Reply) -> None:
    scripted_llm.script(failure, failure, answer(action="advance", option=0))
    client = make_client(scripted_llm)
    result = client.ask("dialog", MESSAGES, Pick, seed=1)
    assert result.record.attempts == 3
    assert len(client.sleeps) == 2  # type: ignore[attr-defined]
    assert all(0 <= s <= 0.05 for s in client.sleeps)  # type: ignore[attr-defined]


def test_retry_after_is_honoured_and_capped(scripted_llm: ScriptedLlm) -> None:
    scripted_llm.script(
        Reply(status=429, headers={"Retry-After": "0.02"}),
        Reply(status=429, headers={"Retry-After": "100"}),
        answer(action="advance", option=0),
    )
    client = make_client(scripted_llm)
    client.ask("dialog", MESSAGES, Pick, seed=1)
    assert client.sleeps == [0.02, 0.05]  # type: ignore[attr-defined]


def test_slow_answers_time_out_and_retry(scripted_llm: ScriptedLlm) -> None:
    scripted_llm.script(Reply(content="{}", delay=2.0), answer(action="advance", option=0))
    result = make_client(scripted_llm).ask("dialog", MESSAGES, Pick, seed=1)
    assert result.record.attempts == 2


def test_gives_up_after_the_attempts(scripted_llm: ScriptedLlm) -> None:
    client = make_client(scripted_llm)  # the default reply is 500
    with pytest.raises(LlmUnavailableError, match="gave up after 3 attempts"):
        client.ask("dialog", MESSAGES, Pick, seed=1)
    assert client.log.records()[-1].outcome == "unavailable"


def test_client_errors_are_not_retried(scripted_llm: ScriptedLlm) -> None:
    scripted_llm.script(Reply(status=400))
    with pytest.raises(LlmUnavailableError, match="HTTP 400"):
        make_client(scripted_llm).ask("dialog", MESSAGES, Pick, seed=1)
    assert len(scripted_llm.requests) == 1


def test_unreachable_gateway() -> None:
    client = LlmClient(
        "http://127.0.0.1:9", {"dialog": RouteSettings(model="m", timeout_s=0.5)},
        retry=RetryPolicy(attempts=2, base_s=0.0, max_s=0.0),
    )  # fmt: skip
    with pytest.raises(LlmUnavailableError, match="transport error"):
        client.ask("dialog", MESSAGES, Pick, seed=1)


def test_circuit_opens_then_half_opens(scripted_llm: ScriptedLlm) -> None:
    client = make_client(scripted_llm, breaker_threshold=2, breaker_reset_s=0.2)
    for _ in range(2):
        with pytest.raises(LlmUnavailableError):
            client.ask("dialog", MESSAGES, Pick, seed=1)
    sent = len(scripted_llm.requests)
    with pytest.raises(CircuitOpenError):
        client.ask("dialog", MESSAGES, Pick, seed=1)
    assert len(scripted_llm.requests) == sent  # refused without a request
    import time

    time.sleep(0.25)
    scripted_llm.script(answer(action="advance", option=0))
    assert client.ask("dialog", MESSAGES, Pick, seed=1).value.action == "advance"
    assert client.breakers["dialog"].state == "closed"


def test_breaker_trial_failure_reopens() -> None:
    now = [0.0]
    breaker = CircuitBreaker(threshold=1, reset_s=10, clock=lambda: now[0])
    breaker.failure()
    assert breaker.allow() == pytest.approx(10)
    now[0] = 11
    assert breaker.allow() is None  # the one trial
    assert breaker.allow() is not None  # a second caller waits for the trial
    breaker.failure()
    assert breaker.state == "open"


def test_unknown_route_and_oversized_prompt(scripted_llm: ScriptedLlm) -> None:
    client = make_client(scripted_llm)
    with pytest.raises(ValueError, match="not configured"):
        client.ask("puzzle", MESSAGES, Pick, seed=1)
    with pytest.raises(ValueError, match="characters"):
        client.ask("dialog", [{"role": "user", "content": "x" * 70_000}], Pick, seed=1)
    with pytest.raises(ValueError, match="unknown routes"):
        LlmClient("http://x", {"chat": RouteSettings(model="m")})


def test_records_export_as_chat_jsonl(scripted_llm: ScriptedLlm, tmp_path: Path) -> None:
    scripted_llm.script(answer(action="advance", option=0), Reply(content="?"), Reply(content="?"))
    log = CallLog(limit=10)
    client = make_client(scripted_llm, log=log)
    client.ask("dialog", MESSAGES, Pick, seed=5)
    with pytest.raises(LlmRejectedError):
        client.ask("dialog", MESSAGES, Pick, seed=6)
    path = tmp_path / "calls.jsonl"
    assert log.export_jsonl(path) == 1  # only accepted answers by default
    line = json.loads(path.read_text())
    assert line["messages"][-1] == {
        "role": "assistant",
        "content": '{"action": "advance", "option": 0}',
    }
    assert line["metadata"]["seed"] == 5
    assert line["metadata"]["route"] == "dialog"
    assert log.export_jsonl(path, outcomes=("rejected",)) == 1

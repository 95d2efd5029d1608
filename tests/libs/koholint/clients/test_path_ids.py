"""The library's clients put ids into paths only through the one rule (``path_segment``):
a hostile id is a ValueError naming the problem, and nothing is sent. They send their
service's token (and the language-model client its server's) as ``Authorization: Bearer``."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from koholint.clients.env_sim import EnvSimClient, RemoteEmulator, RemoteEnv
from koholint.clients.evaluator import EvaluatorClient
from koholint.clients.planner import PlannerClient
from koholint.clients.trainer import AsyncTrainerClient
from koholint.schemas.fields import PATH_ID_PATTERN, path_segment

HOSTILE = ["..", ".", "", "/", "a/b", "../x", "%2e%2e", "%2E", "..%2f", "a\\b", "a?b", "a#b",
           "a b", ".hidden", "a\x00", "é", "a" * 129]  # fmt: skip
FINE = ["0123abcdef", "run-1", "env_3", "a.b", "a..", "x:y", "_", "-", "a" * 128]


@pytest.mark.parametrize("value", HOSTILE)
def test_the_rule_refuses_dots_separators_and_encodings(value: str) -> None:
    assert re.fullmatch(PATH_ID_PATTERN, value) is None
    with pytest.raises(ValueError, match=r"run .* is not a safe path segment: use 1 to 128"):
        path_segment(value, "run")


@pytest.mark.parametrize("value", FINE)
def test_the_rule_takes_ids_the_fleet_makes(value: str) -> None:
    assert path_segment(value) == value


def counting() -> tuple[list[httpx.Request], httpx.MockTransport]:
    sent: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return httpx.Response(200, json={})

    return sent, httpx.MockTransport(answer)


def env_sim_calls(client: EnvSimClient, bad: str) -> list[Callable[[], Any]]:
    return [
        lambda: client.delete_session(bad), lambda: client.reset(bad),
        lambda: client.step(bad, 0), lambda: client.steps(bad, [0]), lambda: client.state(bad),
        lambda: client.frame_png(bad), lambda: client.save(bad), lambda: client.load(bad),
        lambda: client.tick(bad, 0, 1), lambda: client.read_memory(bad, 0xC000),
        lambda: RemoteEmulator(client, bad), lambda: RemoteEnv(client, bad),
    ]  # fmt: skip


@pytest.mark.parametrize("bad", ["..", ".", "a/b", "%2e%2e"])
def test_clients_refuse_hostile_ids_before_sending(bad: str) -> None:
    sent, transport = counting()
    env_sim = EnvSimClient("http://env-sim", transport=transport)
    planner = PlannerClient("http://planner", transport=transport)
    evaluator = EvaluatorClient("http://evaluator", transport=transport)
    trainer = AsyncTrainerClient("http://trainer", transport=transport)  # serves async too
    calls = env_sim_calls(env_sim, bad) + [
        lambda: planner.autopilot(bad),
        lambda: evaluator.status(bad),
        lambda: evaluator.segment_score(f"episodes/{bad}/e/1"),
        lambda: asyncio.run(trainer.get_run(bad)),
        lambda: asyncio.run(trainer.stop_run(bad)),
    ]
    for call in calls:
        with pytest.raises(ValueError, match="is not a safe path"):
            call()
    assert sent == []


def test_clients_send_their_tokens() -> None:
    sent, transport = counting()
    PlannerClient("http://planner", token="planner-secret", transport=transport).http.get("/")
    EvaluatorClient("http://evaluator", token="evaluator-secret", transport=transport).http.get("/")
    assert [request.headers["authorization"] for request in sent] == [
        "Bearer planner-secret", "Bearer evaluator-secret",
    ]  # fmt: skip
    PlannerClient("http://planner", transport=transport).http.get("/")
    assert "authorization" not in sent[-1].headers


def test_language_model_backends_send_the_servers_token() -> None:
    from evaluator.judges import make_judges
    from koholint.planning.backends import LlmBackend, make_backend

    backend = make_backend("local", api_key="llm-secret")
    assert isinstance(backend, LlmBackend)
    assert backend.client._http.headers["authorization"] == "Bearer llm-secret"
    judges: Any = make_judges("local", api_key="llm-secret")
    assert judges.client._http.headers["authorization"] == "Bearer llm-secret"
    assert "authorization" not in make_backend("local").client._http.headers  # type: ignore[union-attr]


def test_the_planner_and_the_evaluator_send_their_llm_token(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """KOHOLINT_<SERVICE>_LLM_TOKEN, the setting compose and the manifests set."""
    from evaluator.config import Settings as EvaluatorSettings
    from evaluator.service import judges_from
    from planner.config import Settings as PlannerSettings
    from planner.metrics import Metrics
    from planner.service import Planner

    monkeypatch.setenv("KOHOLINT_PLANNER_LLM_TOKEN", "planner-llm")
    monkeypatch.setenv("KOHOLINT_EVALUATOR_LLM_TOKEN", "evaluator-llm")
    planner = Planner(PlannerSettings(backend="local"), Metrics())
    try:
        assert planner.backend.client._http.headers["authorization"] == "Bearer planner-llm"  # type: ignore[union-attr]
    finally:
        planner.close()
    judges: Any = judges_from(EvaluatorSettings(backend="local", consume=False))
    assert judges.client._http.headers["authorization"] == "Bearer evaluator-llm"

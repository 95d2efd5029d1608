"""The HTTP API: evaluations, scores, limits as problem+json, health, metrics, OpenAPI."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient
from tests.services.evaluator.conftest import segment_prefixes

from evaluator.app import create_app
from evaluator.config import Settings
from koholint.bus import STREAM_SEGMENTS, MemoryBus
from koholint.schemas.evaluator import SCORE_SCHEMA_VERSION
from koholint.store import LocalStore

METRICS = (
    "evaluator_segments_scored_total", "evaluator_abstentions_total",
    "evaluator_invalid_answers_total", "evaluator_judge_latency_seconds",
    "evaluator_consumer_lag", "evaluator_agreement_kappa", "evaluator_dead_letters_total",
)  # fmt: skip


LOOPBACK = ("127.0.0.1", 50000)
"""TestClient's own client, "testclient", is no loopback peer: run control would be 401."""


@pytest.fixture
def bus() -> MemoryBus:
    return MemoryBus()


@pytest.fixture
def client(local_store: LocalStore, bus: MemoryBus) -> Iterator[TestClient]:
    settings = Settings(block_ms=50, max_body_bytes=4096)
    with TestClient(
        create_app(settings, store=local_store, bus=bus), client=LOOPBACK
    ) as test_client:
        yield test_client


def wait_done(client: TestClient, job_id: str) -> dict:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        status = client.get(f"/v1/evaluations/{job_id}").json()
        if status["state"] in ("succeeded", "failed"):
            return status
        time.sleep(0.05)
    raise AssertionError("evaluation did not finish")


def test_evaluate_a_run_then_read_its_scores(client: TestClient, local_store: LocalStore):
    prefixes = segment_prefixes(local_store, "run-eval")
    response = client.post("/v1/evaluations", json={"run": "run-eval"})
    assert response.status_code == 202
    status = wait_done(client, response.json()["id"])
    assert (status["state"], status["total"], status["scored"]) == (
        "succeeded",
        len(prefixes),
        len(prefixes),
    )
    scores = client.get("/v1/scores", params={"run": "run-eval", "limit": 3}).json()
    assert len(scores) == 3
    assert all(s["schema_version"] == SCORE_SCHEMA_VERSION for s in scores)
    record = client.get(f"/v1/segments/{prefixes[0]}/score").json()
    assert record["prefix"] == prefixes[0]
    assert record["judges"][2]["abstain_reason"] == "no_vision"
    again = wait_done(
        client, client.post("/v1/evaluations", json={"prefixes": prefixes[:2]}).json()["id"]
    )
    assert (again["scored"], again["already_scored"]) == (0, 2)


def test_the_consumer_scores_what_the_trainer_announces(
    client: TestClient, bus: MemoryBus, local_store: LocalStore
):
    prefix = segment_prefixes(local_store, "run-eval")[0]
    bus.publish(
        STREAM_SEGMENTS,
        {"schema_version": 1, "prefix": prefix, "manifest_key": f"{prefix}/manifest.json"},
    )
    deadline = time.monotonic() + 20
    while client.get(f"/v1/segments/{prefix}/score").status_code != 200:
        assert time.monotonic() < deadline, "the consumer did not score the announced segment"
        time.sleep(0.05)
    metrics = client.get("/metrics").text
    for name in METRICS:
        assert name in metrics
    assert "evaluator_segments_scored_total 1.0" in metrics
    assert 'evaluator_abstentions_total{judge="vision"} 1.0' in metrics  # rules read no frames


def test_rejected_segments_are_reported_by_the_job(client: TestClient, local_store: LocalStore):
    prefix = segment_prefixes(local_store, "run-eval")[0]
    local_store.delete(f"{prefix}/manifest.json")
    status = wait_done(
        client, client.post("/v1/evaluations", json={"prefixes": [prefix]}).json()["id"]
    )
    assert status["rejected"] == 1
    assert "no manifest" in status["failures"][0]["reason"]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "EvaluateRun.run"),
        ({"run": "a", "prefixes": ["episodes/a/b/00000"]}, "EvaluatePrefixes.run"),
        ({"prefixes": ["scores/a/b"]}, "EvaluatePrefixes.prefixes.0"),
        ({"prefixes": []}, "EvaluatePrefixes.prefixes"),
        ({"run": "../etc"}, "EvaluateRun.run"),
    ],
)
def test_bad_requests_name_the_field(client: TestClient, body: dict, field: str):
    """The body is one of two shapes; each error names the shape and the field."""
    response = client.post("/v1/evaluations", json=body)
    assert response.status_code == 422
    assert response.headers["content-type"] == "application/problem+json"
    assert field in {error["field"] for error in response.json()["errors"]}


def test_limits_and_unknowns_are_problem_json(client: TestClient):
    too_many = client.post(
        "/v1/evaluations", json={"prefixes": [f"episodes/a/b/{i:05d}" for i in range(300)]}
    )
    assert too_many.status_code in (413, 422)
    assert too_many.headers["content-type"] == "application/problem+json"
    assert client.post("/v1/evaluations", json={"run": "no-such-run"}).status_code == 404
    assert client.get("/v1/evaluations/" + "0" * 32).status_code == 404
    assert client.get("/v1/segments/episodes/a/b/00001/score").status_code == 404
    assert client.get("/v1/scores", params={"run": "r", "limit": 5000}).status_code == 422


def test_health_readiness_and_documented_errors(client: TestClient):
    assert client.get("/healthz").json() == {"status": "ok"}
    assert client.get("/readyz").json()["backend"] == "rules"
    paths = client.get("/openapi.json").json()["paths"]
    assert {"404", "422", "429"} <= set(paths["/v1/evaluations"]["post"]["responses"])
    assert "404" in paths["/v1/segments/{prefix}/score"]["get"]["responses"]


def test_readiness_names_an_unreachable_judge_gateway(local_store: LocalStore):
    settings = Settings(backend="llm-d", llm_base_url="http://127.0.0.1:9", consume=False)
    with TestClient(
        create_app(settings, store=local_store, bus=MemoryBus()), client=LOOPBACK
    ) as client:
        response = client.get("/readyz")
    assert response.status_code == 503
    assert "judge routes not ready" in response.json()["detail"]

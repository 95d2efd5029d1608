"""The reward-model service really listening on a port, over a real Redis and moto's S3
server (a separate process speaking HTTP): scores in, a version out, the trainer's event."""

from __future__ import annotations

import hashlib
import io
import json
import os
import signal
import subprocess
import sys
import time
import uuid

import httpx
import numpy as np
import pytest
from reward_synthetic import export_synthetic, scores_event, synthetic_segments
from tests.conftest import free_port
from tests.contracts import assert_problem

from koholint.bus import RedisBus
from koholint.store import open_store
from reward_model.app import create_app
from reward_model.config import Settings
from reward_model.service import RewardModelService

ACCESS, SECRET, BUCKET = "testing-access", "testing-secret", "koholint-rm"
METRICS = (
    "reward_model_pairs", "reward_model_versions_total", "reward_model_heldout_accuracy",
    "reward_model_training_seconds_bucket", 'reward_model_rejected_total{reason="no_pairs"}',
)  # fmt: skip


@pytest.fixture
def redis_client():
    import redis

    client = redis.Redis(host="127.0.0.1", port=6379, socket_connect_timeout=2)
    try:
        client.ping()
    except redis.ConnectionError:
        pytest.fail("no Redis on 127.0.0.1:6379: start one (redis-server --daemonize yes)")
    yield client
    client.close()


@pytest.fixture
def settings(s3_endpoint, redis_client, monkeypatch) -> Settings:
    monkeypatch.setenv("KOHOLINT_S3_ACCESS_KEY", ACCESS)
    monkeypatch.setenv("KOHOLINT_S3_SECRET_KEY", SECRET)
    suffix = uuid.uuid4().hex[:8]
    url = f"s3://{BUCKET}/rm-{suffix}?endpoint={s3_endpoint}&secure=false&region=us-east-1"
    store = open_store(url)
    if not store.client.bucket_exists(BUCKET):  # type: ignore[attr-defined]
        store.client.make_bucket(BUCKET)  # type: ignore[attr-defined]
    yield Settings(
        store_url=url, redis_url="redis://127.0.0.1:6379/0", scores_stream=f"test.scores.{suffix}",
        models_stream=f"test.reward-models.{suffix}", consumer_name=f"rm-{suffix}",
        train_after_new_pairs=200, min_pairs=10, max_steps=150, block_ms=100,
    )  # fmt: skip
    redis_client.delete(f"test.scores.{suffix}", f"test.reward-models.{suffix}")


def wait_for_version(url: str, timeout: float = 90) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        listing = httpx.get(f"{url}/v1/models").json()
        if listing["models"]:
            return listing
        time.sleep(0.3)
    pytest.fail(f"no version published; last listing {listing}")


def test_scores_on_redis_become_a_version_in_s3(settings, redis_client, serve):
    url = serve(create_app(settings))
    assert httpx.get(f"{url}/readyz").json() == {"status": "ready", "store": "ok", "redis": "ok"}
    store = open_store(settings.store_url)
    segments = synthetic_segments(50, steps=10, seed=6)
    prefixes = export_synthetic(store, segments, run="live")
    bus = RedisBus(redis_client)
    bus.publish(settings.scores_stream, scores_event("live", prefixes, segments))
    listing = wait_for_version(url)
    (card,) = listing["models"]
    assert listing["segments"] == 50
    assert listing["last_training"]["state"] == "published"
    assert httpx.get(f"{url}/v1/models/latest").json() == card
    event = bus.consume(settings.models_stream, "trainer", "t", count=5)[0].payload
    assert event["version"] == card["version"]
    assert store.exists(f"reward-models/{card['version']}/weights.npz")
    scored = httpx.post(f"{url}/v1/score", json={"observations": segments[0].observations.tolist()})
    assert scored.status_code == 200
    assert scored.json()["version"] == card["version"]
    floor = Settings(**{**settings.model_dump(), "accuracy_floor": 1.0})
    refused = httpx.post(f"{serve(create_app(floor))}/v1/train", json={"reason": "test"})
    assert refused.json()["state"] == "refused"  # nothing new published by the second app
    metrics = httpx.get(f"{url}/metrics").text
    for name in METRICS:
        assert name in metrics


def test_bad_input_is_a_problem_naming_the_field(settings, serve):
    url = serve(create_app(settings))
    missing = httpx.get(f"{url}/v1/models/latest")
    assert missing.status_code == 404
    assert missing.headers["content-type"] == "application/problem+json"
    assert "POST /v1/train" in missing.json()["detail"]
    too_short = httpx.post(f"{url}/v1/score", json={"observations": []})
    assert too_short.status_code == 422
    assert "observations" in str(too_short.json())
    bad_version = httpx.post(
        f"{url}/v1/score", json={"observations": [[0.0] * 128], "version": "x"}
    )
    assert bad_version.status_code == 422
    empty = httpx.post(f"{url}/v1/train").json()
    assert empty["state"] == "refused"
    assert "empty or one-sided" in empty["detail"]
    paths = httpx.get(f"{url}/openapi.json").json()["paths"]
    assert {"404", "409"} <= set(paths["/v1/score"]["post"]["responses"])


def test_a_corrupt_latest_version_is_refused_with_the_fix(settings, serve):
    url = serve(create_app(Settings(**{**settings.model_dump(), "consume": False})))
    store = open_store(settings.store_url)
    segments = synthetic_segments(30, steps=6, seed=8)
    prefixes = export_synthetic(store, segments, run="corrupt")
    # Train through a second service on the same store, then corrupt the version's weights.
    service = RewardModelService(Settings(**{**settings.model_dump(), "consume": False}), store)
    for prefix, scored in zip(prefixes, segments, strict=True):
        service.add_score(prefix, scored.record_key, scored.score)
    version = service.train().version
    assert version is not None
    store.put(f"reward-models/{version}/weights.npz", b"not the weights the card names")
    response = httpx.get(f"{url}/v1/models/latest")
    assert response.status_code == 409
    assert "does not match the card's sha256" in response.json()["detail"]


def serve_process(settings: Settings, port: int) -> subprocess.Popen:
    """`koholint serve reward-model` in a process of its own (kill -9 takes it all)."""
    env = {**os.environ, "KOHOLINT_S3_ACCESS_KEY": ACCESS, "KOHOLINT_S3_SECRET_KEY": SECRET}
    for name in ("store_url", "redis_url", "scores_stream", "models_stream", "consumer_name"):
        env[f"KOHOLINT_REWARD_MODEL_{name.upper()}"] = str(getattr(settings, name))
    env["KOHOLINT_REWARD_MODEL_TRAIN_AFTER_NEW_PAIRS"] = "1000000"  # trained when asked only
    env["KOHOLINT_REWARD_MODEL_MIN_PAIRS"] = "10"
    env["KOHOLINT_REWARD_MODEL_MAX_STEPS"] = "50"
    return subprocess.Popen(
        [sys.executable, "-m", "koholint.cli", "serve", "reward-model", "--port", str(port)],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip


def listing_when(url: str, condition, timeout: float = 120) -> dict:
    deadline = time.monotonic() + timeout
    listing: dict = {}
    while time.monotonic() < deadline:
        try:
            listing = httpx.get(f"{url}/v1/models", timeout=5).json()
            if condition(listing):
                return listing
        except httpx.HTTPError:
            pass  # still starting
        time.sleep(0.3)
    pytest.fail(f"timed out; last listing {listing}")


@pytest.mark.slow
def test_kill_9_and_a_restart_keep_the_dataset(settings, redis_client):
    store = open_store(settings.store_url)
    segments = synthetic_segments(40, steps=6, seed=9)
    prefixes = export_synthetic(store, segments, run="killed")
    event = scores_event("killed", prefixes, segments)
    lines = [
        json.dumps({"schema_version": 1, "prefix": record["prefix"], "scored_at": time.time(),
                    "record_key": record["record_key"], "score": record["score"]})
        for record in event["records"]
    ]  # fmt: skip
    port = free_port()
    first = serve_process(settings, port)
    try:
        url = f"http://127.0.0.1:{port}"
        listing_when(url, lambda listing: listing["restored"] == 0)  # nothing scored yet
        # As the evaluator does: the batch file of records, then its event.
        store.put(event["scores_key"], ("\n".join(lines) + "\n").encode())
        RedisBus(redis_client).publish(settings.scores_stream, event)
        listing_when(url, lambda listing: listing["segments"] == 40)
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=10)
    finally:
        first.kill()
    second = serve_process(settings, port)
    try:
        listing = listing_when(url, lambda listing: listing["restored"] is not None)
        assert (listing["restored"], listing["segments"]) == (40, 40)
        trained = httpx.post(f"{url}/v1/train", json={"reason": "after a restart"}, timeout=120)
        assert trained.status_code == 200, trained.text
        assert trained.json()["pairs"] >= 10, trained.json()  # the set is there to learn from
    finally:
        second.terminate()
        second.wait(timeout=30)


def corrupt_weights(card: dict, weights: bytes) -> tuple[dict, bytes]:
    return {**card, "weights_sha256": hashlib.sha256(weights).hexdigest()}, weights


def object_npz() -> bytes:
    buffer = io.BytesIO()
    np.savez(buffer, weight_0=np.array([{"a": 1}], dtype=object), bias_0=np.zeros(1))
    return buffer.getvalue()


MALFORMED_POINTERS = {
    "not JSON": b"{not json",
    "a list": b"[1, 2]",
    "a traversing version": b'{"schema_version": 1, "version": "../../etc"}',
    "an unknown schema": b'{"schema_version": 9, "version": "rm-20261126-000000-abcdef"}',
    "a missing version": b'{"schema_version": 1, "version": "rm-20261126-000000-abcdef"}',
}


def test_malformed_versions_and_pointers_are_409_never_500(settings, serve):
    url = serve(create_app(Settings(**{**settings.model_dump(), "consume": False})))
    store = open_store(settings.store_url)
    segments = synthetic_segments(30, steps=6, seed=8)
    service = RewardModelService(Settings(**{**settings.model_dump(), "consume": False}), store)
    for prefix, scored in zip(export_synthetic(store, segments, run="bad"), segments, strict=True):
        service.add_score(prefix, scored.record_key, scored.score)
    version = service.train().version
    assert version is not None
    card = json.loads(store.get(f"reward-models/{version}/model.json"))
    weights = store.get(f"reward-models/{version}/weights.npz")
    pointer = store.get("reward-models/latest.json")
    observations = {"observations": [[0.0] * 128]}
    for what, (bad_card, bad_weights) in {
        "weights not npz": corrupt_weights(card, b"not an npz at all"),
        "an object npz": corrupt_weights(card, object_npz()),
        "a NaN output_mean": ({**card, "output_mean": float("nan")}, weights),
    }.items():
        store.put(f"reward-models/{version}/model.json", json.dumps(bad_card).encode())
        store.put(f"reward-models/{version}/weights.npz", bad_weights)
        for response in (
            httpx.get(f"{url}/v1/models/latest"),
            httpx.post(f"{url}/v1/score", json={**observations, "version": version}),
        ):
            problem = assert_problem(response, 409)
            assert version in problem["detail"], (what, problem)
        listing = httpx.get(f"{url}/v1/models")
        assert listing.status_code == 200, what
        assert all(model["output_mean"] is not None for model in listing.json()["models"]), what
    store.put(f"reward-models/{version}/model.json", json.dumps(card).encode())
    store.put(f"reward-models/{version}/weights.npz", weights)
    for what, document in MALFORMED_POINTERS.items():
        store.put("reward-models/latest.json", document)
        for response in (
            httpx.get(f"{url}/v1/models/latest"),
            httpx.post(f"{url}/v1/score", json=observations),
        ):
            problem = assert_problem(response, 409)
            assert "reward-models/latest.json" in problem["detail"], (what, problem)
    store.put("reward-models/latest.json", pointer)
    assert httpx.get(f"{url}/v1/models/latest").json()["version"] == version


def test_observations_beyond_float_range_are_422_not_null(settings, serve):
    url = serve(create_app(Settings(**{**settings.model_dump(), "consume": False})))
    store = open_store(settings.store_url)
    segments = synthetic_segments(30, steps=6, seed=8)
    service = RewardModelService(Settings(**{**settings.model_dump(), "consume": False}), store)
    for prefix, scored in zip(export_synthetic(store, segments, run="big"), segments, strict=True):
        service.add_score(prefix, scored.record_key, scored.score)
    assert service.train().state == "published"
    response = httpx.post(f"{url}/v1/score", json={"observations": [[3e38] * 128]})
    assert_problem(response, 422)
    assert response.json()["field"] == "observations.0"
    spec = httpx.get(f"{url}/openapi.json").json()["components"]["schemas"]["ScoreRequest"]
    row = spec["properties"]["observations"]["items"]
    assert (row["minItems"], row["maxItems"]) == (128, 128)

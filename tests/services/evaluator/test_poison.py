"""Poison segments: each kind of bad segment is rejected alone, with its reason, and the good
segments beside it (in the same job, the same stream batch) are scored. Over moto's S3 server
and a real Redis (the stream), and a local folder (a manifest naming a directory)."""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from tests.services.evaluator.conftest import copy_segments
from tests.services.evaluator.test_ingest import announce, records_in

from evaluator.app import create_app
from evaluator.config import Settings
from evaluator.metrics import Metrics
from evaluator.service import EvaluatorService
from koholint.bus import MemoryBus
from koholint.store import LocalStore, ObjectStore, S3Store

MAX_SEGMENT_BYTES = 1024 * 1024
Edit = Callable[[dict[str, Any], dict[str, bytes]], None]
"""(manifest, files by name) -> changed in place; the manifest's sha256s are redone after."""


def ram_lines(edit_step: Callable[[dict[str, Any]], None]) -> Edit:
    def edit(manifest: dict[str, Any], files: dict[str, bytes]) -> None:
        steps = [json.loads(line) for line in files["ram.jsonl"].splitlines()]
        edit_step(steps[2])
        files["ram.jsonl"] = b"".join(json.dumps(step).encode() + b"\n" for step in steps)

    return edit


def ram_bytes(data: bytes) -> Edit:
    def edit(manifest: dict[str, Any], files: dict[str, bytes]) -> None:
        files["ram.jsonl"] = data

    return edit


def add_file(name: str, data: bytes) -> Edit:
    def edit(manifest: dict[str, Any], files: dict[str, bytes]) -> None:
        files[name] = data

    return edit


def big_frame(manifest: dict[str, Any], files: dict[str, bytes]) -> None:
    name = next(name for name in files if name.startswith("frames/"))
    files[name] = files[name] + b"\0" * (MAX_SEGMENT_BYTES + 1)


POISONS: dict[str, tuple[Edit, str]] = {
    "no-t": (ram_lines(lambda step: step.pop("t")), "line 3: t is missing"),
    "string-health": (
        ram_lines(lambda step: step["state"].update(health="lots")),
        "state.health is str",
    ),
    "missing-state-field": (ram_lines(lambda step: step["state"].pop("keys")), "lacks keys"),
    "empty-ram": (ram_bytes(b""), "ram.jsonl is empty"),
    "non-utf8-ram": (ram_bytes(b"\xff\xfe{}\n"), "not UTF-8"),
    "deep-json": (ram_bytes(b"[" * 100_000 + b"]" * 100_000 + b"\n"), "line 1 is not JSON"),
    "nan-reward": (ram_lines(lambda step: step.update(reward=float("nan"))), "reward is NaN"),
    "inf-reward": (ram_lines(lambda step: step.update(reward=float("inf"))), "reward is Infinity"),
    "huge-reward": (ram_bytes(b""), "not a finite number"),  # replaced below: 1e400 overflows
    "dot-dot-file": (add_file("../../x", b"x"), "not a file name inside the segment"),
    "big-frame": (big_frame, f"pass max_segment_bytes {MAX_SEGMENT_BYTES}"),
}


def _huge_reward(manifest: dict[str, Any], files: dict[str, bytes]) -> None:
    lines = files["ram.jsonl"].splitlines()
    step = json.loads(lines[0])
    step["reward"] = 0.25
    lines[0] = json.dumps(step).replace("0.25", "1e400").encode()
    files["ram.jsonl"] = b"\n".join(lines) + b"\n"


POISONS["huge-reward"] = (_huge_reward, "reward is 1e400, not a finite number")


def plant(store: ObjectStore, source: str, episode: str, edit: Edit) -> str:
    """A copy of the segment at `source` as episode `episode`, changed by `edit`, with a
    manifest whose sha256s match the changed files (only the content is bad)."""
    manifest = json.loads(store.get(f"{source}/manifest.json"))
    files = {name: store.get(f"{source}/{name}") for name in manifest["files"]}
    edit(manifest, files)
    run, _, index = source.split("/")[1:]
    prefix = f"episodes/{run}/{episode}/{index}"
    for name, data in files.items():
        if ".." not in name.split("/"):
            store.put(f"{prefix}/{name}", data)
    manifest["episode"] = episode
    manifest["files"] = {name: hashlib.sha256(data).hexdigest() for name, data in files.items()}
    store.put(f"{prefix}/manifest.json", json.dumps(manifest).encode())
    return prefix


def plant_all(store: ObjectStore, good: list[str]) -> dict[str, str]:
    """prefix -> the reason its rejection must name, for every kind of poison."""
    return {
        plant(store, good[0], f"bad-{kind}", edit): reason
        for kind, (edit, reason) in POISONS.items()
    }


def wait_done(client: TestClient, job_id: str) -> dict:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        status = client.get(f"/v1/evaluations/{job_id}").json()
        if status["state"] in ("succeeded", "failed"):
            return status
        time.sleep(0.05)
    raise AssertionError("evaluation did not finish")


LOOPBACK = ("127.0.0.1", 50000)
"""TestClient's own client, "testclient", is no loopback peer: run control would be 401."""


@pytest.fixture
def s3_settings(
    s3_store: S3Store, streams: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> Settings:
    from tests.services.evaluator.conftest import ACCESS, SECRET, s3_url

    monkeypatch.setenv("KOHOLINT_S3_ACCESS_KEY", ACCESS)
    monkeypatch.setenv("KOHOLINT_S3_SECRET_KEY", SECRET)
    return Settings(
        store_url=s3_url(s3_store), redis_url="redis://127.0.0.1:6379/0",
        segments_stream=streams["segments"], scores_stream=streams["scores"], consumer="c1",
        batch_size=32, block_ms=100, consume=False, reclaim_after_ms=500,
        max_segment_bytes=MAX_SEGMENT_BYTES,
    )  # fmt: skip


def test_a_stream_batch_scores_the_good_and_dead_letters_only_the_bad(
    s3_settings: Settings, s3_store: S3Store, segments_dir: Path, streams: dict[str, str]
):
    good = copy_segments(segments_dir, s3_store)[:2]
    poisoned = plant_all(s3_store, good)
    service = EvaluatorService(s3_settings, Metrics())
    for prefix in [good[0], *poisoned, good[1]]:  # one batch: batch_size is larger
        announce(service.bus, streams["segments"], prefix)
    deadline = time.monotonic() + 120
    while service.ingestor.poll() or service.update_lag():
        assert time.monotonic() < deadline, "the stream was not settled"
    service.close()
    assert sorted(record.prefix for record in records_in(s3_store)) == sorted(good)
    dead = service.bus.dead_letters(streams["segments"])
    reasons = {message.payload["payload"]["prefix"]: message.payload["reason"] for message in dead}
    assert sorted(reasons) == sorted(poisoned)  # each once, none for a good segment
    for prefix, reason in poisoned.items():
        assert reason in reasons[prefix], (prefix, reasons[prefix])
    assert service.ingestor.counts.batches == 1  # settled in one go, not retried
    assert all(message.payload["deliveries"] == 1 for message in dead)


@pytest.fixture
def job_client(local_store: LocalStore) -> Iterator[TestClient]:
    settings = Settings(consume=False, max_segment_bytes=MAX_SEGMENT_BYTES, batch_size=32)
    with TestClient(
        create_app(settings, store=local_store, bus=MemoryBus()), client=LOOPBACK
    ) as client:
        yield client


def test_a_job_scores_the_good_and_rejects_only_the_bad(
    job_client: TestClient, local_store: LocalStore
):
    good = sorted(local_store.list("episodes/"))  # any two real segments
    good = sorted({key.rsplit("/", 1)[0] for key in good if key.endswith("manifest.json")})[:2]
    poisoned = plant_all(local_store, good)
    # A manifest naming a folder as a file (here, where a folder is a real thing).
    folder = plant(local_store, good[0], "bad-folder", add_file("frames/inner/x.png", b"x"))
    manifest = json.loads(local_store.get(f"{folder}/manifest.json"))
    manifest["files"]["frames/inner"] = manifest["files"].pop("frames/inner/x.png")
    local_store.put(f"{folder}/manifest.json", json.dumps(manifest).encode())
    poisoned[folder] = "frames/inner: no such file in the store"
    body = {"prefixes": [good[0], *poisoned, good[1]]}
    response = job_client.post("/v1/evaluations", json=body)
    assert response.status_code == 202, response.text
    status = wait_done(job_client, response.json()["id"])
    assert status["state"] == "succeeded", status
    assert (status["scored"], status["rejected"]) == (2, len(poisoned))
    reasons = {failure["prefix"]: failure["reason"] for failure in status["failures"]}
    assert {failure["outcome"] for failure in status["failures"]} == {"rejected"}
    for prefix, reason in poisoned.items():
        assert reason in reasons[prefix], (prefix, reasons[prefix])
    scores = job_client.get("/v1/scores", params={"run": "run-eval"})
    assert sorted(record["prefix"] for record in scores.json()) == sorted(good)


def test_a_stored_record_holding_null_is_left_out_not_a_500(
    job_client: TestClient, local_store: LocalStore
):
    """A batch file written before NaN was refused (reward_total stored as null) still reads."""
    good = sorted({k.rsplit("/", 1)[0] for k in local_store.list("episodes/")})[:1]
    response = job_client.post("/v1/evaluations", json={"prefixes": good})
    assert wait_done(job_client, response.json()["id"])["scored"] == 1
    (key,) = [k for k in local_store.list("scores/run-eval/batches/") if k.endswith(".jsonl")]
    record = json.loads(local_store.get(key))
    record["facts"]["reward_total"] = None
    record["record_key"] = "0" * 32
    local_store.put(key, local_store.get(key) + json.dumps(record).encode() + b"\n")
    listed = job_client.get("/v1/scores", params={"run": "run-eval"})
    assert listed.status_code == 200, listed.text
    assert [r["prefix"] for r in listed.json()] == good
    assert job_client.get(f"/v1/segments/{good[0]}/score").status_code == 200

"""The consumer against the real parts: Redis streams, segments in moto's S3 server over HTTP.

Every segment is scored exactly once, also when the evaluator process is killed mid-batch
and restarted; corrupt and foreign segments are dead-lettered with the reason.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import free_port
from tests.services.evaluator.conftest import (
    ACCESS,
    SECRET,
    copy_segments,
    s3_url,
    verdict,
)

from evaluator.config import Settings
from evaluator.ingest import consumer_lag
from evaluator.judges import RulesJudges
from evaluator.metrics import Metrics
from evaluator.scoring import Evaluator
from evaluator.service import EvaluatorService
from koholint.bus import MemoryBus, RedisBus
from koholint.schemas.evaluator import ScoreRecord, ScoresEvent
from koholint.store import LocalStore, ObjectStore, S3Store


def announce(bus: Any, stream: str, prefix: str) -> None:
    """The message the trainer's export queue publishes for a segment."""
    run, episode, index = prefix.split("/")[1:]
    bus.publish(stream, {"schema_version": 1, "run": run, "episode": episode, "segment": int(index),
                         "prefix": prefix, "manifest_key": f"{prefix}/manifest.json"})  # fmt: skip


def records_in(store: ObjectStore, run: str = "run-eval") -> list[ScoreRecord]:
    keys = [k for k in store.list(f"scores/{run}/batches/") if k.endswith(".jsonl")]
    return [
        ScoreRecord.model_validate_json(line)
        for key in keys
        for line in store.get(key).decode().splitlines()
    ]


def tamper(store: ObjectStore, prefix: str) -> None:
    """Replace one frame with other bytes (the store's own checksum stays consistent)."""
    frame = next(k for k in store.list(prefix + "/frames/"))
    store.put(frame, b"\x89PNG not the frame the manifest hashed")


@pytest.fixture
def settings(
    s3_store: S3Store, streams: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> Settings:
    monkeypatch.setenv("KOHOLINT_S3_ACCESS_KEY", ACCESS)
    monkeypatch.setenv("KOHOLINT_S3_SECRET_KEY", SECRET)
    return Settings(
        store_url=s3_url(s3_store), redis_url="redis://127.0.0.1:6379/0",
        segments_stream=streams["segments"], scores_stream=streams["scores"], consumer="c1",
        batch_size=4, block_ms=100, consume=False, reclaim_after_ms=500,
    )  # fmt: skip


def test_consumes_from_redis_scores_each_segment_once_and_dead_letters_bad_ones(
    settings: Settings, s3_store: S3Store, segments_dir: Path, streams: dict[str, str]
):
    prefixes = copy_segments(segments_dir, s3_store)
    good, corrupt, unversioned = prefixes[:-2], prefixes[-2], prefixes[-1]
    tamper(s3_store, corrupt)
    manifest = json.loads(s3_store.get(f"{unversioned}/manifest.json"))
    s3_store.put(
        f"{unversioned}/manifest.json", json.dumps({**manifest, "schema_version": 7}).encode()
    )
    service = EvaluatorService(settings, Metrics())
    for prefix in prefixes:
        announce(service.bus, streams["segments"], prefix)
    announce(service.bus, streams["segments"], good[0])  # delivered twice: still one record
    service.bus.publish(streams["segments"], {"schema_version": 1, "prefix": "checkpoints/x/1"})
    service.bus.publish(streams["segments"], {"schema_version": 1, "run": "r"})
    announce(service.bus, streams["segments"], "episodes/run-eval/000099-gone/00000")
    while service.ingestor.poll() or service.update_lag():
        pass
    service.close()
    records = records_in(s3_store)
    assert sorted(r.prefix for r in records) == sorted(good)
    assert all(
        r.backend == "rules" and r.models == {"state": "rules", "progress": "rules"}
        for r in records
    )
    reasons = {m.payload["payload"].get("prefix"): m.payload["reason"]
               for m in service.bus.dead_letters(streams["segments"])}  # fmt: skip
    assert "sha256 differs from the manifest" in reasons[corrupt]
    assert "schema_version 7 is unknown" in reasons[unversioned]
    assert "not a segment prefix" in reasons["checkpoints/x/1"]
    assert "no segment prefix" in reasons[None]
    assert "no manifest" in reasons["episodes/run-eval/000099-gone/00000"]
    events = [
        ScoresEvent.model_validate(m.payload)
        for m in service.bus.consume(streams["scores"], "rm", "c", count=100)
    ]
    assert {r.prefix for e in events for r in e.records} == set(good)
    assert consumer_lag(service.bus, streams["segments"], "evaluator") == 0
    assert service.metrics.registry.get_sample_value("evaluator_dead_letters_total") == 5


class CrashError(BaseException):
    """Stands for the process dying at that point (nothing after it runs)."""


class CrashingStore(LocalStore):
    def __init__(self, root: Path, crash_on: str) -> None:
        super().__init__(root)
        self.crash_on = crash_on

    def put(self, key: str, data: bytes, content_type: str = "application/octet-stream") -> Any:
        if self.crash_on and self.crash_on in key:
            self.crash_on = ""
            raise CrashError(key)
        return super().put(key, data, content_type)


@pytest.mark.parametrize("crash_on", ["/index/", "/batches/"])
def test_a_crash_between_writes_never_duplicates_or_loses_a_record(
    local_store: LocalStore, crash_on: str
):
    store = CrashingStore(local_store.root, crash_on)
    prefixes = [
        k.rsplit("/", 1)[0] for k in store.list("episodes/") if k.endswith("manifest.json")
    ][:3]
    with pytest.raises(CrashError):
        Evaluator(store, MemoryBus(), RulesJudges()).evaluate(prefixes)
    bus = MemoryBus()
    report = Evaluator(store, bus, RulesJudges()).evaluate(prefixes)
    assert [r.outcome for r in report.results] == ["scored"] * 3
    assert sorted(r.prefix for r in records_in(store)) == prefixes


def test_a_crash_after_writing_before_publishing_republishes(local_store: LocalStore):
    class DeadBus(MemoryBus):
        def publish(self, stream: str, payload: dict) -> str:
            raise CrashError(stream)

    prefixes = [
        k.rsplit("/", 1)[0] for k in local_store.list("episodes/") if k.endswith("manifest.json")
    ][:2]
    with pytest.raises(CrashError):
        Evaluator(local_store, DeadBus(), RulesJudges()).evaluate(prefixes)
    bus = MemoryBus()
    evaluator = Evaluator(local_store, bus, RulesJudges())
    report = evaluator.evaluate(prefixes)
    assert [r.outcome for r in report.results] == ["already_scored"] * 2
    for prefix in prefixes:
        evaluator.republish(prefix)
    events = bus.consume("koholint.scores", "g", "c")
    assert sorted(e.payload["records"][0]["prefix"] for e in events) == prefixes
    assert len(records_in(local_store)) == 2


def serve_evaluator(settings: Settings, judge_url: str, port: int) -> subprocess.Popen:
    env = {**os.environ, "KOHOLINT_S3_ACCESS_KEY": ACCESS, "KOHOLINT_S3_SECRET_KEY": SECRET}
    for name, value in {
        "store_url": settings.store_url, "redis_url": settings.redis_url, "backend": "llm-d",
        "llm_base_url": judge_url, "samples": "1", "in_flight_per_route": "1", "batch_size": "2",
        "segments_stream": settings.segments_stream, "scores_stream": settings.scores_stream,
        "block_ms": "100", "reclaim_after_ms": "500", "llm_attempts": "1", "consumer": "c1",
    }.items():  # fmt: skip
        env[f"KOHOLINT_EVALUATOR_{name.upper()}"] = str(value)
    return subprocess.Popen(
        [sys.executable, "-m", "koholint.cli", "serve", "evaluator", "--port", str(port)],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip


def wait_for(condition: Any, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)


@pytest.mark.slow
def test_killed_mid_batch_and_restarted_scores_every_segment_exactly_once(
    settings: Settings, s3_store: S3Store, segments_dir: Path, streams: dict[str, str],
    scripted_judge: Any, redis_client: Any,
):  # fmt: skip
    prefixes = copy_segments(segments_dir, s3_store)
    _, judge_url = scripted_judge(
        dict.fromkeys(("state", "puzzle", "vision"), lambda body: verdict(5, "exploring")),
        delay_s=0.15,
    )
    bus = RedisBus(redis_client)
    for prefix in prefixes:
        announce(bus, streams["segments"], prefix)
    first = serve_evaluator(settings, judge_url, free_port())
    try:
        wait_for(lambda: len(records_in(s3_store)) >= 2, 60, "the first batch")
        first.send_signal(signal.SIGKILL)  # mid-run: later batches are pending or unread
        first.wait(timeout=10)
        scored_before = len(records_in(s3_store))
        assert scored_before < len(prefixes)
    finally:
        first.kill()
    second = serve_evaluator(settings, judge_url, free_port())
    try:
        wait_for(
            lambda: consumer_lag(bus, streams["segments"], "evaluator") == 0, 120, "every segment"
        )
    finally:
        second.terminate()
        second.wait(timeout=30)
    records = records_in(s3_store)
    assert sorted(r.prefix for r in records) == sorted(prefixes)  # no loss, no duplicate
    assert bus.dead_letters(streams["segments"]) == []


def test_while_the_gateway_is_down_messages_stay_pending_and_are_scored_later(
    local_store: LocalStore, scripted_judge: Any, redis_client: Any, streams: dict[str, str]
):
    down = {"now": True}
    answer = lambda body: 503 if down["now"] else verdict(6, "exploring")  # noqa: E731
    _, url = scripted_judge(dict.fromkeys(("state", "puzzle", "vision"), answer))
    settings = Settings(
        backend="llm-d", llm_base_url=url, samples=1, llm_attempts=1, consume=False,
        segments_stream=streams["segments"], scores_stream=streams["scores"], consumer="c1",
        block_ms=100, reclaim_after_ms=100,
    )  # fmt: skip
    bus = RedisBus(redis_client, reclaim_after_ms=100, max_deliveries=20)
    service = EvaluatorService(settings, Metrics(), store=local_store, bus=bus)
    prefixes = [
        k.rsplit("/", 1)[0] for k in local_store.list("episodes/") if k.endswith("manifest.json")
    ][:3]
    for prefix in prefixes:
        announce(bus, streams["segments"], prefix)
    assert service.ingestor.poll() is True  # deferred: pause before reading more
    assert consumer_lag(bus, streams["segments"], "evaluator") == 3  # pending, not acked
    assert local_store.list("scores/") == []
    down["now"] = False
    time.sleep(0.2)  # past reclaim_after_ms: the pending messages are taken over again
    service.ingestor.poll()
    service.close()
    assert sorted(r.prefix for r in records_in(local_store)) == sorted(prefixes)
    assert consumer_lag(bus, streams["segments"], "evaluator") == 0
    assert bus.dead_letters(streams["segments"]) == []

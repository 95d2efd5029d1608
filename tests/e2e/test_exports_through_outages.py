"""Exports through a Redis that stalls, restarts or loses its data: every segment the store
holds is announced exactly once on the stream and scored once by the evaluator.

Each test has a Redis server of its own (tests.redis_server): the faults would stall the
shared one under the tests running beside it."""

from __future__ import annotations

import collections
import json
from collections.abc import Callable
from pathlib import Path

import pytest
from tests.redis_server import RedisServer, private_redis

from evaluator.config import Settings
from evaluator.metrics import Metrics
from evaluator.service import EvaluatorService
from koholint.bus import STREAM_SEGMENTS, RedisBus, connect_redis
from koholint.env.export import ExportQueue, announce_stored
from koholint.env.wrappers import SegmentRecorder
from koholint.env.zelda import ZeldaEnv
from koholint.schemas.evaluator import ScoreRecord
from koholint.store import LocalStore

RUN = "outage"
EPISODES, EPISODE_STEPS, SEGMENT_STEPS = 6, 40, 10  # 24 segments
TIMEOUT_S = 0.5


def pause_writes(server: RedisServer) -> None:
    connect_redis(server.url).execute_command("CLIENT", "PAUSE", "2000", "WRITE")


def flush(server: RedisServer) -> None:
    connect_redis(server.url).flushall()


FAULTS: dict[str, Callable[[RedisServer], None]] = {
    "paused for writes": pause_writes, "stopped and restarted": RedisServer.restart,
    "flushed": flush,
}  # fmt: skip


def evaluator(server: RedisServer, store_root: Path) -> EvaluatorService:
    settings = Settings(
        store_url=str(store_root), redis_url=server.url, redis_timeout_s=TIMEOUT_S,
        segments_stream=STREAM_SEGMENTS, consumer="c1", batch_size=8, block_ms=100,
        consume=False, reclaim_after_ms=500,
    )  # fmt: skip
    return EvaluatorService(settings, Metrics())


def score_what_is_announced(service: EvaluatorService) -> None:
    while service.ingestor.poll() or service.update_lag():
        pass
    service.close()


def scored_prefixes(store: LocalStore) -> list[str]:
    keys = [k for k in store.list(f"scores/{RUN}/batches/") if k.endswith(".jsonl")]
    return [
        ScoreRecord.model_validate_json(line).prefix
        for key in keys
        for line in store.get(key).decode().splitlines()
    ]


@pytest.mark.slow
@pytest.mark.parametrize("fault", list(FAULTS))
def test_every_stored_segment_is_announced_once_and_scored_once(tmp_path: Path, fault: str):
    store = LocalStore(tmp_path / "store")
    with private_redis(tmp_path) as server:
        bus = RedisBus(connect_redis(server.url, timeout_s=TIMEOUT_S))
        exporter = ExportQueue(store, bus=bus, retry_s=0.05, retry_max_s=0.5)
        env = SegmentRecorder(ZeldaEnv(max_episode_steps=EPISODE_STEPS), exporter, run=RUN,
                              every=1, segment_steps=SEGMENT_STEPS, frames=False)  # fmt: skip
        for episode in range(EPISODES):
            if episode == EPISODES // 2:
                assert exporter.flush(timeout=30)
                score_what_is_announced(evaluator(server, store.root))  # some are scored
                FAULTS[fault](server)
            env.reset(seed=episode)
            for step in range(EPISODE_STEPS):
                env.step(step % 5)
        env.close()
        counts = exporter.close(timeout=30)
        # The store is the record: what never reached the stream is announced now.
        announce_stored(store, bus, RUN)
        stored = sorted(
            key.removesuffix("/manifest.json")
            for key in store.list(f"episodes/{RUN}/")
            if key.endswith("/manifest.json")
        )
        assert len(stored) == counts["written"] == EPISODES * EPISODE_STEPS // SEGMENT_STEPS
        assert counts["dropped"] == counts["failed"] == counts["abandoned"] == 0
        streamed = [
            fields[b"payload"] for _, fields in connect_redis(server.url).xrange(STREAM_SEGMENTS)
        ]
        announced = collections.Counter(json.loads(text)["prefix"] for text in streamed)
        assert sorted(announced) == stored
        assert set(announced.values()) == {1}  # exactly once each
        score_what_is_announced(evaluator(server, store.root))
    scored = scored_prefixes(store)
    assert sorted(scored) == stored  # every segment scored, none twice

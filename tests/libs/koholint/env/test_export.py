"""Episode export: segments with frames, ram.jsonl and a manifest of sha256s, announced on the bus."""

import hashlib
import json
from pathlib import Path

import numpy as np

from koholint.bus import STREAM_SEGMENTS, MemoryBus
from koholint.env.export import ExportQueue, Segment
from koholint.env.wrappers import SegmentRecorder
from koholint.env.zelda import ZeldaEnv
from koholint.game.state import GameState
from koholint.store import LocalStore


def test_recorded_episode_lands_in_the_store_with_a_manifest(tmp_path: Path):
    store, bus = LocalStore(tmp_path), MemoryBus()
    exporter = ExportQueue(store, bus=bus)
    env = SegmentRecorder(
        ZeldaEnv(max_episode_steps=50), exporter, run="run-1", every=1, segment_steps=20
    )
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    done = False
    while not done:
        _, _, terminated, truncated, _ = env.step(int(rng.integers(9)))
        done = terminated or truncated
    env.close()
    exporter.close()
    manifests = [key for key in store.list("episodes/run-1/") if key.endswith("manifest.json")]
    assert len(manifests) == 3  # 20 + 20 + 10 steps
    manifest = json.loads(store.get(manifests[0]))
    assert manifest["schema_version"] == 1
    prefix = manifests[0].rsplit("/", 1)[0]
    for name, digest in manifest["files"].items():
        assert hashlib.sha256(store.get(f"{prefix}/{name}")).hexdigest() == digest
    lines = store.get(f"{prefix}/ram.jsonl").decode().splitlines()
    assert len(lines) == 20
    GameState.model_validate(json.loads(lines[0])["state"])
    assert store.get(f"{prefix}/frames/000001.png").startswith(b"\x89PNG")
    bus.ensure_group(STREAM_SEGMENTS, "evaluator")
    events = bus.consume(STREAM_SEGMENTS, "evaluator", "e", count=10)
    assert [event.payload["manifest_key"] for event in events] == manifests


def test_only_every_nth_episode_is_recorded(tmp_path: Path):
    store = LocalStore(tmp_path)
    exporter = ExportQueue(store)
    env = SegmentRecorder(
        ZeldaEnv(max_episode_steps=5), exporter, run="r", every=3, segment_steps=100, frames=False
    )
    for _ in range(6):
        env.reset(seed=0)
        for _ in range(5):
            env.step(0)
    env.close()
    exporter.close()
    assert len([k for k in store.list("episodes/r/") if k.endswith("manifest.json")]) == 2


def test_a_full_queue_drops_and_counts(tmp_path: Path):
    class SlowStore(LocalStore):
        def put(self, key, data, content_type="application/octet-stream"):
            import time

            time.sleep(0.2)
            return super().put(key, data, content_type)

    exporter = ExportQueue(SlowStore(tmp_path), capacity=1)
    segment = Segment("r", "e", 0, steps=[{"t": 1, "action": 0, "reward": 0.0, "state": {}}])
    results = [exporter.offer(segment) for _ in range(5)]
    assert results[0] is True
    assert exporter.dropped >= 3
    exporter.close()

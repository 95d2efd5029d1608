"""Episode export: segments with frames, ram.jsonl and a manifest of sha256s, announced on the bus."""

import hashlib
import json
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from koholint.bus import STREAM_SEGMENTS, MemoryBus
from koholint.env.encoding import encoder_version, encoding_size
from koholint.env.export import (
    EXPORT_SCHEMA_VERSION,
    ExportQueue,
    Segment,
    SegmentFormatError,
    announce_stored,
    announcement,
    read_segment,
)
from koholint.env.wrappers import SegmentRecorder
from koholint.env.zelda import ZeldaEnv
from koholint.game.png import encode_png
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
    assert manifest["schema_version"] == EXPORT_SCHEMA_VERSION == 2
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


class SlowStore(LocalStore):
    def put(self, key, data, content_type="application/octet-stream"):
        time.sleep(0.2)
        return super().put(key, data, content_type)


def one_step_segment(index: int, run: str = "r") -> Segment:
    return Segment(run, "e", index, steps=[{"t": 1, "action": 0, "reward": 0.0, "state": {}}])


def test_a_full_queue_makes_the_producer_wait_and_loses_nothing(tmp_path: Path):
    exporter = ExportQueue(SlowStore(tmp_path), capacity=1)
    assert all(exporter.offer(one_step_segment(index)) for index in range(4))
    assert exporter.wait_seconds > 0.2  # the wait shows, in place of a drop
    counts = exporter.close()
    assert (counts["written"], counts["dropped"], counts["abandoned"]) == (4, 0, 0)
    assert len([k for k in LocalStore(tmp_path).list() if k.endswith("manifest.json")]) == 4


def test_a_queue_full_past_the_wait_drops_and_counts(tmp_path: Path):
    exporter = ExportQueue(SlowStore(tmp_path), capacity=1, offer_wait_s=0.01)
    results = [exporter.offer(one_step_segment(index)) for index in range(5)]
    assert results[0] is True
    assert exporter.counts["dropped"] >= 3
    exporter.close()


def test_closing_counts_what_was_never_written_and_refuses_more(tmp_path: Path):
    exporter = ExportQueue(SlowStore(tmp_path), capacity=8)
    for index in range(6):
        exporter.offer(one_step_segment(index))
    counts = exporter.close(timeout=0.05)
    assert counts["written"] + counts["abandoned"] == 6
    assert counts["abandoned"] >= 3
    with pytest.raises(RuntimeError, match="closed"):
        exporter.offer(one_step_segment(9))


def test_flush_waits_for_every_queued_segment_or_says_it_timed_out(tmp_path: Path):
    gate = threading.Event()

    class GatedStore(LocalStore):
        def put(self, key, data, content_type="application/octet-stream"):
            gate.wait()
            return super().put(key, data, content_type)

    exporter = ExportQueue(GatedStore(tmp_path), capacity=4)
    step = {"t": 1, "action": 0, "reward": 0.0, "state": {}}
    for index in range(3):
        assert exporter.offer(Segment("r", "e", index, steps=[step]))
    started = time.monotonic()
    assert exporter.flush(timeout=0.3) is False  # the store holds every write
    assert 0.3 <= time.monotonic() - started < 2
    assert exporter.counts["written"] == 0
    gate.set()
    assert exporter.flush(timeout=30) is True
    assert exporter.counts["written"] == 3
    stored = LocalStore(tmp_path).list("episodes/r/")
    assert len([key for key in stored if key.endswith("manifest.json")]) == 3
    exporter.close()


def test_steps_carry_the_observation_the_policy_saw(tmp_path: Path):
    store = LocalStore(tmp_path)
    exporter = ExportQueue(store)
    env = SegmentRecorder(
        ZeldaEnv(max_episode_steps=12),
        exporter,
        run="obs",
        every=1,
        segment_steps=100,
        frames=False,
    )
    env.reset(seed=0)
    seen = []
    for action in [4, 4, 1, 1, 3, 3, 2, 2, 5, 0, 0, 4]:
        observation, *_ = env.step(action)
        seen.append(observation)
    env.close()
    exporter.close()
    (manifest_key,) = [k for k in store.list("episodes/obs/") if k.endswith("manifest.json")]
    segment = read_segment(store, manifest_key.rsplit("/", 1)[0])
    stored = np.array([step["observation"] for step in segment.steps], dtype=np.float32)
    assert stored.shape == (12, 128)
    np.testing.assert_array_equal(stored, np.stack(seen))  # exact: float32 round-trips
    assert segment.manifest["encoder_version"].startswith("obs128-")


def test_reader_refuses_an_unknown_schema_version_naming_the_fix(tmp_path: Path):
    store = LocalStore(tmp_path)
    store.put("episodes/r/e/00000/ram.jsonl", b"{}\n")
    store.put(
        "episodes/r/e/00000/manifest.json",
        json.dumps({"schema_version": 1, "files": {}}).encode(),
    )
    with pytest.raises(SegmentFormatError, match="re-export"):
        read_segment(store, "episodes/r/e/00000")


def test_reader_refuses_a_ram_file_that_does_not_match_the_manifest(tmp_path: Path):
    store = LocalStore(tmp_path)
    store.put("episodes/r/e/00000/ram.jsonl", b"{}\n")
    manifest = {"schema_version": EXPORT_SCHEMA_VERSION, "files": {"ram.jsonl": "0" * 64}}
    store.put("episodes/r/e/00000/manifest.json", json.dumps(manifest).encode())
    with pytest.raises(SegmentFormatError, match="sha256"):
        read_segment(store, "episodes/r/e/00000")


def test_frames_are_the_screens_of_each_step_encoded_off_the_sampling_path(tmp_path: Path):
    store = LocalStore(tmp_path)
    exporter = ExportQueue(store)
    env = SegmentRecorder(
        ZeldaEnv(max_episode_steps=6, sticky_action_probability=0.0), exporter, run="px",
        every=1, segment_steps=100,
    )  # fmt: skip
    reference = ZeldaEnv(
        max_episode_steps=6, sticky_action_probability=0.0, render_mode="rgb_array"
    )
    env.reset(seed=0)
    reference.reset(seed=0)
    expected = []
    for action in [4, 4, 1, 1, 5, 0]:
        env.step(action)
        reference.step(action)
        expected.append(encode_png(reference.render()))
        if env._segment is not None:  # until the episode ends and the segment is offered
            # what the recorder holds until the queue's thread encodes it: the raw screen
            assert isinstance(env._segment.frames[-1], np.ndarray)
    env.close()
    reference.close()
    exporter.close()
    (manifest_key,) = [k for k in store.list("episodes/px/") if k.endswith("manifest.json")]
    prefix = manifest_key.rsplit("/", 1)[0]
    stored = [store.get(f"{prefix}/frames/{t:06d}.png") for t in range(1, 7)]
    assert stored == expected  # the same PNG bytes as encoding the step's RGB screen
    assert len(set(stored)) > 1  # the screen moved: a stale frame would not pass


@pytest.mark.parametrize("encoding", ["observation", "flags"])
def test_segments_name_the_encoding_their_observations_are_in(tmp_path: Path, encoding: str):
    """The reward model trained on them reads what the policy saw, in that layout."""
    store = LocalStore(tmp_path)
    exporter = ExportQueue(store)
    game = ZeldaEnv(max_episode_steps=6, observation=encoding)
    env = SegmentRecorder(game, exporter, run="enc", every=1, segment_steps=4, frames=False)
    env.reset(seed=0)
    for _ in range(6):
        env.step(0)
    env.close()
    exporter.close()
    manifests = sorted(k for k in store.list("episodes/enc/") if k.endswith("manifest.json"))
    assert len(manifests) == 2  # 4 + 2 steps: the second segment keeps the encoding
    for key in manifests:
        segment = read_segment(store, key.rsplit("/", 1)[0])
        assert segment.manifest["encoder_version"] == encoder_version(encoding)
        assert {len(step["observation"]) for step in segment.steps} == {encoding_size(encoding)}


class StallingBus(MemoryBus):
    """The in-process bus, failing every call while `down` is set, as a stalled Redis does.
    With `lose_replies`, a publish that went through still raises once: its reply was lost."""

    def __init__(self) -> None:
        super().__init__()
        self.down = threading.Event()
        self.lose_replies = 0
        self.attempts = 0

    def publish_once(self, stream, key, payload):
        self.attempts += 1
        if self.down.is_set():
            raise ConnectionError("Redis timed out")
        published = super().publish_once(stream, key, payload)
        if self.lose_replies:
            self.lose_replies -= 1
            raise TimeoutError("the reply was lost")
        return published


def announced_prefixes(bus: MemoryBus) -> list[str]:
    bus.ensure_group(STREAM_SEGMENTS, "check")
    return [m.payload["prefix"] for m in bus.consume(STREAM_SEGMENTS, "check", "c", count=1000)]


def test_a_stalled_bus_delays_announcements_and_loses_none(tmp_path: Path):
    bus = StallingBus()
    bus.down.set()
    exporter = ExportQueue(LocalStore(tmp_path), bus=bus, retry_s=0.01, retry_max_s=0.05)
    for index in range(5):
        assert exporter.offer(one_step_segment(index))
    assert exporter.flush(timeout=10, announced=False)  # written while the bus is down
    assert exporter.unannounced == 5
    time.sleep(0.2)
    assert bus.attempts > 2  # it kept trying, backing off
    bus.down.clear()
    assert exporter.flush(timeout=10)
    counts = exporter.close()
    assert (counts["written"], counts["announced"], counts["unannounced"]) == (5, 5, 0)
    assert sorted(announced_prefixes(bus)) == [f"episodes/r/e/{i:05d}" for i in range(5)]


def test_a_lost_reply_is_retried_without_announcing_twice(tmp_path: Path):
    bus = StallingBus()
    bus.lose_replies = 1
    exporter = ExportQueue(LocalStore(tmp_path), bus=bus, retry_s=0.01)
    exporter.offer(one_step_segment(0))
    assert exporter.flush(timeout=10)
    exporter.close()
    assert bus.attempts == 2
    assert announced_prefixes(bus) == ["episodes/r/e/00000"]


def test_stored_segments_never_announced_are_announced_once_later(tmp_path: Path):
    store, bus = LocalStore(tmp_path), StallingBus()
    bus.down.set()
    exporter = ExportQueue(store, bus=bus, retry_s=0.01)
    for index in range(3):
        exporter.offer(one_step_segment(index))
    counts = exporter.close(timeout=2)
    assert (counts["written"], counts["unannounced"]) == (3, 3)
    bus.down.clear()
    bus.publish_once(STREAM_SEGMENTS, "episodes/r/e/00000", announcement("episodes/r/e/00000"))
    assert announce_stored(store, bus, "r") == {"stored": 3, "announced": 2}
    assert announce_stored(store, bus, "r") == {"stored": 3, "announced": 0}
    assert sorted(announced_prefixes(bus)) == [f"episodes/r/e/{i:05d}" for i in range(3)]

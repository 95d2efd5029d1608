"""The reward-model service's logic: the dataset, training outcomes and scoring, on a local
store and the in-process bus (the real Redis and S3 server are in test_live.py)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest
from pydantic import ValidationError
from reward_synthetic import export_synthetic, scores_event, synthetic_segments

from koholint.bus import MemoryBus
from koholint.env.encoding import encoder_version
from koholint.reward.model import load_version
from koholint.schemas.reward_model import ScoreRequest
from koholint.store import LocalStore
from koholint.web.problems import NotFoundError, UnprocessableError
from reward_model.config import Settings
from reward_model.service import RewardModelService


def make_service(tmp_path: Path, **settings: object) -> tuple[RewardModelService, MemoryBus]:
    bus = MemoryBus()
    values = {"store_url": str(tmp_path), "min_pairs": 10, "max_steps": 150, **settings}
    return RewardModelService(Settings(**values), LocalStore(tmp_path), bus), bus


def test_scores_on_the_bus_train_and_publish_a_version(tmp_path: Path):
    service, bus = make_service(tmp_path, train_after_new_pairs=100, block_ms=10)
    segments = synthetic_segments(60, steps=12, seed=4)
    prefixes = export_synthetic(service.store, segments)
    bus.publish(service.settings.scores_stream, scores_event("syn", prefixes[:30], segments[:30]))
    bus.publish(service.settings.scores_stream, scores_event("syn", prefixes[30:], segments[30:]))
    while service.consume_once():
        pass
    assert len(service.segments()) == 60
    status = service.last_training
    assert status is not None
    assert status.state == "published", status.detail
    card = service.models().models[-1]
    assert card.version == status.version
    assert card.heldout_accuracy > 0.6
    assert card.source_scores[0].startswith("rk-episodes/syn/")
    loaded = load_version(service.store, card.version, expected_encoder=service.encoder_version)
    steps = np.concatenate([segment.observations for segment in segments])
    assert card.output_median == pytest.approx(float(np.median(loaded.function(steps))), rel=1e-5)
    event = bus.consume(service.settings.models_stream, "trainer", "t")[0].payload
    assert event["version"] == card.version
    assert event["encoder_version"] == loaded.card.encoder_version


def test_an_empty_or_one_sided_set_publishes_nothing_and_says_why(tmp_path: Path):
    service, _ = make_service(tmp_path)
    empty = service.train()
    assert empty.state == "refused"
    assert "empty or one-sided" in empty.detail
    segments = synthetic_segments(6, steps=4, seed=0)
    same = [type(s)(s.prefix, s.record_key, 5.0, s.start, s.observations) for s in segments]
    for prefix, scored in zip(export_synthetic(service.store, same), same, strict=True):
        assert service.add_score(prefix, scored.record_key, scored.score)
    one_sided = service.train()
    assert one_sided.state == "refused"
    assert "one-sided" in one_sided.detail
    assert service.models().models == []
    assert service.metrics.rejected.labels("no_pairs")._value.get() == 2


def test_a_model_below_the_floor_is_not_published(tmp_path: Path):
    service, _ = make_service(tmp_path, accuracy_floor=0.999)
    segments = synthetic_segments(30, steps=6, seed=1)
    for prefix, scored in zip(export_synthetic(service.store, segments), segments, strict=True):
        service.add_score(prefix, scored.record_key, scored.score)
    status = service.train()
    assert status.state == "refused"
    assert "does not beat the floor 0.999" in status.detail
    assert service.models().models == []


def test_unreadable_segments_and_invalid_events_are_counted_not_fatal(tmp_path: Path):
    service, _ = make_service(tmp_path)
    assert service.add_event({"schema_version": 1, "nonsense": True}) == 0
    assert not service.add_score("episodes/none/e/00000", "k", 3.0)
    assert not service.add_score("episodes/none/e/00001", "k", None)
    rejected = service.metrics.rejected
    assert rejected.labels("invalid_event")._value.get() == 1
    assert rejected.labels("segment_unreadable")._value.get() == 1
    assert rejected.labels("unscored")._value.get() == 1


def test_a_service_on_the_memory_encoding_trains_only_on_segments_encoded_so(tmp_path: Path):
    service, _ = make_service(tmp_path, encoding="memory")
    assert service.encoder_version == encoder_version("memory")
    segments = synthetic_segments(2, steps=4, seed=0)  # the policy's 128-float observations
    prefixes = export_synthetic(service.store, segments)
    assert not service.add_score(prefixes[0], segments[0].record_key, segments[0].score)
    assert service.metrics.rejected.labels("segment_unreadable")._value.get() == 1
    with pytest.raises(ValidationError, match="encoding"):
        Settings(store_url=str(tmp_path), encoding="pixels")


def test_score_checks_its_input_and_names_the_field(tmp_path: Path):
    service, _ = make_service(tmp_path)
    with pytest.raises(NotFoundError, match="no reward model has been published"):
        service.score(ScoreRequest(observations=[[0.0] * 128]))
    segments = synthetic_segments(30, steps=6, seed=2)
    for prefix, scored in zip(export_synthetic(service.store, segments), segments, strict=True):
        service.add_score(prefix, scored.record_key, scored.score)
    assert service.train().state == "published"
    with pytest.raises(ValidationError) as invalid:  # the row length is the schema's
        ScoreRequest(observations=[[0.0] * 128, [0.0] * 3])
    assert invalid.value.errors()[0]["loc"] == ("observations", 1)
    with pytest.raises(ValidationError, match="finite"):
        ScoreRequest(observations=[[float("nan")] * 128])
    with pytest.raises(UnprocessableError, match="NaN") as error:  # past the schema: still refused
        service.score(ScoreRequest.model_construct(observations=[[float("nan")] * 128]))
    assert error.value.extra["field"] == "observations"
    with pytest.raises(UnprocessableError, match="beyond a float's range") as error:
        service.score(ScoreRequest(observations=[[0.0] * 128, [3e38] * 128]))
    assert error.value.extra["field"] == "observations.1"
    observations = segments[0].observations
    response = service.score(ScoreRequest(observations=observations.tolist()))
    expected = service.latest().function(observations)
    np.testing.assert_allclose(response.rewards, expected, rtol=1e-6)
    assert response.segment_reward == pytest.approx(float(expected.mean()), rel=1e-6)


@pytest.mark.parametrize("score", [float("nan"), -5.0, 1e300, 11.0, float("inf")])
def test_a_score_outside_the_judges_scale_is_an_invalid_event(tmp_path: Path, score: float):
    service, bus = make_service(tmp_path, block_ms=10)
    segments = synthetic_segments(2, steps=4, seed=3)
    prefixes = export_synthetic(service.store, segments)
    event = scores_event("syn", prefixes, segments)
    event["records"][1]["score"] = score
    bus.publish(service.settings.scores_stream, event)
    service.consume_once()
    assert service.metrics.rejected.labels("invalid_event")._value.get() == 1
    assert service.segments() == []
    assert not service.add_score(prefixes[0], "k", score)  # nor past the event's schema


def test_poison_segments_are_refused_one_by_one(tmp_path: Path):
    service, bus = make_service(tmp_path, block_ms=10)
    segments = synthetic_segments(4, steps=4, seed=3)
    prefixes = export_synthetic(service.store, segments)
    for prefix, data in ((prefixes[1], b"[" * 100_000 + b"]" * 100_000), (prefixes[2], b"\xff")):
        service.store.put(f"{prefix}/ram.jsonl", data)
        manifest = json.loads(service.store.get(f"{prefix}/manifest.json"))
        manifest["files"]["ram.jsonl"] = hashlib.sha256(data).hexdigest()
        service.store.put(f"{prefix}/manifest.json", json.dumps(manifest).encode())
    bus.publish(service.settings.scores_stream, scores_event("syn", prefixes, segments))
    service.consume_once()
    assert sorted(s.prefix for s in service.segments()) == [prefixes[0], prefixes[3]]
    assert service.metrics.rejected.labels("segment_unreadable")._value.get() == 2


def test_a_new_service_on_the_same_store_restores_the_dataset(tmp_path: Path):
    service, _ = make_service(tmp_path, max_segments=20)
    segments = synthetic_segments(24, steps=4, seed=5)
    prefixes = export_synthetic(service.store, segments)
    write_score_records(service.store, prefixes, segments)
    restarted, _ = make_service(tmp_path, max_segments=20)
    assert restarted.models().restored is None  # not read yet
    assert restarted.restore() == 20  # the newest max_segments
    assert [s.prefix for s in restarted.segments()] == prefixes[4:]
    assert restarted.models().restored == restarted.models().segments == 20


def write_score_records(store, prefixes: list[str], segments: list) -> str:
    """The evaluator's batch file of score records for the segments (scored in this order)."""
    lines = [
        json.dumps({"schema_version": 1, "prefix": prefix, "record_key": f"rk-{index}",
                    "score": scored.score, "scored_at": 1_000_000.0 + index})
        for index, (prefix, scored) in enumerate(zip(prefixes, segments, strict=True))
    ]  # fmt: skip
    lines.append(json.dumps({"schema_version": 1, "prefix": "episodes/x/y/00000",
                             "record_key": "bad", "score": float("nan"), "scored_at": 1.0}))  # fmt: skip
    lines.append("{not json")
    key = "scores/syn/batches/20261126T000000.000000Z-h-00000000.jsonl"
    store.put(key, ("\n".join(lines) + "\n").encode())
    return key

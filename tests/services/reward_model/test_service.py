"""The reward-model service's logic: the dataset, training outcomes and scoring, on a local
store and the in-process bus (the real Redis and S3 server are in test_live.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from reward_synthetic import export_synthetic, scores_event, synthetic_segments

from koholint.bus import MemoryBus
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


def test_score_checks_its_input_and_names_the_field(tmp_path: Path):
    service, _ = make_service(tmp_path)
    with pytest.raises(NotFoundError, match="no reward model has been published"):
        service.score(ScoreRequest(observations=[[0.0] * 128]))
    segments = synthetic_segments(30, steps=6, seed=2)
    for prefix, scored in zip(export_synthetic(service.store, segments), segments, strict=True):
        service.add_score(prefix, scored.record_key, scored.score)
    assert service.train().state == "published"
    with pytest.raises(UnprocessableError) as error:
        service.score(ScoreRequest(observations=[[0.0] * 128, [0.0] * 3]))
    assert error.value.extra["field"] == "observations.1"
    with pytest.raises(UnprocessableError, match="NaN"):
        service.score(ScoreRequest(observations=[[float("nan")] * 128]))
    observations = segments[0].observations
    response = service.score(ScoreRequest(observations=observations.tolist()))
    expected = service.latest().function(observations)
    np.testing.assert_allclose(response.rewards, expected, rtol=1e-6)
    assert response.segment_reward == pytest.approx(float(expected.mean()), rel=1e-6)

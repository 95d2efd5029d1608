"""The vote against a scripted judge server over HTTP: seeds, ties, abstentions, M=1 and M=5."""

from __future__ import annotations

import json
from typing import Any

import pytest
from tests.services.evaluator.conftest import segment_prefixes, verdict

from evaluator.config import Settings
from evaluator.judges import make_judges
from evaluator.scoring import Evaluator
from koholint.bus import MemoryBus
from koholint.env.export import Segment, write_segment
from koholint.schemas.evaluator import ScoreRecord, ScoresEvent
from koholint.store import LocalStore

MODELS = {"vision": "vision-model", "state": "state-model", "progress": "reasoning-model"}


def by_seed(answers: dict[int, str]) -> Any:
    return lambda body: answers[body["seed"]]


def evaluator_for(
    url: str, store: LocalStore, bus: MemoryBus, samples: int, attempts: int = 2
) -> Evaluator:
    judges = make_judges("llm-d", base_url=url, models=MODELS, attempts=attempts, timeout_s=10)
    # These tests count the requests of segment scores: no state comparisons (test_comparisons).
    evaluator = Evaluator(
        store, bus, judges, Settings(samples=samples, seed=100, in_flight_per_route=2)
    )
    evaluator.state_pairs = 0  # a setting cannot turn the comparisons off; a test can
    return evaluator


def test_three_samples_per_judge_vote_and_the_ensemble_follows_the_majority(
    scripted_judge, local_store: LocalStore
):
    judge, url = scripted_judge({
        "state": by_seed({100: verdict(2, "stuck"), 101: verdict(6, "progress"), 102: verdict(8, "progress")}),
        "puzzle": lambda body: verdict(5, "progress"),
        "vision": lambda body: verdict(1, "stuck"),
    })  # fmt: skip
    bus = MemoryBus()
    evaluator = evaluator_for(url, local_store, bus, samples=3)
    prefixes = segment_prefixes(local_store, "run-eval")[:2]
    report = evaluator.evaluate(prefixes)
    evaluator.close()
    assert [r.outcome for r in report.results] == ["scored", "scored"]
    record = ScoreRecord.model_validate_json(report.results[0].record.model_dump_json())
    judges = {result.judge: result for result in record.judges}
    assert (judges["state"].label, judges["state"].score) == ("progress", 6.0)
    assert [s.seed for s in judges["state"].samples] == [100, 101, 102]
    assert (judges["progress"].label, judges["vision"].label) == ("progress", "stuck")
    assert record.label == "progress"
    assert record.score == pytest.approx((6 + 5 + 1) / 3)
    assert record.models == MODELS
    assert record.seeds == [100, 101, 102]
    assert judge.count("state") == judge.count("puzzle") == judge.count("vision") == 6
    vision_request = next(body for route, body in judge.requests if route == "vision")
    parts = vision_request["messages"][1]["content"]
    assert any(
        p["type"] == "image_url" and p["image_url"]["url"].startswith("data:image/png;base64,")
        for p in parts
    )
    assert vision_request["response_format"]["type"] == "json_schema"
    event = ScoresEvent.model_validate(bus.consume("koholint.scores", "g", "c")[0].payload)
    assert [r.prefix for r in event.records] == prefixes
    assert event.kappa is not None


def test_five_samples_tie_goes_to_the_label_answered_first(scripted_judge, local_store: LocalStore):
    labels = {100: "stuck", 101: "exploring", 102: "exploring", 103: "stuck", 104: "dying"}
    _, url = scripted_judge({
        "state": lambda body: verdict(body["seed"] - 100, labels[body["seed"]]),
        "puzzle": lambda body: verdict(3, "exploring"),
        "vision": lambda body: verdict(3, "exploring"),
    })  # fmt: skip
    evaluator = evaluator_for(url, local_store, MemoryBus(), samples=5)
    record = evaluator.evaluate(segment_prefixes(local_store, "run-eval")[:1]).results[0].record
    evaluator.close()
    state = next(j for j in record.judges if j.judge == "state")
    assert (state.label, state.score, len(state.samples)) == ("stuck", 2.0, 5)


def test_single_sample_and_a_judge_that_always_answers_garbage_abstains(
    scripted_judge, local_store: LocalStore
):
    judge, url = scripted_judge({
        "state": lambda body: verdict(7, "exploring"),
        "puzzle": lambda body: '{"score": 42, "label": "winning"}',
        "vision": lambda body: "not json at all",
    })  # fmt: skip
    evaluator = evaluator_for(url, local_store, MemoryBus(), samples=1)
    record = evaluator.evaluate(segment_prefixes(local_store, "run-eval")[:1]).results[0].record
    evaluator.close()
    assert (record.label, record.score) == ("exploring", 7.0)
    assert {a.judge: a.reason for a in record.abstentions} == {
        "progress": "rejected",
        "vision": "rejected",
    }
    progress = next(j for j in record.judges if j.judge == "progress")
    assert progress.samples[0].outcome == "rejected"
    assert "score" in (progress.samples[0].error or "")
    assert judge.count("puzzle") == 2  # the answer and one repair round, then rejected


def test_every_judge_rejected_leaves_a_record_without_label(
    scripted_judge, local_store: LocalStore
):
    _, url = scripted_judge(dict.fromkeys(("state", "puzzle", "vision"), lambda body: "{}"))
    evaluator = evaluator_for(url, local_store, MemoryBus(), samples=1)
    record = evaluator.evaluate(segment_prefixes(local_store, "run-eval")[:1]).results[0].record
    evaluator.close()
    assert (record.label, record.score) == (None, None)
    assert len(record.abstentions) == 3


def test_unreachable_judge_defers_the_segment_and_writes_nothing(
    scripted_judge, local_store: LocalStore
):
    _, url = scripted_judge({
        "state": lambda body: verdict(7, "exploring"),
        "puzzle": lambda body: 503,
        "vision": lambda body: verdict(7, "exploring"),
    })  # fmt: skip
    bus = MemoryBus()
    evaluator = evaluator_for(url, local_store, bus, samples=1, attempts=1)
    report = evaluator.evaluate(segment_prefixes(local_store, "run-eval")[:2])
    evaluator.close()
    assert [r.outcome for r in report.results] == ["deferred", "deferred"]
    assert "judges unreachable" in report.results[0].detail
    assert local_store.list("scores/") == []
    assert bus.consume("koholint.scores", "g", "c") == []


def test_vision_abstains_on_a_segment_exported_without_frames(
    scripted_judge, local_store: LocalStore
):
    source = segment_prefixes(local_store, "run-eval")[0]
    steps = [json.loads(line) for line in local_store.get(f"{source}/ram.jsonl").splitlines()]
    write_segment(local_store, Segment("run-eval", "frameless", 0, steps=steps))
    judge, url = scripted_judge(
        dict.fromkeys(("state", "puzzle", "vision"), lambda body: verdict(4, "stuck"))
    )
    evaluator = evaluator_for(url, local_store, MemoryBus(), samples=1)
    record = evaluator.evaluate(["episodes/run-eval/frameless/00000"]).results[0].record
    evaluator.close()
    assert {a.judge: a.reason for a in record.abstentions} == {"vision": "no_vision"}
    assert judge.count("vision") == 0
    assert record.label == "stuck"

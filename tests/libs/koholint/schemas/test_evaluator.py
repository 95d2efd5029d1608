"""Score records and the koholint.scores event: checked-in JSON Schemas, validation, limits."""

import json

import jsonschema
import pytest
from pydantic import ValidationError

from koholint.schemas.evaluator import (
    SCORE_SCHEMA_VERSION,
    ScoreRecord,
    ScoresEvent,
    Verdict,
    schema_files,
)


def test_checked_in_schemas_are_current():
    for path, text in schema_files():
        assert path.read_text() == text, f"{path.name} is stale: run `koholint schemas export`"


def test_verdict_refuses_scores_out_of_range_and_unknown_labels():
    Verdict(score=7, label="progress", events=["took the sword"], rationale="found the sword")
    with pytest.raises(ValidationError, match="score"):
        Verdict(score=11, label="progress", events=[], rationale="")
    with pytest.raises(ValidationError, match="label"):
        Verdict.model_validate({"score": 3, "label": "dancing", "events": [], "rationale": ""})


def test_event_validates_against_its_checked_in_schema():
    event = ScoresEvent(
        run="r", scores_key="scores/r/batches/x.jsonl", judge_config_hash="abc", backend="rules",
        records=[{"prefix": "episodes/r/e/00000", "record_key": "k", "label": "stuck", "score": 2.0}],
    )  # fmt: skip
    schema = json.loads(schema_files()[1][0].read_text())
    jsonschema.validate(json.loads(event.model_dump_json()), schema)
    assert event.schema_version == SCORE_SCHEMA_VERSION == 2
    assert ScoreRecord.model_json_schema()["properties"]["schema_version"]["enum"] == [1, 2]


def test_version_one_records_and_events_are_still_read():
    old_event = {"schema_version": 1, "run": "r", "scores_key": "scores/r/batches/x.jsonl",
                 "judge_config_hash": "abc", "backend": "rules", "records": [], "kappa": None}  # fmt: skip
    event = ScoresEvent.model_validate(old_event)
    assert (event.schema_version, event.judge_accuracy, event.comparisons_key) == (1, [], None)
    jsonschema.validate(old_event, json.loads(schema_files()[1][0].read_text()))

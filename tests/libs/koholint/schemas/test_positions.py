"""The PositionEvent contract: plain-data events validate, the checked-in JSON Schema is current."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from koholint.schemas.positions import PositionEvent, position_event, schema_files


def test_plain_events_validate_and_bad_ones_do_not():
    event = position_event(
        "trainer", "r1", "4-0", (1, 0, 8), 72, 121, progress=2, episode_step=64, rooms=3
    )
    parsed = PositionEvent.model_validate(event)
    assert parsed.room_key == (1, 0, 8)
    assert parsed.schema_version == 1
    for field, value in [("run", "../x"), ("x", 300), ("source", "other"), ("extra", 1)]:
        with pytest.raises(ValidationError):
            PositionEvent.model_validate({**event, field: value})


def test_checked_in_schema_is_current():
    for path, text in schema_files():
        assert path.read_text() == text, "run `koholint schemas export`"

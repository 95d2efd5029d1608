"""Loading a segment: manifest, re-hash of every file, RAM facts, key frames; what is refused."""

from __future__ import annotations

import json

import pytest
from tests.services.evaluator.conftest import SEGMENT_STEPS, segment_prefixes

from evaluator.segments import SegmentRejectedError, condense, load_segment, parse_prefix
from koholint.store import LocalStore


def test_real_segment_loads_with_facts_and_key_frames(local_store: LocalStore):
    prefix = segment_prefixes(local_store, "run-eval")[0]
    segment = load_segment(local_store, prefix)
    assert segment.ref.run == "run-eval"
    assert segment.ref.segment == 0
    assert segment.facts.steps == SEGMENT_STEPS
    assert segment.facts.health_start > 0
    first, last = segment.key_frames[0], segment.key_frames[-1]
    assert first[0] < last[0]
    assert first[1].startswith(b"\x89PNG")


def test_a_file_that_does_not_match_the_manifest_is_refused(local_store: LocalStore):
    prefix = segment_prefixes(local_store, "run-eval")[1]
    local_store.put(
        f"{prefix}/frames/{json.loads(local_store.get(f'{prefix}/ram.jsonl').splitlines()[3])['t']:06d}.png",
        b"not the frame",
    )
    with pytest.raises(SegmentRejectedError, match="sha256 differs from the manifest"):
        load_segment(local_store, prefix)


def test_missing_or_unknown_manifest_is_refused(local_store: LocalStore):
    first, second = segment_prefixes(local_store, "run-eval")[:2]
    local_store.delete(f"{first}/manifest.json")
    with pytest.raises(SegmentRejectedError, match="no manifest"):
        load_segment(local_store, first)
    manifest = json.loads(local_store.get(f"{second}/manifest.json"))
    local_store.put(
        f"{second}/manifest.json", json.dumps({**manifest, "schema_version": 99}).encode()
    )
    with pytest.raises(SegmentRejectedError, match="schema_version 99 is unknown"):
        load_segment(local_store, second)


def test_a_manifest_of_another_segment_is_refused(local_store: LocalStore):
    first, second = segment_prefixes(local_store, "run-eval")[:2]
    local_store.put(f"{second}/manifest.json", local_store.get(f"{first}/manifest.json"))
    with pytest.raises(SegmentRejectedError, match="names another segment"):
        load_segment(local_store, second)


@pytest.mark.parametrize(
    "prefix", ["scores/run/x", "episodes/run/e", "episodes/../e/1", "", "episodes/r/e/00001/"]
)
def test_foreign_prefixes_are_refused(prefix: str):
    with pytest.raises(SegmentRejectedError, match="not a segment prefix"):
        parse_prefix(prefix)


def step(
    t: int,
    room: int = 1,
    health: int = 24,
    items: int = 0,
    deaths: int = 0,
    x: int = 5,
    **extra: object,
) -> dict:
    state = {
        "room": {"indoor": False, "map": 0, "room": room}, "link": {"tile_x": x, "tile_y": 3},
        "dialog": {"open": False, "choice_shown": False}, "inventory": {"items": items},
        "health": health, "keys": 0, "kills": 0, "deaths": deaths, "rupees": 0,
        "rooms_visited": room, "has_instrument": False, "mode": "world", **extra,
    }  # fmt: skip
    return {"t": t, "reward": 0.5, "state": state}


def test_condense_counts_rooms_items_damage_and_deaths():
    steps = [
        step(1), step(2, room=2, x=0), step(3, room=1, health=16), step(4, room=1, health=16, items=2),
        step(5, room=3, health=0, items=2, deaths=1),
    ]  # fmt: skip
    facts = condense(steps)
    assert (facts.rooms_entered, facts.revisits, facts.distinct_rooms) == (3, 1, 3)
    assert facts.items_gained == ["sword"]
    assert facts.health_lost == 24
    assert facts.deaths == 1
    assert facts.new_rooms == 2
    assert facts.reward_total == 2.5

"""Preference pairs: margins drop ties, comparable starts come first, sources are kept."""

from __future__ import annotations

import numpy as np

from koholint.env.export import StoredSegment
from reward_model.preferences import ScoredSegment, build_preferences, scored_segment


def segment(index: int, score: float, start: str) -> ScoredSegment:
    return ScoredSegment(f"p{index}", f"k{index}", score, start, np.zeros((2, 128), np.float32))


def test_ties_are_dropped_and_the_higher_score_is_preferred():
    segments = [segment(0, 5.0, "a"), segment(1, 5.4, "a"), segment(2, 8.0, "a")]
    pairs = build_preferences(segments, margin=1.0, max_pairs=10)
    assert {(p.preferred, p.other) for p in pairs} == {(2, 0), (2, 1)}
    assert all(p.score_gap >= 1.0 for p in pairs)
    assert {p.sources for p in pairs} == {("k2", "k0"), ("k2", "k1")}


def test_pairs_with_the_same_start_come_first():
    segments = [
        segment(0, 1.0, "a"),
        segment(1, 9.0, "b"),
        segment(2, 5.0, "a"),
        segment(3, 2.0, "b"),
    ]
    pairs = build_preferences(segments, margin=1.0, max_pairs=3, seed=1)
    assert [p.comparable for p in pairs[:2]] == [True, True]
    assert not pairs[2].comparable
    assert len(pairs) == 3


def test_a_one_sided_set_makes_no_pairs():
    segments = [segment(index, 7.0, "a") for index in range(5)]
    assert build_preferences(segments, margin=0.5, max_pairs=100) == []


def test_a_stored_segment_gives_its_observations_and_start_room():
    steps = [
        {"observation": [0.5] * 128, "state": {"room": {"indoor": True, "map": 3, "room": 17}}}
    ] * 3
    scored = scored_segment(StoredSegment("p", {}, steps), "k", 6.5)
    assert scored.observations.shape == (3, 128)
    assert scored.start == "1:3:17"
    assert scored.score == 6.5

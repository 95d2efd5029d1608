"""The preference dataset: scored segments, and the pairs a Bradley-Terry model learns from.

A pair (A, B) says A's ensemble score beat B's by at least ``margin``; closer scores are ties
and are dropped (a tie says nothing about which segment made more progress). Pairs whose
segments started in the same room come first, so the model learns what progress looks like
rather than which start was lucky; pairs across starts fill up to ``max_pairs`` after them.
Each pair remembers the score records it came from.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from koholint.env.export import StoredSegment


@dataclass(frozen=True)
class ScoredSegment:
    prefix: str
    record_key: str
    score: float
    start: str
    """the room the segment started in (indoor:map:room): pairs with equal starts compare"""
    observations: np.ndarray
    """(steps, observation size) float32: the exported observation of every step"""


@dataclass(frozen=True)
class Preference:
    preferred: int
    other: int
    """indices into the segment list the pairs were built from"""
    score_gap: float
    comparable: bool
    """both segments started in the same room"""
    sources: tuple[str, str]
    """record keys of the two scores (preferred first)"""


def scored_segment(stored: StoredSegment, record_key: str, score: float) -> ScoredSegment:
    """A scored segment from an exported one: its observations and the room it started in."""
    if not stored.steps:
        raise ValueError(f"{stored.prefix}: the segment has no steps")
    observations = np.array([step["observation"] for step in stored.steps], np.float32)
    if observations.ndim != 2 or not np.isfinite(observations).all():
        raise ValueError(f"{stored.prefix}: observations are ragged or not finite")
    room = stored.steps[0].get("state", {}).get("room", {})
    start = f"{int(bool(room.get('indoor')))}:{room.get('map', 0)}:{room.get('room', 0)}"
    return ScoredSegment(stored.prefix, record_key, float(score), start, observations)


def build_preferences(
    segments: list[ScoredSegment], *, margin: float, max_pairs: int, seed: int = 0
) -> list[Preference]:
    """Every pair whose scores differ by `margin` or more: comparable starts first, then the
    others, each group in a seeded random order, `max_pairs` at most."""
    comparable: list[Preference] = []
    across: list[Preference] = []
    for first, second in itertools.combinations(range(len(segments)), 2):
        gap = segments[first].score - segments[second].score
        if abs(gap) < margin:
            continue
        preferred, other = (first, second) if gap > 0 else (second, first)
        same = segments[first].start == segments[second].start
        pair = Preference(preferred, other, abs(gap), same,
                          (segments[preferred].record_key, segments[other].record_key))  # fmt: skip
        (comparable if same else across).append(pair)
    rng = np.random.default_rng(seed)
    return [*_shuffled(comparable, rng), *_shuffled(across, rng)][:max_pairs]


def _shuffled(pairs: Iterable[Preference], rng: np.random.Generator) -> list[Preference]:
    items = list(pairs)
    return [items[index] for index in rng.permutation(len(items))]

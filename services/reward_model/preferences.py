"""The preference dataset: scored segments, and the pairs a Bradley-Terry model learns from.

A pair (A, B) says A's ensemble score beat B's by at least ``margin``; closer scores are ties
and are dropped (a tie says nothing about which segment made more progress). Pairs whose
segments started in the same room come first, so the model learns what progress looks like
rather than which start was lucky; pairs across starts fill up to ``max_pairs`` after them.
Each pair remembers the score records it came from.

State pairs (``build_state_preferences``) come from the judges' comparisons of states sampled
in the segments (``koholint.schemas.evaluator.StateComparisons``): each pair the ensemble
decided is one preference between two single observations, with the RAM ground truth kept
beside it to measure R_phi against. An item is then one state (a one-row ``ScoredSegment``)
whose ``group`` is its segment: the held-out split holds out whole segments.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from koholint.env.export import StoredSegment
from koholint.schemas.evaluator import StateComparisons


@dataclass(frozen=True)
class ScoredSegment:
    prefix: str
    record_key: str
    score: float
    start: str
    """the room the segment started in (indoor:map:room): pairs with equal starts compare"""
    observations: np.ndarray
    """(steps, observation size) float32: the exported observation of every step"""
    times: tuple[int, ...] = ()
    """each step's t (the comparisons name states by it)"""
    group: str = ""
    """what the held-out split holds out together (the segment; default the prefix)"""


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
    truth: int = 0
    """+1: the RAM ground truth agrees the preferred one is further along, -1: it says the
    other is, 0: a tie or unknown"""


def scored_segment(stored: StoredSegment, record_key: str, score: float) -> ScoredSegment:
    """A scored segment from an exported one: its observations and the room it started in."""
    if not stored.steps:
        raise ValueError(f"{stored.prefix}: the segment has no steps")
    observations = np.array([step["observation"] for step in stored.steps], np.float32)
    if observations.ndim != 2 or not np.isfinite(observations).all():
        raise ValueError(f"{stored.prefix}: observations are ragged or not finite")
    room = stored.steps[0].get("state", {}).get("room", {})
    start = f"{int(bool(room.get('indoor')))}:{room.get('map', 0)}:{room.get('room', 0)}"
    times = tuple(int(step.get("t", index)) for index, step in enumerate(stored.steps))
    return ScoredSegment(stored.prefix, record_key, float(score), start, observations, times)


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


def build_state_preferences(
    segments: dict[str, ScoredSegment],
    comparisons: Iterable[StateComparisons],
    *,
    max_pairs: int,
    seed: int = 0,
    ties: bool = False,
) -> tuple[list[ScoredSegment], list[Preference], list[tuple[int, int]]]:
    """(states, pairs, tie pairs): every compared pair the ensemble decided whose two states
    are in `segments`, in a seeded order, `max_pairs` at most; each state one single-row item.
    With `ties`, also the pairs every voting judge called the same (as many as the decided
    pairs at most, in a seeded order)."""
    items: list[ScoredSegment] = []
    index_of: dict[tuple[str, int], int] = {}
    rows = {prefix: {t: row for row, t in enumerate(s.times)} for prefix, s in segments.items()}

    def item(prefix: str, t: int) -> int | None:
        if (prefix, t) not in index_of:
            row = rows.get(prefix, {}).get(t)
            if row is None:
                return None
            segment = segments[prefix]
            index_of[(prefix, t)] = len(items)
            items.append(ScoredSegment(
                f"{prefix}@{t}", segment.record_key, segment.score, segment.start,
                segment.observations[row : row + 1], (t,), prefix,
            ))  # fmt: skip
        return index_of[(prefix, t)]

    candidates: list[tuple[StateComparisons, int]] = [
        (document, index)
        for document in comparisons
        for index, vote in enumerate(document.preferred)
        if vote
    ]
    rng = np.random.default_rng(seed)
    tied = _tie_candidates(comparisons) if ties else []
    pairs: list[Preference] = []
    for position in rng.permutation(len(candidates)):
        if len(pairs) >= max_pairs:
            break
        document, index = candidates[position]
        first_index, second_index = document.pairs[index]
        first, second = document.states[first_index], document.states[second_index]
        a, b = item(first.prefix, first.t), item(second.prefix, second.t)
        if a is None or b is None:
            continue
        vote = document.preferred[index]
        preferred, other = (a, b) if vote > 0 else (b, a)
        truth = document.truth[index] * vote
        pairs.append(Preference(preferred, other, 1.0, True,
                                (items[preferred].record_key, items[other].record_key),
                                truth))  # fmt: skip
    tie_pairs: list[tuple[int, int]] = []
    for position in rng.permutation(len(tied)):
        if len(tie_pairs) >= len(pairs):
            break
        document, index = tied[position]
        first, second = (document.states[k] for k in document.pairs[index])
        a, b = item(first.prefix, first.t), item(second.prefix, second.t)
        if a is not None and b is not None:
            tie_pairs.append((a, b))
    return items, pairs, tie_pairs


def _tie_candidates(comparisons: Iterable[StateComparisons]) -> list[tuple[StateComparisons, int]]:
    """The pairs every voting judge (at least one) called the same."""
    found = []
    for document in comparisons:
        voting = [entry.judge for entry in document.judge_accuracy if entry.votes]
        if not voting:
            continue
        for index, vote in enumerate(document.preferred):
            if vote == 0 and all(document.votes[judge][index] == 0 for judge in voting):
                found.append((document, index))
    return found

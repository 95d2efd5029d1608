"""The ground truth the judges are measured against: the game's own progress, read from RAM.

A state is *further along* than another when its progress level is higher — the level of
``koholint.env.zelda.progress_level`` (items held, puzzles solved, small keys held, doors
opened ×2, the instrument) plus one once the credits roll — or, at the same level, when it has
reached more rooms (the room tables' visited bits). Two states with the same level and the same
rooms are a **tie**: the truth says nothing about them, and ties are left out of every accuracy.
That is the question ``progress+rooms``; the question ``progress`` asks for the level alone
(states at one level tie whatever rooms they reached): what a Go-Explore archive wants of its
level, as its cells and their counts already see where Link has been.
Exported states without a ``progress`` field (written before the env recorded it) fall back
to what the state itself holds: items, keys and the instrument.

A judge's accuracy over a batch is the share of pairs with a truth that it decided (answered
one way or the other) correctly. **The exclusion rule**: a judge measured on at least
``min_pairs`` such pairs whose Wilson 95% lower bound is not above 0.5 gets no vote; a judge
measured on fewer pairs keeps its vote, unmeasured (the batch cannot tell).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from koholint.game.ram import InventoryItem
from koholint.schemas.evaluator import JudgeAccuracy, StateFacts, StateQuestion

MIN_MEASURED_PAIRS = 50
"""Pairs with a truth a judge must have decided before the rule can take its vote away."""
Z_95 = 1.959964
ITEM_NAMES = {int(item): item.name.lower() for item in InventoryItem if item}


def state_facts(step: dict[str, Any]) -> StateFacts:
    """The progress facts of one exported step (``{"t": ..., "state": {...}}``)."""
    state = step["state"]
    items_mask = int(state["inventory"]["items"])
    items = [name for bit, name in ITEM_NAMES.items() if items_mask & (1 << bit)]
    keys, instrument = int(state["keys"]), bool(state["has_instrument"])
    won = state.get("mode") == "credits"
    level = state.get("progress")
    if level is None:  # older exports: what the state itself holds
        level = len(items) + keys + int(instrument)
    room = state["room"]
    return StateFacts(
        t=int(step["t"]), level=int(level) + int(won), rooms=int(state["rooms_visited"]),
        room=f"{int(bool(room['indoor']))}:{int(room['map'])}:{int(room['room'])}",
        items=items, keys=keys, health=int(state["health"]), has_instrument=instrument, won=won,
    )  # fmt: skip


def sample_states(steps: Sequence[dict[str, Any]], stride: int) -> list[StateFacts]:
    """Every `stride`-th step's state and the last one's."""
    if not steps:
        return []
    chosen = sorted({*range(stride - 1, len(steps), stride), len(steps) - 1})
    return [state_facts(steps[index]) for index in chosen]


def further_along(
    first: StateFacts, second: StateFacts, question: StateQuestion = "progress+rooms"
) -> int:
    """+1 when `first` is further along than `second`, -1 when `second` is, 0 for a tie."""
    if question == "progress":
        return (first.level > second.level) - (first.level < second.level)
    a, b = (first.level, first.rooms), (second.level, second.rooms)
    return (a > b) - (a < b)


def label_agreement(truth: Sequence[int], preferred: Sequence[int]) -> tuple[float, int]:
    """(the share of the ensemble's labels a ranking that follows the truth agrees with, the
    labels): over the pairs with a label (``preferred`` != 0), a label the truth confirms counts
    1 and a label on a tie of the truth 1/2 (the ranking's order of a tie is a coin to it)."""
    labelled = agreeing = 0.0
    for expected, label in zip(truth, preferred, strict=True):
        if label == 0:
            continue
        labelled += 1
        agreeing += 0.5 if expected == 0 else float(label == expected)
    return (agreeing / labelled if labelled else 0.0), int(labelled)


def denoised_accuracy(agreement: float, label_accuracy: float) -> float | None:
    """A ranking's accuracy against the truth estimated from its `agreement` with labels that
    agree with the truth with probability `label_accuracy` (errors independent of the
    ranking's): agreement = q·a + (1 − q)(1 − a), so q = (agreement − (1 − a)) / (2a − 1),
    clipped to [0, 1]. None when the labels are no better than chance (a <= 0.5)."""
    if label_accuracy <= 0.5:
        return None
    estimate = (agreement - (1.0 - label_accuracy)) / (2.0 * label_accuracy - 1.0)
    return min(1.0, max(0.0, estimate))


def wilson_lower_bound(correct: int, total: int, z: float = Z_95) -> float | None:
    """The lower end of the Wilson score interval of correct/total (None when total is 0)."""
    if total <= 0:
        return None
    share = correct / total
    centre = share + z * z / (2 * total)
    spread = z * math.sqrt(share * (1 - share) / total + z * z / (4 * total * total))
    return max(0.0, (centre - spread) / (1 + z * z / total))


def judge_accuracy(
    judge: str, truth: Sequence[int], votes: Sequence[int], *, min_pairs: int = MIN_MEASURED_PAIRS
) -> JudgeAccuracy:
    """How often `votes` agree with `truth` over the pairs with a truth the judge decided, and
    whether the exclusion rule leaves the judge its vote."""
    decided = correct = undecided = 0
    for expected, vote in zip(truth, votes, strict=True):
        if expected == 0:
            continue
        if vote == 0:
            undecided += 1
            continue
        decided += 1
        correct += vote == expected
    lower = wilson_lower_bound(correct, decided)
    measured = decided >= min_pairs
    return JudgeAccuracy(
        judge=judge, pairs=decided, correct=correct, undecided=undecided,
        accuracy=round(correct / decided, 6) if decided else None,
        lower_bound=None if lower is None else round(lower, 6), measured=measured,
        votes=not measured or (lower is not None and lower > 0.5),
    )  # fmt: skip

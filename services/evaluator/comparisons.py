"""State comparisons: which of two sampled states is further along, asked of the judges,
measured against the RAM ground truth, and voted.

For the records of one run in a batch, every state sampled in their segments
(``ScoreRecord.states``) is a candidate; the pairs are all pairs of them when there are at most
``max_pairs``, else a seeded sample of ``max_pairs`` distinct pairs, each in a seeded order
(so neither position is always the one further along). Each comparing judge
(``COMPARING_JUDGES``) answers every pair M times; its vote is the sign of the sum of its
answers (0: same, or no majority). Its accuracy over the pairs with a truth is then measured
(``koholint.reward.truth.judge_accuracy``), and the ensemble's vote on a pair is the order a
strict majority of the judges that keep their vote give it, "same" counting as a vote: with two
judges both must agree. Most sampled pairs are ties (same level, same rooms); a judge of
accuracy p orders a tie at random with probability 1 - p, and if one such answer against a
"same" made a label, early batches would hold little but coin flips (docs/evaluator.md,
"The comparisons' vote").
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass

import numpy as np

from evaluator.judges import COMPARING_JUDGES, JudgeBackend
from koholint.reward.truth import MIN_MEASURED_PAIRS, further_along, judge_accuracy
from koholint.schemas.evaluator import (
    JudgeAccuracy,
    ScoreRecord,
    StateComparisons,
    StateFacts,
    StateRef,
)

Submit = Callable[..., "Future[int] | int"]


@dataclass(frozen=True)
class ComparisonResult:
    comparisons: StateComparisons
    accuracy: list[JudgeAccuracy]

    @property
    def excluded(self) -> set[str]:
        """The judges the rule takes the vote from."""
        return {entry.judge for entry in self.accuracy if not entry.votes}


def plan_pairs(states: int, max_pairs: int, seed: int) -> list[tuple[int, int]]:
    """Distinct pairs of `states` indices: all of them up to `max_pairs`, else a seeded
    sample; each pair's order seeded too."""
    rng = np.random.default_rng(seed)
    total = states * (states - 1) // 2
    if total <= 2 * max_pairs:
        first, second = np.triu_indices(states, 1)
        chosen = rng.permutation(total)[:max_pairs]
        pairs = list(zip(first[chosen].tolist(), second[chosen].tolist(), strict=True))
    else:  # sparse: rejection sampling accepts at least half of the draws
        seen: set[tuple[int, int]] = set()
        while len(seen) < max_pairs:
            a, b = (int(v) for v in rng.integers(0, states, 2))
            if a != b:
                seen.add((min(a, b), max(a, b)))
        pairs = sorted(seen)
    swaps = rng.random(len(pairs)) < 0.5
    return [(b, a) if swap else (a, b) for (a, b), swap in zip(pairs, swaps, strict=True)]


def _sign(answers: Sequence[int]) -> int:
    total = sum(answers)
    return (total > 0) - (total < 0)


def ensemble_preference(votes: dict[str, int], voting: Sequence[str]) -> int:
    """The order a strict majority of the voting judges give (0, "same", is a vote too);
    0 when there is none."""
    cast = [votes.get(judge, 0) for judge in voting]
    for side in (1, -1):
        if 2 * cast.count(side) > len(cast):
            return side
    return 0


def compare_states(
    records: Sequence[ScoreRecord],
    judges: JudgeBackend,
    *,
    seeds: Sequence[int],
    max_pairs: int,
    seed: int,
    submit: Submit | None = None,
    min_pairs: int = MIN_MEASURED_PAIRS,
) -> ComparisonResult | None:
    """Compare the records' sampled states (one run); None when they have fewer than two.
    `submit(judge, fn, *args)` runs an answer elsewhere (a pool) and returns a future."""
    refs: list[StateRef] = []
    facts: list[StateFacts] = []
    for record in records:
        for state in record.states:
            refs.append(StateRef(prefix=record.prefix, t=state.t))
            facts.append(state)
    if len(facts) < 2 or max_pairs < 1:
        return None
    pairs = plan_pairs(len(facts), max_pairs, seed)
    truth = [further_along(facts[a], facts[b], judges.state_question) for a, b in pairs]
    asking = [judge for judge in COMPARING_JUDGES if judges.abstains(judge) is None]
    answers = {judge: _ask(judges, judge, facts, refs, pairs, seeds, submit) for judge in asking}
    votes = {
        judge: [_sign([a if isinstance(a, int) else a.result() for a in pair]) for pair in given]
        for judge, given in answers.items()
    }
    accuracy = [judge_accuracy(judge, truth, votes[judge], min_pairs=min_pairs) for judge in asking]
    voting = [entry.judge for entry in accuracy if entry.votes]
    preferred = [
        ensemble_preference({judge: votes[judge][index] for judge in asking}, voting)
        for index in range(len(pairs))
    ]
    document = StateComparisons(
        run=records[0].run, judge_config_hash=records[0].judge_config_hash, scores_key="",
        states=refs, pairs=pairs, truth=truth, votes=votes, preferred=preferred,
        judge_accuracy=accuracy, question=judges.state_question,
    )  # fmt: skip
    return ComparisonResult(document, accuracy)


def _ask(
    judges: JudgeBackend,
    judge: str,
    facts: list[StateFacts],
    refs: list[StateRef],
    pairs: list[tuple[int, int]],
    seeds: Sequence[int],
    submit: Submit | None,
) -> list[list[Future[int] | int]]:
    asked: list[list[Future[int] | int]] = []
    for a, b in pairs:
        question = f"{refs[a].prefix}@{refs[a].t}\x00{refs[b].prefix}@{refs[b].t}"
        if submit is None:
            asked.append([judges.compare(judge, facts[a], facts[b], s, question) for s in seeds])
        else:
            asked.append(
                [
                    submit(judge, judges.compare, judge, facts[a], facts[b], s, question)
                    for s in seeds
                ]
            )
    return asked

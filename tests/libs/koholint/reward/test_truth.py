"""The RAM ground truth and the rule that takes a judge's vote away."""

from __future__ import annotations

import numpy as np
import pytest

from koholint.reward.truth import (
    denoised_accuracy,
    further_along,
    judge_accuracy,
    label_agreement,
    sample_states,
    state_facts,
    wilson_lower_bound,
)


def step(t: int, *, progress: int | None, rooms: int, items: int = 0, keys: int = 0,
         mode: str = "world", instrument: bool = False) -> dict:  # fmt: skip
    state = {
        "room": {"indoor": False, "map": 0, "room": 3}, "inventory": {"items": items},
        "keys": keys, "has_instrument": instrument, "mode": mode, "rooms_visited": rooms,
        "health": 24,
    }  # fmt: skip
    if progress is not None:
        state["progress"] = progress
    return {"t": t, "state": state}


def test_a_higher_level_is_further_along_whatever_the_rooms_and_equal_states_tie():
    ahead = state_facts(step(1, progress=2, rooms=1))
    behind = state_facts(step(2, progress=1, rooms=9))
    assert (further_along(ahead, behind), further_along(behind, ahead)) == (1, -1)
    more_rooms = state_facts(step(3, progress=1, rooms=10))
    assert further_along(more_rooms, behind) == 1
    assert further_along(behind, state_facts(step(4, progress=1, rooms=9))) == 0


def test_asked_for_the_level_alone_states_at_one_level_tie_whatever_their_rooms():
    behind = state_facts(step(1, progress=1, rooms=9))
    more_rooms = state_facts(step(2, progress=1, rooms=30))
    ahead = state_facts(step(3, progress=2, rooms=1))
    assert further_along(more_rooms, behind, "progress") == 0
    assert further_along(more_rooms, behind, "progress+rooms") == 1
    assert (further_along(ahead, more_rooms, "progress"),
            further_along(more_rooms, ahead, "progress")) == (1, -1)  # fmt: skip


def test_the_credits_count_one_level_and_old_exports_fall_back_to_items_keys_instrument():
    won = state_facts(step(1, progress=7, rooms=5, mode="credits"))
    assert (won.level, won.won) == (8, True)
    old = state_facts(step(2, progress=None, rooms=5, items=1 << 1, keys=2, instrument=True))
    assert (old.level, old.items, old.keys) == (4, ["sword"], 2)


def test_states_are_sampled_every_kth_step_and_the_last():
    steps = [step(t, progress=0, rooms=1) for t in range(1, 41)]
    assert [s.t for s in sample_states(steps, 16)] == [16, 32, 40]
    assert [s.t for s in sample_states(steps[:3], 16)] == [3]


def test_wilson_bound_matches_the_textbook_value():
    assert wilson_lower_bound(81, 100) == pytest.approx(0.7222, abs=1e-4)
    assert wilson_lower_bound(0, 0) is None


def test_ties_in_the_truth_and_undecided_answers_are_left_out_of_the_accuracy():
    truth = [1, -1, 0, 0, 1, -1]
    votes = [1, 1, 1, -1, 0, -1]
    entry = judge_accuracy("state", truth, votes, min_pairs=1)
    assert (entry.pairs, entry.correct, entry.undecided) == (3, 2, 1)
    assert entry.accuracy == pytest.approx(2 / 3)


@pytest.mark.parametrize(
    ("correct", "pairs", "votes"),
    [(70, 100, True), (55, 100, False), (50, 100, False), (30, 100, False)],
)
def test_a_measured_judge_votes_only_when_its_lower_bound_is_above_chance(correct, pairs, votes):
    truth = [1] * pairs
    answers = [1] * correct + [-1] * (pairs - correct)
    entry = judge_accuracy("progress", truth, answers, min_pairs=50)
    assert entry.measured
    assert entry.votes is votes
    assert (entry.lower_bound > 0.5) is votes


def test_a_judge_answering_at_random_gets_no_vote_and_one_measured_on_too_few_keeps_it():
    rng = np.random.default_rng(3)
    truth = rng.choice([-1, 1], size=2000).tolist()
    random_votes = rng.choice([-1, 1], size=2000).tolist()
    assert not judge_accuracy("state", truth, random_votes).votes
    few = judge_accuracy("state", truth[:10], [-t for t in truth[:10]], min_pairs=50)
    assert (few.measured, few.votes, few.accuracy) == (False, True, 0.0)


def test_label_agreement_counts_a_label_on_a_tie_as_half_and_skips_the_unlabelled():
    truth = [1, -1, 1, 0, 0, 1]
    preferred = [1, 1, 1, 1, 0, 0]  # right, wrong, right, a tie labelled, unlabelled x2
    assert label_agreement(truth, preferred) == (pytest.approx(2.5 / 4), 4)
    assert label_agreement([], []) == (0.0, 0)


@pytest.mark.parametrize(("q", "a"), [(0.95, 0.65), (0.8, 0.9), (1.0, 1.0), (0.6, 0.75)])
def test_denoised_accuracy_inverts_agreement_with_labels_of_known_error(q, a):
    agreement = q * a + (1 - q) * (1 - a)
    assert denoised_accuracy(agreement, a) == pytest.approx(q)


def test_denoised_accuracy_is_clipped_and_undefined_for_labels_at_chance():
    assert denoised_accuracy(0.1, 0.8) == 0.0
    assert denoised_accuracy(0.99, 0.6) == 1.0
    assert denoised_accuracy(0.7, 0.5) is None

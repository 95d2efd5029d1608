"""The vote (majority, median, ties, abstentions), Fleiss' kappa, and the rules judges."""

from __future__ import annotations

import pytest

from evaluator.judges import (
    compare_messages,
    ensemble_vote,
    fleiss_kappa,
    judge_vote,
    majority,
    rules_progress_verdict,
    rules_state_verdict,
)
from koholint.schemas.evaluator import SampleAnswer, SegmentFacts, StateFacts, Verdict


def sample(
    seed: int, score: int | None, label: str = "exploring", outcome: str = "valid"
) -> SampleAnswer:
    if score is None:
        return SampleAnswer(seed=seed, outcome=outcome, error=f"{outcome} answer", latency_ms=1.0)
    verdict = Verdict(score=score, label=label, events=[], rationale="r")
    return SampleAnswer(seed=seed, outcome=outcome, verdict=verdict, latency_ms=1.0)


def facts(**changes: object) -> SegmentFacts:
    base = {
        "steps": 100, "rooms_entered": 0, "new_rooms": 0, "distinct_rooms": 1, "revisits": 0, "items_gained": [],
        "keys_delta": 0, "health_start": 24, "health_end": 24, "health_lost": 0, "kills": 0, "deaths": 0,
        "dialogs_opened": 0, "choices_shown": 0, "rupees_delta": 0, "instrument_taken": False, "won": False,
        "tiles_moved": 40, "reward_total": 0.0,
    }  # fmt: skip
    return SegmentFacts(**{**base, **changes})


def test_majority_breaks_ties_by_first_answer():
    assert majority(["stuck", "progress", "progress"]) == "progress"
    assert majority(["stuck", "progress"]) == "stuck"
    assert majority(["dying", "stuck", "stuck", "dying"]) == "dying"


def test_judge_vote_is_majority_label_and_median_score_of_valid_answers():
    samples = [
        sample(0, 2, "stuck"), sample(1, 7, "progress"), sample(2, None, outcome="rejected"),
        sample(3, 9, "progress"), sample(4, 8, "progress"),
    ]  # fmt: skip
    result = judge_vote("state", "m", samples)
    assert (result.label, result.score, result.abstained) == ("progress", 7.5, False)
    assert len(result.samples) == 5  # every answer is kept, the rejected one too


def test_single_sample_vote():
    result = judge_vote("progress", "m", [sample(0, 3, "backtracking")])
    assert (result.label, result.score) == ("backtracking", 3.0)


def test_judge_whose_answers_were_all_rejected_abstains_and_says_why():
    result = judge_vote("state", "m", [sample(s, None, outcome="rejected") for s in range(3)])
    assert result.abstained
    assert result.abstain_reason == "rejected"
    assert result.label is None
    assert result.score is None
    assert "rejected answer" in (result.abstain_detail or "")


def test_judge_that_could_not_be_reached_abstains_as_unavailable():
    samples = [sample(0, None, outcome="rejected"), sample(1, None, outcome="unavailable")]
    assert judge_vote("vision", "m", samples).abstain_reason == "unavailable"


def test_ensemble_ties_go_to_the_judge_of_most_authority():
    state = judge_vote("state", "m", [sample(0, 2, "stuck")])
    progress = judge_vote("progress", "m", [sample(0, 6, "progress")])
    vision = judge_vote("vision", "m", [sample(0, 4, "exploring")])
    assert ensemble_vote([vision, state, progress]) == ("progress", 4.0)
    assert ensemble_vote([vision, state]) == ("stuck", 3.0)  # state outranks vision
    agree = judge_vote("vision", "m", [sample(0, 1, "stuck")])
    assert ensemble_vote([agree, state, progress])[0] == "stuck"  # 2 votes beat authority


def test_ensemble_of_abstaining_judges_has_no_label():
    none = judge_vote("state", "m", [sample(0, None, outcome="rejected")])
    assert ensemble_vote([none]) == (None, None)


def test_fleiss_kappa_known_values():
    assert fleiss_kappa([["a", "a"], ["b", "b"], ["a", "a"]]) == 1.0
    assert fleiss_kappa([["a", "a", "a"]]) == 1.0  # one label everywhere
    assert fleiss_kappa([["a", "b"], ["b", "a"]]) == pytest.approx(-1.0)
    # Fleiss (1971)-style small table: 4 items, 3 raters.
    kappa = fleiss_kappa([["a", "a", "b"], ["a", "a", "a"], ["b", "b", "a"], ["b", "b", "b"]])
    assert kappa == pytest.approx((2 / 3 - 0.5) / 0.5, abs=1e-4)
    assert fleiss_kappa([["a"], []]) is None  # no item with two raters


def test_rules_judges_read_the_facts():
    assert rules_state_verdict(facts(deaths=1, health_end=0)).label == "dying"
    sword = rules_progress_verdict(facts(items_gained=["sword"]))
    assert (sword.label, sword.score) == ("progress", 4)
    assert rules_state_verdict(facts(tiles_moved=0)).label == "stuck"
    assert rules_state_verdict(facts(tiles_moved=0)).score <= 1
    assert rules_state_verdict(facts(rooms_entered=2, revisits=2)).label == "backtracking"
    assert rules_state_verdict(facts(new_rooms=2, rooms_entered=2)).label == "exploring"
    assert rules_progress_verdict(facts(won=True)).score == 10
    assert rules_state_verdict(facts()) == rules_state_verdict(facts())  # deterministic


def test_a_text_judge_asked_for_the_level_alone_is_not_shown_the_rooms():
    state = StateFacts(t=1, level=1, rooms=17, room="0:0:3", items=["sword"], keys=0, health=24,
                       has_instrument=False, won=False)  # fmt: skip
    with_rooms = compare_messages(state, state)[1]["content"]
    level_only = compare_messages(state, state, "progress")[1]["content"]
    assert "rooms visited so far: 17" in with_rooms
    assert "rooms visited" not in level_only
    assert "items: sword" in level_only

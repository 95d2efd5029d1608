"""State pairs from the judges' comparisons, the ensemble of R_phi, and the card that says how
good it is against the judges and against the RAM ground truth."""

from __future__ import annotations

import numpy as np
import pytest
from reward_synthetic import export_synthetic, scores_event, synthetic_segments

from koholint.reward.model import RewardFunction, load_version, merge_ensemble
from koholint.schemas.evaluator import JudgeAccuracy, StateComparisons, StateRef
from koholint.store import LocalStore
from reward_model.config import Settings
from reward_model.service import RewardModelService

PROGRESS_SLOT = 5


def progress_of(observation: np.ndarray) -> float:
    """The synthetic game's progress: one slot of the observation (a level, 0-3)."""
    return float(np.round(1.5 * (observation[PROGRESS_SLOT] + 1)))


def export_with_progress(store: LocalStore, count: int):
    segments = synthetic_segments(count, steps=32, seed=4)
    prefixes = export_synthetic(store, segments)
    return segments, prefixes


def comparisons_document(segments, prefixes, *, accuracy: float, pairs: int, seed: int = 0):
    """What the evaluator writes: every 4th state, pairs compared by a judge right with
    probability `accuracy` (against the progress slot), the ensemble following it."""
    rng = np.random.default_rng(seed)
    refs, levels = [], []
    for segment, prefix in zip(segments, prefixes, strict=True):
        for row in range(3, len(segment.observations), 4):
            refs.append(StateRef(prefix=prefix, t=row + 1))
            levels.append(progress_of(segment.observations[row]) * 100 + row)
    chosen, truth, votes = [], [], []
    while len(chosen) < pairs:
        a, b = (int(v) for v in rng.integers(0, len(refs), 2))
        if a == b:
            continue
        order = int(np.sign(levels[a] - levels[b]))
        chosen.append((a, b))
        truth.append(order)
        votes.append(order if rng.random() < accuracy else -order)
    correct = sum(v == t for v, t in zip(votes, truth, strict=True) if t)
    decided = sum(1 for t in truth if t)
    entry = JudgeAccuracy(judge="progress", pairs=decided, correct=correct,
                          accuracy=correct / decided, lower_bound=None, measured=True, votes=True)  # fmt: skip
    return StateComparisons(
        run="syn", judge_config_hash="h", scores_key="scores/syn/batches/0.jsonl", states=refs,
        pairs=chosen, truth=truth, votes={"progress": votes}, preferred=votes,
        judge_accuracy=[entry],
    )  # fmt: skip


def test_merged_ensemble_is_the_mean_of_its_members():
    rng = np.random.default_rng(0)

    def member(seed: int) -> RewardFunction:
        r = np.random.default_rng(seed)
        sizes = [128, 16, 8, 1]
        return RewardFunction(tuple(
            (r.normal(size=(i, o)).astype(np.float32), r.normal(size=o).astype(np.float32))
            for i, o in zip(sizes[:-1], sizes[1:], strict=True)
        ))  # fmt: skip

    members = [member(seed) for seed in range(3)]
    merged = merge_ensemble(members)
    observations = rng.uniform(-1, 1, size=(50, 128)).astype(np.float32)
    expected = np.mean([m(observations) for m in members], axis=0)
    np.testing.assert_allclose(merged(observations), expected, rtol=1e-4, atol=1e-4)
    assert [w.shape for w, _ in merged.layers] == [(128, 48), (48, 24), (24, 1)]


def test_state_pairs_train_an_ensemble_whose_card_reports_judges_truth_and_disagreement(tmp_path):
    store = LocalStore(tmp_path / "store")
    segments, prefixes = export_with_progress(store, 40)
    document = comparisons_document(segments, prefixes, accuracy=0.85, pairs=24_000)
    store.put("scores/syn/comparisons/0.json", document.model_dump_json().encode())
    service = RewardModelService(
        Settings(store_url=str(tmp_path / "store"), accuracy_floor=0.6, max_steps=300), store
    )
    event = scores_event("syn", prefixes, segments)
    event["comparisons_key"] = "scores/syn/comparisons/0.json"
    assert service.add_event(event) == 40
    status = service.train()
    assert status.state == "published", status.detail
    card = service.latest().card
    assert card.schema_version == 2
    assert (card.pair_kind, card.ensemble_size, card.hidden_sizes) == ("states", 3, [192, 192])
    assert card.pairs + card.heldout_pairs >= 20_000
    assert card.states == 40 * 8
    assert card.segments == 40
    # the judge is right 85% of the time: R_phi agrees with it less than with the truth
    assert card.heldout_truth_accuracy > 0.9
    assert card.heldout_truth_accuracy > card.heldout_accuracy > 0.75
    assert card.heldout_truth_pairs > 1000
    assert len(card.member_heldout_accuracy) == 3
    assert 0 < card.disagreement < 1
    assert 0.5 < card.member_agreement <= 1
    (judge,) = card.judge_accuracy
    assert judge.accuracy == pytest.approx(0.85, abs=0.02)
    assert judge.votes
    loaded = load_version(store, card.version)  # the trainer's loader, unchanged
    states = np.stack([s.observations[0] for s in segments])
    ranks = loaded.function.normalised(states)
    levels = np.array([progress_of(row) for row in states])
    assert np.corrcoef(ranks, levels)[0, 1] > 0.8
    gauge = service.metrics.registry.get_sample_value
    assert gauge("reward_model_judge_accuracy", {"judge": "progress"}) == pytest.approx(
        0.85, abs=0.02
    )
    assert gauge("reward_model_heldout_truth_accuracy") == card.heldout_truth_accuracy
    assert gauge("reward_model_disagreement") == card.disagreement


def test_without_comparisons_the_segments_pairs_are_used_as_before(tmp_path):
    store = LocalStore(tmp_path / "store")
    segments, prefixes = export_with_progress(store, 30)
    service = RewardModelService(
        Settings(store_url=str(tmp_path / "store"), accuracy_floor=0.5, ensemble_size=1), store
    )
    assert service.add_event(scores_event("syn", prefixes, segments)) == 30
    status = service.train()
    assert status.state == "published", status.detail
    card = service.latest().card
    assert (card.pair_kind, card.ensemble_size, card.states) == ("segments", 1, 0)
    assert card.heldout_truth_accuracy is None


def test_comparisons_that_decide_nothing_leave_the_segments_pairs(tmp_path):
    """A short run where no state is further along than another: every comparison is a tie,
    and the segments' own scores still make the preferences."""
    store = LocalStore(tmp_path / "store")
    segments, prefixes = export_with_progress(store, 30)
    document = comparisons_document(segments, prefixes, accuracy=1.0, pairs=200)
    ties = document.model_copy(update={"preferred": [0] * len(document.preferred)})
    store.put("scores/syn/comparisons/0.json", ties.model_dump_json().encode())
    service = RewardModelService(
        Settings(store_url=str(tmp_path / "store"), accuracy_floor=0.5, ensemble_size=1), store
    )
    event = scores_event("syn", prefixes, segments)
    event["comparisons_key"] = "scores/syn/comparisons/0.json"
    assert service.add_event(event) == 30
    status = service.train()
    assert status.state == "published", status.detail
    assert service.latest().card.pair_kind == "segments"


def test_a_version_one_card_is_still_read(tmp_path):
    import json

    store = LocalStore(tmp_path / "store")
    segments, prefixes = export_with_progress(store, 30)
    service = RewardModelService(
        Settings(store_url=str(tmp_path / "store"), accuracy_floor=0.5, ensemble_size=1), store
    )
    service.add_event(scores_event("syn", prefixes, segments))
    version = service.train().version
    key = f"reward-models/{version}/model.json"
    card = json.loads(store.get(key))
    old = {name: card[name] for name in (
        "version", "created_at", "encoder_version", "observation_size", "hidden_sizes",
        "reduction", "output_mean", "output_std", "pairs", "heldout_pairs", "heldout_accuracy",
        "segments", "epochs", "seed", "weights_sha256", "source_scores",
    )}  # fmt: skip
    store.put(key, json.dumps({"schema_version": 1, **old}).encode())
    loaded = load_version(store, version)
    assert (loaded.card.schema_version, loaded.card.ensemble_size) == (1, 1)


def test_the_denoised_floor_reads_r_phi_through_the_labels_measured_error(tmp_path):
    """Labels right 65% of the time cap R_phi's agreement with them near 0.65 however well it
    ranks: the plain floor at 0.66 refuses it; corrected for the labels' measured error, the
    same fit (~0.8 against the truth) clears it."""
    store = LocalStore(tmp_path / "store")
    segments, prefixes = export_with_progress(store, 40)
    document = comparisons_document(segments, prefixes, accuracy=0.65, pairs=24_000, seed=3)
    store.put("scores/syn/comparisons/0.json", document.model_dump_json().encode())
    event = scores_event("syn", prefixes, segments)
    event["comparisons_key"] = "scores/syn/comparisons/0.json"
    statuses = {}
    for denoised in (False, True):
        settings = Settings(store_url=str(tmp_path / "store"), accuracy_floor=0.66,
                            max_steps=300, ensemble_size=1, denoised_floor=denoised)  # fmt: skip
        service = RewardModelService(settings, store)
        service.add_event(event)
        statuses[denoised] = service.train()
    plain, corrected = statuses[False], statuses[True]
    assert plain.state == "refused"
    assert "does not beat the floor 0.66" in plain.detail
    assert plain.denoised_accuracy is None
    assert 0.55 < plain.heldout_accuracy < 0.66
    assert corrected.state == "published", corrected.detail
    assert corrected.heldout_accuracy < 0.66 < corrected.denoised_accuracy
    card = load_version(store, corrected.version).card
    assert card.heldout_truth_accuracy == pytest.approx(corrected.denoised_accuracy, abs=0.1)


def level_only_document(segments, prefixes, *, pairs: int, seed: int = 0):
    """Judges asked for the level alone (right every time): states at one level tie, and both
    judges say so."""
    rng = np.random.default_rng(seed)
    refs, levels = [], []
    for segment, prefix in zip(segments, prefixes, strict=True):
        for row in range(3, len(segment.observations), 4):
            refs.append(StateRef(prefix=prefix, t=row + 1))
            levels.append(progress_of(segment.observations[row]))
    chosen = [tuple(int(v) for v in rng.choice(len(refs), 2, replace=False)) for _ in range(pairs)]
    truth = [int(np.sign(levels[a] - levels[b])) for a, b in chosen]
    decided = sum(1 for t in truth if t)
    entries = [JudgeAccuracy(judge=judge, pairs=decided, correct=decided, accuracy=1.0,
                             lower_bound=None, measured=True, votes=True)
               for judge in ("progress", "state")]  # fmt: skip
    document = StateComparisons(
        run="syn", judge_config_hash="h", scores_key="scores/syn/batches/0.jsonl", states=refs,
        pairs=chosen, truth=truth, votes={"progress": truth, "state": truth}, preferred=truth,
        judge_accuracy=entries, question="progress",
    )  # fmt: skip
    return document, refs, levels


def test_tie_pairs_pull_the_states_of_one_level_to_one_r_phi(tmp_path):
    store = LocalStore(tmp_path / "store")
    segments, prefixes = export_with_progress(store, 40)
    document, _, _ = level_only_document(segments, prefixes, pairs=6000, seed=2)
    store.put("scores/syn/comparisons/0.json", document.model_dump_json().encode())
    event = scores_event("syn", prefixes, segments)
    event["comparisons_key"] = "scores/syn/comparisons/0.json"
    states = np.stack([row for s in segments for row in s.observations[3::4]])
    levels = np.array([progress_of(row) for row in states])
    spread = {}
    for weight in (0.0, 1.0):
        settings = Settings(store_url=str(tmp_path / "store"), max_steps=300, ensemble_size=1,
                            tie_weight=weight, seed=5)  # fmt: skip
        service = RewardModelService(settings, store)
        service.add_event(event)
        items, pairs, ties = service.preferences(settings.seed)
        assert (len(ties) > 0) is (weight > 0)
        assert len(ties) <= len(pairs)
        tied_levels = {(progress_of(items[a].observations[0]), progress_of(items[b].observations[0]))
                       for a, b in ties}  # fmt: skip
        assert all(first == second for first, second in tied_levels)
        status = service.train()
        assert status.state == "published", status.detail
        assert ("tie pairs" in status.detail) is (weight > 0)
        values = load_version(store, status.version).function.normalised(states)
        within = np.mean([values[levels == level].std() for level in np.unique(levels)])
        spread[weight] = within
    assert spread[1.0] < 0.75 * spread[0.0], spread

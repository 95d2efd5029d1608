"""Synthetic scored segments whose true reward is known: a fixed linear function of the
observation, averaged over the segment's steps, mapped to the judges' 0-10 scale."""

from __future__ import annotations

import numpy as np

from reward_model.preferences import ScoredSegment

# A few slots matter, as in the game (rooms, items, keys, health), the rest is distraction.
TRUE_WEIGHTS = np.zeros(128, np.float32)
TRUE_WEIGHTS[np.random.default_rng(1234).choice(128, 8, replace=False)] = np.random.default_rng(
    5
).normal(size=8)


def true_segment_reward(observations: np.ndarray) -> float:
    return float((observations @ TRUE_WEIGHTS).mean())


def synthetic_segments(
    count: int, *, steps: int = 24, seed: int = 0, starts: int = 3
) -> list[ScoredSegment]:
    rng = np.random.default_rng(seed)
    segments = []
    for index in range(count):
        centre = rng.uniform(-1, 1, size=128)
        observations = np.clip(centre + rng.normal(0, 0.3, size=(steps, 128)), -1, 1).astype(
            np.float32
        )
        segments.append(ScoredSegment(f"episodes/syn/e/{index:05d}", f"key-{index}", 0.0,
                                      f"0:0:{index % starts}", observations))  # fmt: skip
    truth = np.array([true_segment_reward(s.observations) for s in segments])
    scores = 10 * (truth - truth.min()) / (truth.max() - truth.min())
    return [
        ScoredSegment(s.prefix, s.record_key, float(score), s.start, s.observations)
        for s, score in zip(segments, scores, strict=True)
    ]


def export_synthetic(store, segments: list[ScoredSegment], run: str = "syn") -> list[str]:
    """Write the segments with the real export writer (manifest, ram.jsonl with observations);
    returns their prefixes."""
    from koholint.env.export import Segment, write_segment

    prefixes = []
    for index, scored in enumerate(segments):
        room = int(scored.start.rsplit(":", 1)[1])
        steps = [
            {"t": t + 1, "action": 0, "reward": 0.0, "reward_components": {},
             "observation": row.tolist(), "state": {"room": {"indoor": False, "map": 0, "room": room}}}
            for t, row in enumerate(scored.observations)
        ]  # fmt: skip
        segment = Segment(run, f"e{index:04d}", 0, steps=steps)
        write_segment(store, segment)
        prefixes.append(segment.prefix)
    return prefixes


def scores_event(run: str, prefixes: list[str], segments: list[ScoredSegment]) -> dict:
    """A koholint.scores message as the evaluator sends it."""
    from koholint.schemas.evaluator import ScoredSegment as EventRecord
    from koholint.schemas.evaluator import ScoresEvent

    records = [
        EventRecord(prefix=prefix, record_key=f"rk-{prefix}", label="progress", score=s.score)
        for prefix, s in zip(prefixes, segments, strict=True)
    ]
    return ScoresEvent(run=run, scores_key=f"scores/{run}/batches/0.jsonl", judge_config_hash="h",
                       backend="rules", records=records).model_dump(mode="json")  # fmt: skip

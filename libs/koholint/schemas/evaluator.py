"""The evaluator's wire contracts: a judge's verdict, the score record, the ``koholint.scores`` event.

A score record is one line of a JSONL batch file under ``scores/<run>/batches/`` in the object
store (never rewritten); the event on ``koholint.scores`` names the batch file and the records
in it. The reward model reads these: field names are stable, changes bump
``SCORE_SCHEMA_VERSION`` (readers take every version listed in ``SCORE_SCHEMA_VERSIONS``).
Version 2 adds the states sampled in each segment with their RAM progress, each judge's
accuracy against that ground truth, and the batch's state comparisons (``StateComparisons``,
a file next to the batch file). The JSON Schema is checked in (``schemas/score_record.schema.json``,
regenerate with ``koholint schemas export``).

    record = ScoreRecord.model_validate_json(line)
    event = ScoresEvent.model_validate(message.payload)
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Annotated, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

SCORE_SCHEMA_VERSION: Literal[2] = 2
SCORE_SCHEMA_VERSIONS = (1, 2)
"""Score records and events readers accept: 1 has no states, accuracies or comparisons."""
COMPARISONS_SCHEMA_VERSION: Literal[1] = 1
JUDGE_BACKENDS = ("rules", "noisy", "local", "llm-d")
"""The evaluator's backends: ``noisy`` is the rules' ground truth answered right with a set
probability, a judge of known quality."""
JudgeBackendName = Literal["rules", "noisy", "local", "llm-d"]
LABELS = ("progress", "exploring", "stuck", "backtracking", "dying")
"""What a segment was, as a judge sees it; a closed set."""
Label = Literal["progress", "exploring", "stuck", "backtracking", "dying"]
JUDGES = ("progress", "state", "vision")
"""The judges, in order of authority: a tie between judges' labels goes to the first of them."""
JudgeName = Literal["vision", "state", "progress"]
JUDGE_ROUTES: dict[str, str] = {"vision": "vision", "state": "state", "progress": "puzzle"}
"""The gateway route each judge asks (the progress judge is the big reasoning model)."""
SampleOutcome = Literal["valid", "repaired", "rejected", "unavailable", "circuit_open"]
AbstainReason = Literal["rejected", "unavailable", "no_vision", "not_configured"]
MAX_EVENTS = 8
MAX_EVENT_CHARS = 60
MAX_RATIONALE_CHARS = 200
MAX_RECORDS_PER_EVENT = 256
NAME_PATTERN = r"[A-Za-z0-9][A-Za-z0-9._\-]{0,127}"
"""A run or episode name: no leading dot, so never '..'."""
RUN_PATTERN = rf"^{NAME_PATTERN}$"
SEGMENT_PREFIX_PATTERN = rf"^episodes/({NAME_PATTERN})/({NAME_PATTERN})/(\d{{1,9}})$"
"""episodes/<run>/<episode>/<segment>, as the trainer's export writes them."""
MAX_PREFIXES_PER_REQUEST = 256
MAX_FAILURES_SHOWN = 50


StateQuestion = Literal["progress+rooms", "progress"]
"""What makes one compared state further along (``koholint.reward.truth``): its progress
level, rooms reached breaking ties, or the level alone."""
STATE_QUESTIONS: tuple[StateQuestion, ...] = get_args(StateQuestion)


class _Model(BaseModel):
    # NaN and inf have no JSON spelling: stored, they would come back as null and fail to read.
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class Verdict(_Model):
    """What one judge answers about one segment (sent as the `response_format` json_schema)."""

    score: int = Field(ge=0, le=10, description="how good the segment was, 0 (worst) to 10")
    label: Label = Field(description="what the segment was")
    # Bounded lengths also bound what a grammar-constrained model may generate.
    events: list[Annotated[str, StringConstraints(max_length=MAX_EVENT_CHARS)]] = Field(
        max_length=MAX_EVENTS, description="what the judge saw happen, a few words each"
    )
    rationale: str = Field(max_length=MAX_RATIONALE_CHARS, description="one line: why this score")


class SampleAnswer(_Model):
    """One of a judge's M answers, asked with its own seed."""

    seed: int
    outcome: SampleOutcome
    verdict: Verdict | None = Field(None, description="set when the outcome is valid or repaired")
    error: str | None = Field(None, max_length=1000, description="why there is no verdict")
    latency_ms: float = Field(ge=0)
    attempts: int = Field(0, ge=0, description="HTTP attempts (0 for the rules backend)")


class JudgeResult(_Model):
    """A judge's vote: the majority label and the median score of its valid answers."""

    judge: JudgeName
    route: str
    model: str = Field(description="the model behind the route, or 'rules' for the rules backend")
    samples: list[SampleAnswer]
    label: Label | None = Field(None, description="majority label; None when it abstained")
    score: float | None = Field(None, ge=0, le=10, description="median score of valid answers")
    abstained: bool
    abstain_reason: AbstainReason | None = None
    abstain_detail: str | None = Field(None, max_length=1000)


class Abstention(_Model):
    judge: JudgeName
    reason: AbstainReason
    detail: str = Field(max_length=1000)


class SegmentFacts(_Model):
    """The RAM trajectory of a segment condensed: what the text judges are told."""

    steps: int = Field(ge=0)
    first_step: int | None = None
    rooms_entered: int = Field(ge=0, description="room changes within the segment")
    new_rooms: int = Field(ge=0, description="rooms_visited gained (never seen before)")
    distinct_rooms: int = Field(ge=0)
    revisits: int = Field(ge=0, description="entries into a room already seen in this segment")
    items_gained: list[str]
    keys_delta: int
    health_start: int = Field(ge=0)
    health_end: int = Field(ge=0)
    health_lost: int = Field(ge=0)
    kills: int = Field(ge=0)
    deaths: int = Field(ge=0)
    dialogs_opened: int = Field(ge=0)
    choices_shown: int = Field(ge=0)
    rupees_delta: int
    instrument_taken: bool
    won: bool = Field(description="the credits were reached")
    tiles_moved: int = Field(ge=0, description="steps on which Link's tile changed")
    reward_total: float


class StateFacts(_Model):
    """One state sampled in a segment (every k-th step and the last) with its progress read
    from RAM: what the judges compare and the ground truth their accuracy is measured on."""

    t: int = Field(ge=0, description="the step's t in ram.jsonl (its observation's step)")
    level: int = Field(
        ge=0, description="progress level: items, puzzles, keys, doors, instrument (+1 won)"
    )
    rooms: int = Field(ge=0, description="rooms visited (the room tables' visited bits)")
    room: str = Field(description="indoor:map:room")
    items: list[str] = Field(description="items held")
    keys: int = Field(ge=0)
    health: int = Field(ge=0)
    has_instrument: bool
    won: bool


class JudgeAccuracy(_Model):
    """A judge's agreement with the RAM ground truth over a batch's state comparisons."""

    judge: JudgeName
    pairs: int = Field(ge=0, description="compared pairs with a truth (ties excluded) it decided")
    correct: int = Field(ge=0)
    undecided: int = Field(0, ge=0, description="pairs with a truth it answered 'same' or not")
    accuracy: float | None = Field(None, ge=0, le=1, description="correct / pairs")
    lower_bound: float | None = Field(
        None, ge=0, le=1, description="Wilson 95% lower bound of the accuracy"
    )
    measured: bool = Field(description="pairs >= the rule's minimum")
    votes: bool = Field(description="false: measured and not better than chance, no vote")


class Timings(_Model):
    load_ms: float = Field(ge=0, description="manifest, re-hash and RAM facts")
    judges_ms: float = Field(ge=0, description="wall time of all judges' answers")
    total_ms: float = Field(ge=0)


class ScoreRecord(_Model):
    """The ensemble's score of one exported segment, with every judge's and sample's answer."""

    schema_version: Literal[1, 2] = SCORE_SCHEMA_VERSION
    record_key: str = Field(description="sha256 of prefix + judge_config_hash: one record per key")
    prefix: str = Field(description="episodes/<run>/<episode>/<segment>")
    run: str
    episode: str
    segment: int = Field(ge=0)
    manifest_sha256: str
    backend: JudgeBackendName
    judge_config_hash: str = Field(description="backend, models, prompts, M, seeds")
    prompt_hash: str = Field(description="sha256 of the judges' prompt templates")
    models: dict[str, str] = Field(description="judge -> model name")
    samples_per_judge: int = Field(ge=1)
    seeds: list[int] = Field(description="the seeds each judge was asked with, in order")
    label: Label | None = Field(None, description="majority across judges; None if all abstained")
    score: float | None = Field(None, ge=0, le=10, description="mean of the judges' scores")
    judges: list[JudgeResult]
    abstentions: list[Abstention]
    facts: SegmentFacts
    timings: Timings
    scored_at: float = Field(description="unix time")
    states: list[StateFacts] = Field(
        default_factory=list, description="states sampled every k-th step and the last"
    )
    judge_accuracy: list[JudgeAccuracy] = Field(
        default_factory=list, description="each judge's accuracy over the batch's comparisons"
    )
    comparisons_key: str | None = Field(None, description="the batch's StateComparisons file")


class ScoredSegment(_Model):
    prefix: str
    record_key: str
    label: Label | None
    score: float | None = Field(ge=0, le=10, description="the record's score; None: unscored")


class ScoresEvent(_Model):
    """The ``koholint.scores`` message: a batch file was written; its records' keys."""

    schema_version: Literal[1, 2] = SCORE_SCHEMA_VERSION
    run: str
    scores_key: str = Field(description="the JSONL batch file in the object store")
    judge_config_hash: str
    backend: str
    records: list[ScoredSegment] = Field(max_length=MAX_RECORDS_PER_EVENT)
    kappa: float | None = Field(
        None, description="Fleiss' kappa of the judges' labels in the batch"
    )
    judge_accuracy: list[JudgeAccuracy] = Field(
        default_factory=list, description="each judge's accuracy against the RAM ground truth"
    )
    comparisons_key: str | None = Field(None, description="the batch's StateComparisons file")


class StateRef(_Model):
    prefix: str
    t: int = Field(ge=0)


class StateComparisons(_Model):
    """``scores/<run>/comparisons/<batch>.json``: which of two sampled states is further
    along, per judge, by the ensemble and by the RAM ground truth. Votes and truth are +1
    (the first state of the pair is further along), -1 (the second) or 0 (same / no answer)."""

    schema_version: Literal[1] = COMPARISONS_SCHEMA_VERSION
    run: str
    judge_config_hash: str
    scores_key: str = Field(description="the batch file of the segments' records")
    states: list[StateRef]
    pairs: list[tuple[int, int]] = Field(description="indices into states")
    truth: list[int] = Field(description="the RAM ground truth of each pair")
    votes: dict[str, list[int]] = Field(description="judge -> its vote on each pair")
    preferred: list[int] = Field(description="the ensemble's vote on each pair")
    judge_accuracy: list[JudgeAccuracy]
    question: StateQuestion = Field(
        "progress+rooms", description="what made one state further along (koholint.reward.truth)"
    )


SegmentPrefix = Annotated[str, StringConstraints(pattern=SEGMENT_PREFIX_PATTERN, max_length=400)]


class EvaluatePrefixes(_Model):
    """``POST /v1/evaluations`` for given segments."""

    prefixes: list[SegmentPrefix] = Field(
        min_length=1, max_length=MAX_PREFIXES_PER_REQUEST,
        description="segment prefixes, episodes/<run>/<episode>/<segment>",
    )  # fmt: skip


class EvaluateRun(_Model):
    """``POST /v1/evaluations`` for every stored segment of a run."""

    run: str = Field(pattern=RUN_PATTERN, description="the run whose segments to score")


EvaluationRequest = EvaluatePrefixes | EvaluateRun
"""Exactly one of `prefixes` or `run` (each model forbids the other's field)."""


class SegmentFailure(BaseModel):
    prefix: str
    outcome: Literal["rejected", "deferred"]
    reason: str


class EvaluationStatus(BaseModel):
    """An evaluation job: what it was asked and how each segment ended."""

    id: str
    state: Literal["queued", "running", "succeeded", "failed"]
    run: str | None = None
    total: int = Field(0, description="segments to score")
    scored: int = 0
    already_scored: int = 0
    rejected: int = 0
    deferred: int = 0
    kappa: float | None = Field(None, description="Fleiss' kappa of the last batch")
    scores_keys: list[str] = Field(default_factory=list)
    failures: list[SegmentFailure] = Field(
        default_factory=list, description=f"the first {MAX_FAILURES_SHOWN}"
    )
    error: str | None = None
    started_at: float
    finished_at: float | None = None


def schema_files() -> list[tuple[Path, str]]:
    """(checked-in path, current text) of the ScoreRecord and ScoresEvent JSON Schemas."""
    folder = Path(str(resources.files("koholint") / "schemas"))
    return [
        (folder / "score_record.schema.json", _schema_text(ScoreRecord)),
        (folder / "scores_event.schema.json", _schema_text(ScoresEvent)),
    ]


def _schema_text(model: type[BaseModel]) -> str:
    return json.dumps(model.model_json_schema(), indent=2, sort_keys=True) + "\n"

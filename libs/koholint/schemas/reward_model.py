"""The reward model's wire contracts: a stored version's card, the ``koholint.reward-models``
event, and the service's request and response bodies (API v1).

A version lives under ``reward-models/<version>/`` in the object store: ``weights.npz`` (the
MLP's layers, numpy) and ``model.json`` (a ``RewardModelCard``: the encoder version it was
trained on, the pairs, the held-out accuracy, the sha256 of the weights). The newest published
version is named by ``reward-models/latest.json`` (a ``LatestPointer``).
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from koholint.schemas.evaluator import JudgeAccuracy

REWARD_MODEL_SCHEMA_VERSION: Literal[1] = 1
"""The latest pointer's and the stream event's version."""
CARD_SCHEMA_VERSION: Literal[2] = 2
CARD_SCHEMA_VERSIONS = (1, 2)
"""Cards a reader accepts: 2 adds the state pairs, the ensemble of R_phi and the accuracy
against the RAM ground truth; the weights file is the same (the ensemble is one wider MLP)."""
VERSION_PATTERN = r"^rm-[0-9]{8}-[0-9]{6}-[0-9a-f]{6}$"
MAX_SCORE_OBSERVATIONS = 4096
OBSERVATION_SIZE = 128


class _Model(BaseModel):
    # NaN and inf have no JSON spelling: a card or an answer holding one would read as null.
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class RewardModelCard(_Model):
    """``model.json`` of a stored version: what it was trained on and how well it did."""

    schema_version: Literal[1, 2] = CARD_SCHEMA_VERSION
    version: str = Field(pattern=VERSION_PATTERN)
    created_at: float = Field(description="unix time")
    encoder_version: str = Field(description="the observation layout it was trained on")
    observation_size: int = Field(ge=1)
    hidden_sizes: list[int] = Field(min_length=1, max_length=8)
    reduction: Literal["mean"] = Field(
        "mean", description="a segment's reward is the mean of R_phi over its steps"
    )
    output_mean: float = Field(description="mean of R_phi over the training steps")
    output_std: float = Field(gt=0, description="std of R_phi over the training steps")
    output_median: float | None = Field(
        None,
        description="median of R_phi over the training steps: the intrinsic bonus pays only "
        "above it (null on versions that did not record it: the mean stands in)",
    )
    pairs: int = Field(ge=0, description="training pairs")
    heldout_pairs: int = Field(ge=0)
    heldout_accuracy: float = Field(ge=0, le=1)
    segments: int = Field(ge=0, description="scored segments the pairs were drawn from")
    epochs: int = Field(ge=0, description="epochs trained before early stopping")
    seed: int
    weights_sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    source_scores: list[str] = Field(
        default_factory=list, description="record keys of the scores the pairs came from"
    )
    pair_kind: Literal["segments", "states"] = Field(
        "segments", description="pairs of whole segments (mean R_phi) or of single states"
    )
    states: int = Field(0, ge=0, description="distinct states in the pairs (state pairs)")
    ensemble_size: int = Field(1, ge=1, description="R_phi members, averaged into these weights")
    member_hidden_sizes: list[int] = Field(
        default_factory=list, description="each member's hidden layers (hidden_sizes is their sum)"
    )
    member_heldout_accuracy: list[float] = Field(default_factory=list)
    disagreement: float | None = Field(
        None, ge=0, description="held-out states: mean std of the members' normalised R_phi"
    )
    member_agreement: float | None = Field(
        None, ge=0, le=1, description="held-out pairs every member orders the same way"
    )
    heldout_truth_pairs: int = Field(0, ge=0, description="held-out pairs with a RAM truth")
    heldout_truth_accuracy: float | None = Field(
        None, ge=0, le=1, description="R_phi's agreement with the RAM ground truth on them"
    )
    judge_accuracy: list[JudgeAccuracy] = Field(
        default_factory=list, description="each judge's accuracy over the comparisons used"
    )


class LatestPointer(_Model):
    schema_version: Literal[1] = REWARD_MODEL_SCHEMA_VERSION
    version: str = Field(pattern=VERSION_PATTERN)


class RewardModelEvent(_Model):
    """The ``koholint.reward-models`` message: a version was published."""

    schema_version: Literal[1] = REWARD_MODEL_SCHEMA_VERSION
    version: str = Field(pattern=VERSION_PATTERN)
    prefix: str = Field(description="reward-models/<version>")
    encoder_version: str
    heldout_accuracy: float = Field(ge=0, le=1)


class TrainRequest(_Model):
    reason: str = Field("asked", max_length=200, description="recorded in the status")


TrainOutcomeState = Literal["published", "refused", "skipped"]


class TrainStatus(_Model):
    """What the last training attempt did; `detail` says why when nothing was published."""

    state: TrainOutcomeState
    detail: str
    version: str | None = None
    pairs: int = Field(0, ge=0)
    heldout_accuracy: float | None = None
    denoised_accuracy: float | None = Field(
        None, description="the held-out accuracy corrected for the labels' measured error, when "
        "the floor read it (denoised_floor)",
    )  # fmt: skip
    seconds: float = Field(0.0, ge=0)


class ModelList(_Model):
    models: list[RewardModelCard]
    last_training: TrainStatus | None = None
    segments: int = Field(ge=0, description="scored segments in the preference dataset")
    restored: int | None = Field(
        None, ge=0,
        description="scored segments rebuilt from the store's score records at start "
        "(null: still reading them)",
    )  # fmt: skip


ObservationRow = Annotated[
    list[float], Field(min_length=OBSERVATION_SIZE, max_length=OBSERVATION_SIZE)
]
"""One observation: the env's encoded vector, finite floats (the model's own)."""


class ScoreRequest(_Model):
    observations: list[ObservationRow] = Field(
        min_length=1,
        max_length=MAX_SCORE_OBSERVATIONS,
        description=f"observation vectors of {OBSERVATION_SIZE} finite floats each",
    )
    version: str | None = Field(
        None, pattern=VERSION_PATTERN, description="a stored version; none = the latest"
    )


class ScoreResponse(_Model):
    version: str
    rewards: list[float] = Field(description="R_phi of each observation (raw, before scaling)")
    segment_reward: float = Field(description="their mean: the reward of them as one segment")

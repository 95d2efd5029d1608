"""reward-model settings, from the environment with the prefix KOHOLINT_REWARD_MODEL_."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field
from pydantic_settings import SettingsConfigDict

from koholint.env.encoding import Encoding
from koholint.settings import (
    ConsumerSettings,
    RedisSettings,
    ServiceSettings,
    StoreSettings,
    StreamSettings,
)
from koholint.web.auth import ControlAccess


class FitConfig(BaseModel):
    """How R_phi is fitted; the reward-model service's settings carry these fields."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    hidden_sizes: list[Annotated[int, Field(ge=1, le=4096)]] = Field(
        default_factory=lambda: [64, 64], min_length=1, max_length=8
    )
    """R_phi's hidden layers (ReLU)"""
    learning_rate: float = Field(3e-3, gt=0, le=1)
    """Adam step size"""
    weight_decay: float = Field(1e-2, ge=0, le=1)
    """L2 on the weights: with a few hundred segments over 128 inputs, R_phi overfits without it"""
    max_steps: int = Field(400, ge=1, le=100_000)
    """full-batch Adam steps at most"""
    evaluate_every: int = Field(5, ge=1, le=100_000)
    """steps between held-out evaluations"""
    patience: int = Field(8, ge=1, le=1000)
    """evaluations without a better held-out loss before stopping"""
    heldout_fraction: float = Field(0.2, gt=0, lt=1)
    """share of the segments held out: pairs touching them measure accuracy and stop early"""
    seed: int = Field(0, ge=0, le=2**31 - 1)
    """seeds the held-out split and the network's initial weights"""
    tie_weight: float = Field(0.0, ge=0, le=10)
    """weight of the tie pairs (states every voting judge called the same) in the loss: each
    pulls its two states' R_phi together, -(log sigma(d) + log sigma(-d)) / 2, least at d = 0;
    0 leaves ties out (at most as many tie pairs as decided ones are used)"""
    ensemble_size: int = Field(3, ge=1, le=16)
    """R_phi members trained from seeds seed, seed+1, ... on the same split and averaged; their
    disagreement on held-out states is reported"""


class Settings(
    ServiceSettings,
    FitConfig,
    StoreSettings,
    RedisSettings,
    StreamSettings,
    ConsumerSettings,
    ControlAccess,
):
    """The reward-model service: its streams, preferences and when it trains; how it fits R_phi
    (FitConfig's fields, KOHOLINT_REWARD_MODEL_LEARNING_RATE and so on)."""

    model_config = SettingsConfigDict(env_prefix="KOHOLINT_REWARD_MODEL_", extra="ignore")
    service_defaults = {
        "group": "reward-model",
        "block_ms": 1000,
        "max_body_bytes": 8 * 1024 * 1024,
    }

    consumer_name: str = Field("reward-model-0", pattern=r"^[A-Za-z0-9_.-]{1,64}$")
    train_after_new_pairs: int = Field(
        64, ge=1, le=1_000_000, description="train when this many new pairs arrived since the last"
    )
    margin: float = Field(1.0, ge=0, le=10, description="score gap below which a pair is a tie")
    min_pairs: int = Field(20, ge=2, le=1_000_000, description="no training below this many")
    max_pairs: int = Field(50_000, ge=2, le=1_000_000)
    max_comparison_batches: int = Field(
        256, ge=1, le=100_000, description="batches of state comparisons kept; oldest dropped"
    )
    max_segments: int = Field(2000, ge=2, le=100_000, description="oldest dropped past this")
    accuracy_floor: float = Field(
        0.6, ge=0, le=1, description="publish only above this held-out accuracy"
    )
    denoised_floor: bool = Field(
        False,
        description="compare the floor with the held-out accuracy corrected for the labels' "
        "measured error (koholint.reward.truth.denoised_accuracy: the ensemble's labels against "
        "the RAM truth), not with the raw agreement; state pairs with at least 50 measured labels",
    )
    encoding: Encoding = Field(
        "observation",
        description="the segments' observation encoding it trains on (koholint.env.encoding): "
        "observation, what the trainer's policy sees and shapes with; memory, that and the room "
        "flags' counts, for R_phi as the explorer's level",
    )

    def fit_config(self) -> FitConfig:
        return FitConfig.model_validate(self.model_dump(include=set(FitConfig.model_fields)))

"""reward-model settings, from the environment with the prefix KOHOLINT_REWARD_MODEL_."""

from __future__ import annotations

from pydantic import Field
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
from reward_model.bradley_terry import FitConfig


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

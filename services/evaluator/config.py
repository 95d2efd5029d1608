"""evaluator settings, from the environment with the prefix KOHOLINT_EVALUATOR_."""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import SettingsConfigDict

from koholint.planning.settings import LlmBackendSettings
from koholint.reward.truth import MIN_MEASURED_PAIRS, StateQuestion
from koholint.schemas.evaluator import JUDGE_BACKENDS
from koholint.settings import (
    ConsumerSettings,
    RedisSettings,
    ServiceSettings,
    StoreSettings,
    StreamSettings,
)
from koholint.web.auth import ControlAccess

RULES_STATE_PAIRS = 16_384
"""state pairs per batch for the rules and noisy judges (state_pairs 0): cheap to ask"""
LLM_STATE_PAIRS = 256
"""state pairs per batch for a language model's judges (state_pairs 0): a request each"""


class Settings(
    ServiceSettings,
    LlmBackendSettings,
    StoreSettings,
    RedisSettings,
    StreamSettings,
    ConsumerSettings,
    ControlAccess,
):
    model_config = SettingsConfigDict(env_prefix="KOHOLINT_EVALUATOR_", extra="ignore")
    known_backends = JUDGE_BACKENDS
    service_defaults = {"group": "evaluator", "max_body_bytes": 256 * 1024, "llm_timeout_s": 60.0}

    samples: int = Field(3, ge=1, le=9, description="M: answers per judge, each with its own seed")
    seed: int = Field(0, ge=0, le=2**31 - 1, description="the first sample's seed")
    llm_max_tokens: int = Field(256, ge=32, le=4096, description="tokens per verdict at most")
    in_flight_per_route: int = Field(4, ge=1, le=256, description="requests in flight per route")
    max_key_frames: int = Field(6, ge=2, le=16, description="frames shown to the vision judge")
    consumer: str = Field("", max_length=128, description="consumer name; default host-pid")
    batch_size: int = Field(16, ge=1, le=256, description="segments scored together")
    reclaim_after_ms: int = Field(60_000, ge=10, description="take over unacked messages after")
    max_deliveries: int = Field(20, ge=1, le=1000, description="then dead-lettered")
    unavailable_pause_s: float = Field(5.0, ge=0, le=600, description="pause while judges are down")
    max_segment_steps: int = Field(4096, ge=1, description="ram.jsonl lines per segment at most")
    max_segment_bytes: int = Field(64 * 1024 * 1024, ge=1024, description="segment files' total")
    max_job_segments: int = Field(10_000, ge=1, description="segments per evaluation job at most")
    max_running_jobs: int = Field(2, ge=1, le=64)
    max_jobs_kept: int = Field(256, ge=1, le=100_000)
    noisy_accuracy: float = Field(
        0.8, ge=0, le=1, description="noisy backend: probability each answer is the ground truth"
    )
    state_stride: int = Field(
        16, ge=1, le=4096, description="states compared: every k-th step of a segment and its last"
    )
    state_question: StateQuestion = Field(
        "progress+rooms",
        description="what makes one compared state further along: its progress level, rooms "
        "reached breaking ties (progress+rooms), or the level alone (progress)",
    )
    state_pairs: int = Field(
        0, ge=0, le=1_000_000,
        description=f"state pairs compared per batch and run; 0: {RULES_STATE_PAIRS} for "
        f"rules/noisy, {LLM_STATE_PAIRS} for LLMs",
    )  # fmt: skip
    min_measured_pairs: int = Field(
        MIN_MEASURED_PAIRS, ge=1, le=1_000_000,
        description="pairs with a truth a judge must decide before it can lose its vote",
    )  # fmt: skip

    def comparisons_per_batch(self, backend: str | None = None) -> int:
        """`state_pairs`, or the default of `backend` (this one's when None): cheap for the
        rules, a request each for LLMs."""
        if self.state_pairs:
            return self.state_pairs
        backend = self.backend if backend is None else backend
        return RULES_STATE_PAIRS if backend in ("rules", "noisy") else LLM_STATE_PAIRS

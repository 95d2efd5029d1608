"""evaluator settings, from the environment with the prefix KOHOLINT_EVALUATOR_."""

from __future__ import annotations

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from koholint.bus import STREAM_SCORES, STREAM_SEGMENTS
from koholint.planning.backends import BACKENDS
from koholint.web.auth import ControlAccess
from koholint.web.telemetry import TracingExporter


class Settings(BaseSettings, ControlAccess):
    model_config = SettingsConfigDict(env_prefix="KOHOLINT_EVALUATOR_", extra="ignore")

    backend: str = Field("rules", description="rules (embedded default) | local | llm-d")
    llm_base_url: str = Field("", description="llm-d gateway or llm-local base URL")
    model_vision: str = Field("vision", description="model behind /vision (llm-d)")
    model_state: str = Field("state", description="model behind /state (llm-d)")
    model_progress: str = Field("puzzle", description="model behind /puzzle (llm-d)")
    samples: int = Field(3, ge=1, le=9, description="M: answers per judge, each with its own seed")
    seed: int = Field(0, ge=0, le=2**31 - 1, description="the first sample's seed")
    llm_timeout_s: float = Field(60.0, gt=0, le=600)
    llm_attempts: int = Field(4, ge=1, le=10)
    llm_max_tokens: int = Field(256, ge=32, le=4096, description="tokens per verdict at most")
    in_flight_per_route: int = Field(4, ge=1, le=256, description="requests in flight per route")
    max_key_frames: int = Field(6, ge=2, le=16, description="frames shown to the vision judge")
    store_url: str = Field("runs/store", description="object store URL (the trainer's default)")
    redis_url: str = Field("", description="redis://...; empty: the in-process bus")
    segments_stream: str = STREAM_SEGMENTS
    scores_stream: str = STREAM_SCORES
    group: str = Field("evaluator", min_length=1, max_length=64)
    consumer: str = Field("", max_length=128, description="consumer name; default host-pid")
    consume: bool = Field(True, description="consume koholint.segments in the background")
    batch_size: int = Field(16, ge=1, le=256, description="segments scored together")
    block_ms: int = Field(2000, ge=10, le=60_000, description="wait for new messages at most")
    reclaim_after_ms: int = Field(60_000, ge=10, description="take over unacked messages after")
    max_deliveries: int = Field(20, ge=1, le=1000, description="then dead-lettered")
    unavailable_pause_s: float = Field(5.0, ge=0, le=600, description="pause while judges are down")
    max_segment_steps: int = Field(4096, ge=1, description="ram.jsonl lines per segment at most")
    max_segment_bytes: int = Field(64 * 1024 * 1024, ge=1024, description="segment files' total")
    max_job_segments: int = Field(10_000, ge=1, description="segments per evaluation job at most")
    max_running_jobs: int = Field(2, ge=1, le=64)
    max_jobs_kept: int = Field(256, ge=1, le=100_000)
    max_body_bytes: int = Field(256 * 1024, ge=1024)
    tracing_exporter: TracingExporter = Field("none", description="none | console | otlp")
    log_level: str = "INFO"

    @field_validator("backend")
    @classmethod
    def known_backend(cls, value: str) -> str:
        if value not in BACKENDS:
            raise ValueError(f"use one of {', '.join(BACKENDS)}")
        return value

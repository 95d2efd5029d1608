"""env-sim settings, from the environment with the prefix KOHOLINT_ENV_SIM_."""

from __future__ import annotations

import os

from pydantic import Field
from pydantic_settings import SettingsConfigDict

from koholint.schemas.env import MAX_FRAME_SKIP
from koholint.schemas.env_sim import MAX_BATCH
from koholint.settings import (
    RedisSettings,
    ServiceSettings,
    StoreSettings,
    StreamSettings,
    WorldsFolderSettings,
)
from koholint.web.auth import ControlAccess


class Settings(
    ServiceSettings,
    StoreSettings,
    RedisSettings,
    StreamSettings,
    WorldsFolderSettings,
    ControlAccess,
):
    model_config = SettingsConfigDict(env_prefix="KOHOLINT_ENV_SIM_", extra="ignore")
    service_defaults = {
        "store_url": "/tmp/koholint-env-sim-store",
        "max_body_bytes": 8 * 1024 * 1024,
    }

    max_sessions: int = Field(16, ge=1, le=1024, description="open sessions at most; more get 429")
    session_ttl_seconds: float = Field(
        600.0, gt=0, description="idle sessions are evicted after this"
    )
    max_batch: int = Field(256, ge=1, le=MAX_BATCH, description="actions per POST .../steps")
    max_frame_skip: int = Field(MAX_FRAME_SKIP, ge=1, le=MAX_FRAME_SKIP)
    max_state_bytes: int = Field(4 * 1024 * 1024, ge=1024, description="uploaded save-state limit")
    workers: int = Field(default_factory=lambda: os.cpu_count() or 1, ge=1, le=256)
    rom_path: str | None = Field(None, description="the operator's own ROM, identified by sha256")
    allow_rom_upload: bool = False
    max_rom_bytes: int = Field(8 * 1024 * 1024, ge=32 * 1024)
    rom_dir: str = Field("/tmp/koholint-env-sim-roms", description="where uploaded ROMs are kept")
    positions_every: int = Field(8, ge=1, le=10_000, description="publish every N-th step")
    max_live_clients: int = Field(
        16,
        ge=1,
        le=1024,
        description="live frame streams open at once (all sessions); more get 429",
    )
    max_live_fps: int = Field(60, ge=1, le=60, description="frames per second of one live stream")
    live_send_timeout_seconds: float = Field(
        5.0,
        gt=0,
        le=120,
        description="a live viewer that takes longer to accept a frame is dropped",
    )
    max_players: int = Field(
        4, ge=1, le=256, description="sessions playing at real speed at once; more get 429"
    )
    max_play_seconds: float = Field(
        600.0, gt=0, le=86_400, description="a player stops after this long"
    )

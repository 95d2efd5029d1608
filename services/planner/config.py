"""planner settings, from the environment with the prefix KOHOLINT_PLANNER_."""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import SettingsConfigDict

from koholint.planning.settings import LlmBackendSettings
from koholint.schemas.planner import MAX_AUTOPILOT_FRAMES, MAX_AUTOPILOT_MACROS
from koholint.settings import EnvSimClientSettings, ServiceSettings
from koholint.web.auth import ControlAccess


class Settings(ServiceSettings, LlmBackendSettings, EnvSimClientSettings, ControlAccess):
    model_config = SettingsConfigDict(env_prefix="KOHOLINT_PLANNER_", extra="ignore")
    service_defaults = {"env_sim_url": "http://127.0.0.1:8080", "max_body_bytes": 1024 * 1024}

    vision: bool = Field(False, description="ask /vision about frames sent with /v1/decide")
    enter_after: int = Field(1, ge=1, le=1000, description="switch: observations to take over")
    leave_after: int = Field(2, ge=1, le=1000, description="switch: observations to let go")
    max_memories: int = Field(256, ge=1, le=100_000, description="session memories kept (LRU)")
    memory_max_items: int = Field(16, ge=1, le=1000)
    memory_max_chars: int = Field(2000, ge=200, le=100_000)
    max_autopilot_macros: int = Field(256, ge=1, le=MAX_AUTOPILOT_MACROS)
    max_autopilot_frames: int = Field(60_000, ge=1, le=MAX_AUTOPILOT_FRAMES)
    call_log_limit: int = Field(10_000, ge=1, le=1_000_000)

    def models(self) -> dict[str, str]:
        models = {
            "dialog": self.model_dialog,
            "puzzle": self.model_puzzle,
            "state": self.model_state,
        }
        if self.vision:
            models["vision"] = self.model_vision
        return models

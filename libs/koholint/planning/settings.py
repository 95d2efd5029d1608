"""The settings of a service that asks language models (the planner, the evaluator's judges),
declared once; each service's ``Settings`` inherits them under its own prefix."""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import BaseModel, Field, SecretStr, field_validator

from koholint.planning.backends import BACKENDS


class LlmBackendSettings(BaseModel):
    """Which backend answers, where it is, and which model serves each route (llm-d)."""

    known_backends: ClassVar[tuple[str, ...]] = BACKENDS
    """the backends this service can use (a service may add its own)"""

    backend: str = "rules"
    """rules (the embedded, deterministic default) | local (llm-local) | llm-d (the gateway)"""
    llm_base_url: str = Field("", max_length=4096)
    """the llm-d gateway or the llm-local server's base URL"""
    model_dialog: str = Field("dialog", min_length=1, max_length=256)
    """the model behind /dialog (llm-d)"""
    model_puzzle: str = Field("puzzle", min_length=1, max_length=256)
    """the model behind /puzzle (llm-d)"""
    model_state: str = Field("state", min_length=1, max_length=256)
    """the model behind /state (llm-d)"""
    model_vision: str = Field("vision", min_length=1, max_length=256)
    """the model behind /vision (llm-d)"""
    llm_token: SecretStr = SecretStr("")
    """bearer token sent with every request to the models (``Authorization: Bearer``, as the
    OpenAI protocol has it): llm-local's KOHOLINT_LLM_LOCAL_TOKEN, or the gateway's key;
    empty sends none"""
    llm_timeout_s: float = Field(30.0, gt=0, le=600)
    """seconds one request to a model may take"""
    llm_attempts: int = Field(4, ge=1, le=10)
    """tries per request (retries with backoff on transport errors)"""

    @field_validator("backend")
    @classmethod
    def _known_backend(cls, value: Any) -> Any:
        if value not in cls.known_backends:
            raise ValueError(f"use one of {', '.join(cls.known_backends)}")
        return value

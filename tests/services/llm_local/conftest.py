"""llm-local fixtures: the real model, loaded once per module, behind uvicorn on loopback."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from tests.conftest import ServedApp

from llm_local.app import create_app
from llm_local.config import Settings
from llm_local.model import ChatModel

# Small limits keep the limit tests cheap; n_ctx is small so a prompt can overflow it. One
# thread: tests run beside other pytest workers, and llama.cpp threads spin waiting for a core.
TEST_SETTINGS = {
    "n_ctx": 1024,
    "n_threads": 1,
    "max_tokens_limit": 128,
    "max_messages": 8,
    "max_message_chars": 4000,
    "max_body_bytes": 64 * 1024,
    "model_name": "smollm2-under-test",
}


class LiveServer(ServedApp):
    """uvicorn serving an llm-local app on a loopback port, in a thread."""

    def __init__(self, settings: Settings, model: ChatModel) -> None:
        super().__init__(create_app(settings, model=model))


@pytest.fixture(scope="module")
def settings() -> Settings:
    return Settings(**TEST_SETTINGS)


@pytest.fixture(scope="module")
def model(settings: Settings) -> Iterator[ChatModel]:
    """The bundled SmolLM2-135M-Instruct, loaded once per test module."""
    loaded = ChatModel.load(settings)
    yield loaded
    loaded.close()


@pytest.fixture(scope="module")
def live_server(settings: Settings, model: ChatModel) -> Iterator[LiveServer]:
    with LiveServer(settings, model) as server:
        yield server


@pytest.fixture(scope="module")
def http(live_server: LiveServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=live_server.url, timeout=120) as client:
        yield client

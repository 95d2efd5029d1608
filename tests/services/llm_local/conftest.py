"""llm-local fixtures: the real model, loaded once per module, behind uvicorn on loopback."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator

import httpx
import pytest
import uvicorn

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


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class LiveServer:
    """uvicorn serving an llm-local app on a loopback port, in a thread."""

    def __init__(self, settings: Settings, model: ChatModel) -> None:
        self.port = free_port()
        config = uvicorn.Config(
            create_app(settings, model=model), host="127.0.0.1", port=self.port,
            log_level="warning",
        )  # fmt: skip
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> LiveServer:
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.05)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=30)


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

"""env-sim test fixtures: the app in-process (httpx ASGITransport) and really listening (uvicorn)."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest
import uvicorn

from env_sim.app import create_app
from env_sim.config import Settings


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(
        store_url=str(tmp_path / "store"), rom_dir=str(tmp_path / "roms"), max_sessions=4,
        max_batch=64, workers=2, max_body_bytes=64 * 1024, max_state_bytes=32 * 1024,
    )  # fmt: skip


@contextlib.asynccontextmanager
async def running_client(
    settings: Settings, **app_options: object
) -> AsyncIterator[httpx.AsyncClient]:
    """An httpx client talking to a fresh app in-process, with the app's lifespan running."""
    app = create_app(settings, **app_options)  # type: ignore[arg-type]
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://env-sim") as http:
            http.app = app  # type: ignore[attr-defined]
            yield http


@pytest.fixture
async def client(settings: Settings) -> AsyncIterator[httpx.AsyncClient]:
    async with running_client(settings) as http:
        yield http


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class LiveServer:
    """uvicorn serving an env-sim app on a loopback port, in a thread."""

    def __init__(self, settings: Settings) -> None:
        self.port = free_port()
        config = uvicorn.Config(
            create_app(settings), host="127.0.0.1", port=self.port, log_level="warning"
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> LiveServer:
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            if time.monotonic() > deadline:
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.05)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=30)


@pytest.fixture
def live_server(settings: Settings) -> Iterator[LiveServer]:
    with LiveServer(settings) as server:
        yield server

"""env-sim test fixtures: the app in-process (httpx ASGITransport) and really listening (uvicorn)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest
from tests.conftest import ServedApp

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


class LiveServer(ServedApp):
    """uvicorn serving an env-sim app on a loopback port, in a thread."""

    def __init__(self, settings: Settings) -> None:
        super().__init__(create_app(settings))


@pytest.fixture
def live_server(settings: Settings) -> Iterator[LiveServer]:
    with LiveServer(settings) as server:
        yield server

"""planner fixtures: a real env-sim listening on loopback, the planner app in-process."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest

from env_sim.app import create_app as create_env_sim
from env_sim.config import Settings as EnvSimSettings
from planner.app import create_app
from planner.config import Settings


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def env_sim_url(serve, tmp_path: Path) -> str:  # type: ignore[no-untyped-def]
    settings = EnvSimSettings(
        store_url=str(tmp_path / "store"), rom_dir=str(tmp_path / "roms"), workers=2
    )
    return serve(create_env_sim(settings))  # type: ignore[no-any-return]


@contextlib.asynccontextmanager
async def planner_client(settings: Settings) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(settings)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://planner") as http:
            yield http


@pytest.fixture
def settings(env_sim_url: str) -> Settings:
    return Settings(env_sim_url=env_sim_url, max_body_bytes=64 * 1024, max_memories=2)


@pytest.fixture
async def client(settings: Settings) -> AsyncIterator[httpx.AsyncClient]:
    async with planner_client(settings) as http:
        yield http


@pytest.fixture
def env_sim(env_sim_url: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=env_sim_url, timeout=30) as http:
        yield http

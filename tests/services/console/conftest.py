"""Fixtures of the console tests: a map cache rendered once per session, unique stream names."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def map_cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Rendering the cartridge's rooms takes seconds: the tests of a session share one cache."""
    return tmp_path_factory.mktemp("console-map")


@pytest.fixture
def redis_client() -> Iterator[object]:
    import redis

    client = redis.Redis()
    yield client
    client.close()


@pytest.fixture
def stream(redis_client) -> Iterator[str]:
    """A positions stream of this test's own (Redis is shared by everyone's tests)."""
    name = f"test.console.positions.{uuid.uuid4().hex}"
    yield name
    redis_client.delete(name)

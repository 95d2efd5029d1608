"""evaluator fixtures: real segments from the env, moto's S3 server, real Redis, a scripted judge.

Segments come from the real environment on the cartridge (``SegmentRecorder`` +
``ExportQueue``), made once per session into a local folder and copied into each test's store.
The scripted judge is a real HTTP server speaking OpenAI chat completions on the gateway's
routes; each route answers through a Python function of the request (seed, messages, ...).
"""

from __future__ import annotations

import json
import shutil
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from tests.conftest import ServedApp

from koholint.env.export import ExportQueue
from koholint.env.wrappers import SegmentRecorder
from koholint.env.zelda import ZeldaEnv
from koholint.store import LocalStore, ObjectStore, S3Store

ACCESS, SECRET, BUCKET = "testing-access", "testing-secret", "koholint"
SEGMENT_RUN = "run-eval"
SEGMENT_STEPS = 24
EPISODES = 2
EPISODE_STEPS = 96  # 4 segments per episode, 8 in all


def make_segments(root: Path, run: str = SEGMENT_RUN, episodes: int = EPISODES) -> list[str]:
    """Record `episodes` episodes of a random policy as segments; returns their prefixes."""
    store = LocalStore(root)
    exporter = ExportQueue(store, capacity=64)
    env = SegmentRecorder(
        ZeldaEnv(max_episode_steps=EPISODE_STEPS), exporter, run=run, every=1,
        segment_steps=SEGMENT_STEPS,
    )  # fmt: skip
    rng = np.random.default_rng(0)
    for episode in range(episodes):
        env.reset(seed=episode)
        done = False
        while not done:
            _, _, terminated, truncated, _ = env.step(int(rng.integers(env.action_space.n)))
            done = terminated or truncated
    env.close()
    counts = exporter.close()
    assert counts["written"]
    assert not counts["failed"]
    return segment_prefixes(store, run)


def segment_prefixes(store: ObjectStore, run: str) -> list[str]:
    return [
        k.rsplit("/", 1)[0] for k in store.list(f"episodes/{run}/") if k.endswith("manifest.json")
    ]


@pytest.fixture(scope="session")
def segments_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("segments")
    make_segments(root)
    return root


def copy_segments(source: Path, store: ObjectStore) -> list[str]:
    local = LocalStore(source)
    for key in local.list("episodes/"):
        store.put(key, local.get(key))
    return segment_prefixes(store, SEGMENT_RUN)


@pytest.fixture
def local_store(segments_dir: Path, tmp_path: Path) -> LocalStore:
    shutil.copytree(segments_dir, tmp_path / "store")
    return LocalStore(tmp_path / "store")


@pytest.fixture
def s3_store(s3_endpoint: str) -> S3Store:
    """An empty S3 store under a prefix of its own (moto, over HTTP with the minio SDK)."""
    prefix = f"t-{uuid.uuid4().hex[:8]}"
    store = S3Store.connect(
        s3_endpoint, ACCESS, SECRET, BUCKET, secure=False, prefix=prefix, region="us-east-1"
    )
    if not store.client.bucket_exists(BUCKET):
        store.client.make_bucket(BUCKET)
    return store


def s3_url(store: S3Store) -> str:
    return f"s3://{BUCKET}/{store.prefix.strip('/')}?endpoint={store.endpoint}&secure=false&region=us-east-1"


@pytest.fixture(scope="module")
def redis_client() -> Iterator[Any]:
    import redis

    client = redis.Redis(host="127.0.0.1", port=6379, socket_connect_timeout=2)
    try:
        client.ping()
    except redis.ConnectionError:
        pytest.fail("no Redis on 127.0.0.1:6379: start one (redis-server --daemonize yes)")
    yield client
    client.close()


@pytest.fixture
def streams(redis_client: Any) -> Iterator[dict[str, str]]:
    """Stream names of this test alone; deleted afterwards."""
    suffix = uuid.uuid4().hex[:8]
    names = {"segments": f"test.segments.{suffix}", "scores": f"test.scores.{suffix}"}
    yield names
    redis_client.delete(*names.values(), names["segments"] + ".dead")


# -- the scripted judge server ------------------------------------------------------
Script = Callable[[dict[str, Any]], "str | int"]
"""body -> the answer's content, or an HTTP status to answer with instead."""


def verdict(score: int, label: str, rationale: str = "scripted") -> str:
    return json.dumps({"score": score, "label": label, "events": [], "rationale": rationale})


class ScriptedJudge:
    """A chat-completions server whose routes answer through the given scripts."""

    def __init__(self, scripts: dict[str, Script], delay_s: float = 0.0) -> None:
        self.scripts, self.delay_s = scripts, delay_s
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self.lock = threading.Lock()
        self.app = FastAPI()

        @self.app.post("/{route}/v1/chat/completions")
        def complete(route: str, body: dict[str, Any]) -> JSONResponse:
            with self.lock:
                self.requests.append((route, body))
            time.sleep(self.delay_s)
            answer = self.scripts[route](body) if route in self.scripts else 404
            if isinstance(answer, int):
                return JSONResponse({"error": "scripted"}, status_code=answer)
            return JSONResponse({
                "choices": [{"message": {"role": "assistant", "content": answer}}],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1},
            })  # fmt: skip

        @self.app.get("/{route}/v1/models")
        def models(route: str, request: Request) -> dict[str, Any]:
            return {"data": [{"id": route}]}

    def count(self, route: str) -> int:
        with self.lock:
            return sum(1 for r, _ in self.requests if r == route)


@pytest.fixture
def scripted_judge() -> Iterator[Callable[..., tuple[ScriptedJudge, str]]]:
    servers: list[ServedApp] = []

    def start(scripts: dict[str, Script], delay_s: float = 0.0) -> tuple[ScriptedJudge, str]:
        judge = ScriptedJudge(scripts, delay_s)
        server = ServedApp(judge.app).__enter__()
        servers.append(server)
        return judge, server.url

    yield start
    for server in servers:
        server.__exit__()

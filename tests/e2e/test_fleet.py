"""The loop with the services as separate processes over a real Redis and moto's S3 server:
`koholint train` exports and announces segments, the evaluator service scores them, the
reward-model service trains and publishes, and a second `koholint train` hot-loads the version
and reports a non-zero shaping component."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from e2e_support import SMALL_BURST, koholint

from koholint.store import open_store

ACCESS, SECRET, BUCKET = "e2e-access", "e2e-secret", "koholint-e2e"
REDIS_DB = 11  # a database of its own on the shared Redis: the fleet's real stream names
STREAMS = ("koholint.segments", "koholint.scores", "koholint.reward-models")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_until_listening(port: int, process: subprocess.Popen[bytes], what: str) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"{what} exited with {process.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.2)
    pytest.fail(f"{what} did not listen on {port}")


def start(command: list[str], port: int, what: str, log: Path,
          environment: dict[str, str]) -> subprocess.Popen[bytes]:  # fmt: skip
    with log.open("wb") as output:
        process = subprocess.Popen(command, stdout=output, stderr=subprocess.STDOUT,
                                   env={**os.environ, **environment})  # fmt: skip
    wait_until_listening(port, process, what)
    return process


@pytest.fixture
def fleet(tmp_path: Path) -> Iterator[dict[str, str]]:
    """moto's S3 server, the evaluator and the reward-model service, each its own process."""
    import redis

    client = redis.Redis(host="127.0.0.1", port=6379, db=REDIS_DB, socket_connect_timeout=2)
    client.delete(*STREAMS, *(stream + ".dead" for stream in STREAMS))
    s3_port, evaluator_port, model_port = free_port(), free_port(), free_port()
    store_url = f"s3://{BUCKET}?endpoint=127.0.0.1:{s3_port}&secure=false&region=us-east-1"
    redis_url = f"redis://127.0.0.1:6379/{REDIS_DB}"
    environment = {
        "KOHOLINT_S3_ACCESS_KEY": ACCESS, "KOHOLINT_S3_SECRET_KEY": SECRET,
        "KOHOLINT_EVALUATOR_STORE_URL": store_url, "KOHOLINT_EVALUATOR_REDIS_URL": redis_url,
        "KOHOLINT_EVALUATOR_BLOCK_MS": "200",
        "KOHOLINT_REWARD_MODEL_STORE_URL": store_url, "KOHOLINT_REWARD_MODEL_REDIS_URL": redis_url,
        "KOHOLINT_REWARD_MODEL_TRAIN_AFTER_NEW_PAIRS": "20", "KOHOLINT_REWARD_MODEL_MIN_PAIRS": "2",
        # The test is about the plumbing: any version trained on burst 1 must be used.
        "KOHOLINT_REWARD_MODEL_ACCURACY_FLOOR": "0.0", "KOHOLINT_REWARD_MODEL_BLOCK_MS": "200",
        # A small margin: with the default (1.0) a short burst's segments can score too close
        # together to give the ten pairs training needs.
        "KOHOLINT_REWARD_MODEL_MARGIN": "0.1",
    }  # fmt: skip
    processes = [start([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(s3_port)],
                       s3_port, "moto", tmp_path / "moto.log", environment)]  # fmt: skip
    os.environ.update({"KOHOLINT_S3_ACCESS_KEY": ACCESS, "KOHOLINT_S3_SECRET_KEY": SECRET})
    open_store(store_url).client.make_bucket(BUCKET)  # type: ignore[attr-defined]
    try:
        for name, port in (("evaluator", evaluator_port), ("reward-model", model_port)):
            command = [sys.executable, "-m", "koholint.cli", "serve", name, "--port", str(port)]
            processes.append(start(command, port, name, tmp_path / f"{name}.log", environment))
        yield {"store_url": store_url, "redis_url": redis_url, "logs": str(tmp_path),
               "reward_model": f"http://127.0.0.1:{model_port}", **environment}  # fmt: skip
    finally:
        for process in reversed(processes):
            process.terminate()
            process.wait(timeout=30)
        client.delete(*STREAMS, *(stream + ".dead" for stream in STREAMS))
        client.close()


def published_version(url: str, timeout: float = 240, ask_after: float = 30) -> str:
    """The first version the service publishes; a short burst's segments may give fewer new
    pairs than the automatic threshold, so after `ask_after` seconds the test asks it to train."""
    started = time.monotonic()
    listing: dict = {}
    while time.monotonic() < started + timeout:
        listing = httpx.get(f"{url}/v1/models", timeout=10).json()
        if listing["models"]:
            return str(listing["models"][-1]["version"])
        if time.monotonic() > started + ask_after:
            httpx.post(f"{url}/v1/train", json={"reason": "e2e: the burst is scored"}, timeout=120)
        time.sleep(1)
    pytest.fail(f"the reward-model service published nothing: {listing}")


@pytest.mark.slow  # ~4 minutes: two bursts and three servers on 2 cores
def test_services_as_processes_close_the_loop(fleet: dict[str, str], tmp_path: Path):
    common = ["--store", fleet["store_url"], "--redis-url", fleet["redis_url"],
              "--run-dir", str(tmp_path / "runs"), *SMALL_BURST]  # fmt: skip
    first = koholint("train", "--run", "fleet-b1", "--steps", "1024", "--export-every-episodes", "1", *common,
                     environment=fleet)  # fmt: skip
    assert first.returncode == 0, first.stdout + first.stderr
    version = published_version(fleet["reward_model"])
    store = open_store(fleet["store_url"])
    ledger = json.loads(store.get("checkpoints/fleet-b1/ledger.json"))
    checkpoint = max(ledger["checkpoints"], key=lambda record: record["step"])["name"]
    # Steps count across resumes: 1024 more.
    second = koholint("train", "--run", "fleet-b2", "--resume", checkpoint, "--steps", "2048",
                      "--reward-model", "latest", "--export-every-episodes", "0", *common,
                      environment=fleet)  # fmt: skip
    assert second.returncode == 0, second.stdout + second.stderr
    ledger = json.loads(store.get("checkpoints/fleet-b2/ledger.json"))
    metrics = max(ledger["checkpoints"], key=lambda record: record["step"])["metrics"]
    # The service may publish a newer version while burst 2 starts (the evaluator keeps
    # scoring burst 1's segments): burst 2 must shape with one the service published.
    published = {
        model["version"]
        for model in httpx.get(f"{fleet['reward_model']}/v1/models", timeout=10).json()["models"]
    }
    shaped = {
        key.removeprefix("shaped_steps."): value
        for key, value in metrics.items()
        if key.startswith("shaped_steps.")
    }
    assert version in published
    assert shaped, metrics
    assert set(shaped) <= published, metrics
    assert sum(shaped.values()) > 0, metrics
    assert metrics["shaping_abs_sum"] > 0

"""The loop with the services as separate processes over a real Redis and an S3 server (in
containers started by testcontainers where a Docker engine runs, else this machine's Redis
and moto's server as a process):
`koholint train` exports and announces segments, the evaluator service scores them, the
reward-model service trains and publishes, and a second `koholint train` hot-loads the version
and reports a non-zero shaping component."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from e2e_support import SMALL_BURST, koholint

from koholint.store import open_store

ACCESS, SECRET, BUCKET = "e2e-access", "e2e-secret", "koholint-e2e"
REDIS_DB = 11  # a database of its own on the shared Redis: the fleet's real stream names
STANDINS = "koholint/standins:local"
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


@contextmanager
def shared_redis_and_moto(tmp_path: Path) -> Iterator[tuple[str, str]]:
    """This machine's Redis (a database of its own) and moto's S3 server as a process."""
    import redis

    client = redis.Redis(host="127.0.0.1", port=6379, db=REDIS_DB, socket_connect_timeout=2)
    client.delete(*STREAMS, *(stream + ".dead" for stream in STREAMS))
    s3_port = free_port()
    moto = start([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(s3_port)],
                 s3_port, "moto", tmp_path / "moto.log", {})  # fmt: skip
    try:
        yield f"redis://127.0.0.1:6379/{REDIS_DB}", f"127.0.0.1:{s3_port}"
    finally:
        moto.terminate()
        moto.wait(timeout=30)
        client.delete(*STREAMS, *(stream + ".dead" for stream in STREAMS))
        client.close()


@contextmanager
def containerised_redis_and_s3() -> Iterator[tuple[str, str]]:
    """Redis and the S3 stand-in in containers of their own, started by testcontainers (from
    `make images`' koholint/standins; its reaper image cannot be pulled here, so it is off and
    the containers are stopped by the context manager)."""
    os.environ.setdefault("TESTCONTAINERS_RYUK_DISABLED", "true")
    from testcontainers.community.redis import RedisContainer
    from testcontainers.core.container import DockerContainer
    from testcontainers.core.wait_strategies import LogMessageWaitStrategy

    redis_container = RedisContainer(STANDINS).with_command("redis-server --protected-mode no")
    s3_container = (
        DockerContainer(STANDINS)
        .with_command("python /opt/standins/s3.py")
        .with_env("MOTO_RECORDER_FILEPATH", "/tmp/recording.jsonl")
        .with_exposed_ports(9000)
        .waiting_for(LogMessageWaitStrategy("S3 stand-in on"))
    )
    with redis_container as redis_up, s3_container as s3_up:
        host = redis_up.get_container_host_ip()
        yield (f"redis://{host}:{redis_up.get_exposed_port(6379)}/0",
               f"{s3_up.get_container_host_ip()}:{s3_up.get_exposed_port(9000)}")  # fmt: skip


def containers_can_run() -> bool:
    """A Docker engine answers and `make images` built the stand-ins' image."""
    found = subprocess.run(["docker", "image", "inspect", STANDINS], capture_output=True,
                           check=False) if shutil.which("docker") else None  # fmt: skip
    return found is not None and found.returncode == 0


@pytest.fixture
def fleet(tmp_path: Path) -> Iterator[dict[str, str]]:
    """Redis, an S3 server, the evaluator and the reward-model service, each its own process;
    Redis and S3 in containers (testcontainers) where the engine runs, else this machine's
    Redis and moto as a process."""
    backing = (
        containerised_redis_and_s3() if containers_can_run() else shared_redis_and_moto(tmp_path)
    )
    with backing as (redis_url, s3_endpoint):
        yield from services(tmp_path, redis_url, s3_endpoint)


def services(tmp_path: Path, redis_url: str, s3_endpoint: str) -> Iterator[dict[str, str]]:
    evaluator_port, model_port = free_port(), free_port()
    store_url = f"s3://{BUCKET}?endpoint={s3_endpoint}&secure=false&region=us-east-1"
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
    os.environ.update({"KOHOLINT_S3_ACCESS_KEY": ACCESS, "KOHOLINT_S3_SECRET_KEY": SECRET})
    open_store(store_url).client.make_bucket(BUCKET)  # type: ignore[attr-defined]
    processes: list[subprocess.Popen[bytes]] = []
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

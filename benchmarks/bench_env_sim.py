"""Benchmark env-sim over loopback against stepping the environment in-process.

    .venv/bin/python benchmarks/bench_env_sim.py [--steps 2000] [--sessions 8]

Starts `koholint serve env-sim` as a separate process on a loopback port and measures, in
one run: steps/s and p50/p99 latency of single steps (with the koholint httpx client and with the standard library's
http.client) and of batches of 64, next to the same
steps taken in-process (ZeldaEnv.step, the baseline); then the server's RSS growth per
session.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import socket
import subprocess
import sys
import tempfile
import time

import numpy as np

from koholint.clients.env_sim import EnvSimClient
from koholint.env.zelda import ZeldaEnv

BATCH = 64


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_server(port: int, sessions: int) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        "KOHOLINT_ENV_SIM_STORE_URL": tempfile.mkdtemp(),
        "KOHOLINT_ENV_SIM_MAX_SESSIONS": str(sessions + 2),
        "KOHOLINT_ENV_SIM_LOG_LEVEL": "WARNING",
    }
    process = subprocess.Popen(
        [sys.executable, "-m", "koholint.cli", "serve", "env-sim", "--port", str(port)],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return process
        except OSError:
            time.sleep(0.1)
    process.kill()
    raise RuntimeError("env-sim did not start")


def rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def actions(count: int) -> list[int]:
    rng = np.random.default_rng(0)
    return [int(a) for a in np.repeat(rng.integers(0, 9, count // 8 + 1), 8)[:count]]


def timed(calls: list) -> tuple[float, np.ndarray]:  # type: ignore[type-arg]
    latencies = []
    started = time.perf_counter()
    for call in calls:
        t = time.perf_counter()
        call()
        latencies.append(time.perf_counter() - t)
    return time.perf_counter() - started, np.array(latencies) * 1000


def row(name: str, steps: int, elapsed: float, latencies: np.ndarray, baseline: float) -> None:
    rate = steps / elapsed
    print(
        f"{name:<28}{rate:>9.0f}{np.percentile(latencies, 50):>9.2f}{np.percentile(latencies, 99):>9.2f}{rate / baseline:>8.2f}"
    )


def raw_step(connection: http.client.HTTPConnection, session: str, action: int) -> None:
    """One step with the standard library's keep-alive client: the service without httpx."""
    body = json.dumps({"action": action})
    connection.request(
        "POST", f"/v1/sessions/{session}/step", body, {"content-type": "application/json"}
    )
    response = connection.getresponse()
    json.loads(response.read())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--sessions", type=int, default=8)
    args = parser.parse_args()
    plan = actions(args.steps)

    env = ZeldaEnv()
    env.reset(seed=0)
    local_elapsed, local_latency = timed([lambda a=a: env.step(a) for a in plan])
    env.close()
    baseline = args.steps / local_elapsed

    port = free_port()
    server = start_server(port, args.sessions)
    try:
        with EnvSimClient(f"http://127.0.0.1:{port}") as client:
            session = client.create_session(seed=0).id
            single_elapsed, single_latency = timed(
                [lambda a=a: client.step(session, a) for a in plan]
            )
            client.reset(session, seed=0)
            raw = http.client.HTTPConnection("127.0.0.1", port)
            raw_elapsed, raw_latency = timed([lambda a=a: raw_step(raw, session, a) for a in plan])
            raw.close()
            client.reset(session, seed=0)
            batches = [plan[i : i + BATCH] for i in range(0, len(plan), BATCH)]
            batch_elapsed, batch_latency = timed(
                [lambda b=b: client.steps(session, b) for b in batches]
            )
            client.delete_session(session)
            before = rss_mib(server.pid)
            for seed in range(args.sessions):
                client.create_session(seed=seed)
            after = rss_mib(server.pid)
    finally:
        server.terminate()
        server.wait(timeout=30)

    print(f"{args.steps} steps, frame skip 4; latency per call in ms")
    print(f"{'run':<28}{'steps/s':>9}{'p50':>9}{'p99':>9}{'vs local':>8}")
    row("in-process ZeldaEnv.step", args.steps, local_elapsed, local_latency, baseline)
    row("HTTP, single steps (httpx)", args.steps, single_elapsed, single_latency, baseline)
    row("HTTP, single (http.client)", args.steps, raw_elapsed, raw_latency, baseline)
    row(f"HTTP, batches of {BATCH}", args.steps, batch_elapsed, batch_latency, baseline)
    local_p50 = np.percentile(local_latency, 50)
    print(
        f"single-step p50 over in-process: {np.percentile(single_latency, 50) - local_p50:.2f} ms with httpx, "
        f"{np.percentile(raw_latency, 50) - local_p50:.2f} ms with http.client"
    )
    print(
        f"server RSS: {before:.0f} MiB -> {after:.0f} MiB with {args.sessions} sessions: {(after - before) / args.sessions:.1f} MiB per session"
    )


if __name__ == "__main__":
    main()

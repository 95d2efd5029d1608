"""Benchmark the console's live map under load: env steps/s with 0 and with 20 SSE clients.

    .venv/bin/python benchmarks/bench_console.py [--envs 4] [--every 32] [--clients 20]
        [--window 6] [--rounds 3]

Real parts: Redis (127.0.0.1:6379), the console served by uvicorn in its own process, the
clients (streaming /v1/positions/stream over HTTP, like browsers) in another process, and
real envs (koholint/Zelda-v1, PositionPublisherWrapper every N steps) stepped in this process
as one env runner steps its envs. Windows without and with clients alternate (`--rounds`
times each, after a warm-up) so the machine's background load hits both alike. Prints env
steps/s per window, the median ratio with/without clients, positions delivered per second
(all clients together) and end-to-end lag (env step -> client) p50/p99.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import socket
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


PINNED = {"on": False, "nice": 0}


def _relay_core() -> None:
    """The console and the clients on the last core, the envs on the others (--pin), and at a
    lower priority (--nice): they are other pods and other machines in a deployment, not the
    env runner's CPU."""
    if PINNED["on"]:
        os.sched_setaffinity(0, {os.cpu_count() - 1})  # type: ignore[operator]
    if PINNED["nice"]:
        os.nice(PINNED["nice"])


def start_console(stream: str, port: int) -> subprocess.Popen[bytes]:
    environment = {**os.environ, "KOHOLINT_CONSOLE_REDIS_URL": "redis://127.0.0.1:6379/0",
                   "KOHOLINT_CONSOLE_POSITIONS_STREAM": stream, "KOHOLINT_CONSOLE_LOG_LEVEL": "WARNING"}  # fmt: skip
    command = [sys.executable, "-m", "uvicorn", "--factory", "console.app:main_app", "--port",
               str(port), "--log-level", "warning", "--timeout-graceful-shutdown", "2"]  # fmt: skip
    process = subprocess.Popen(command, env=environment, cwd=ROOT, preexec_fn=_relay_core)
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/readyz").status_code == 200:
                httpx.get(f"http://127.0.0.1:{port}/v1/map", timeout=120)  # rendered (or cached)
                return process
        except httpx.HTTPError:
            time.sleep(0.2)
    process.kill()
    raise RuntimeError("the console did not start")


async def _client(url: str, lags: list[float], counts: list[int]) -> None:
    """One browser's EventSource: HTTP/1.1 on a raw asyncio connection, chunked transfer and SSE
    parsed by hand, as a browser's native parser does. (httpx's line iterator cost the 20
    clients 12% of a core, which on this 2-core machine came out of the envs' share: the
    browsers are other machines in a deployment.)"""
    host, port = url.removeprefix("http://").split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    writer.write(f"GET /v1/positions/stream HTTP/1.1\r\nHost: {host}\r\n"
                 "Accept: text/event-stream\r\n\r\n".encode())  # fmt: skip
    try:
        head = await reader.readuntil(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 200"), head[:200]
        assert b"transfer-encoding: chunked" in head.lower(), head
        buffer = b""
        while True:
            size = int((await reader.readline()).strip() or b"0", 16)
            buffer += (await reader.readexactly(size + 2))[:-2]
            *events, buffer = buffer.split(b"\n\n")
            for event in events:
                if event.startswith(b"event: positions\ndata: "):
                    now = time.time()
                    batch = json.loads(event[23:])
                    counts.append(len(batch))
                    lags.extend(now - item["sent_at"] for item in batch)
    finally:
        writer.close()


def run_clients(url: str, clients: int, stop: Any, out: str, pin: bool, nice: int) -> None:
    """In its own process (importing only httpx, like a browser would hold nothing of ours):
    `clients` SSE streams until `stop` is set; lags, counts and seconds to `out`."""
    PINNED["on"], PINNED["nice"] = pin, nice
    _relay_core()
    lags: list[float] = []
    counts: list[int] = []

    async def main() -> float:
        tasks = [asyncio.ensure_future(_client(url, lags, counts)) for _ in range(clients)]
        started = time.monotonic()
        while not stop.is_set():
            await asyncio.sleep(0.05)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        return time.monotonic() - started

    seconds = asyncio.run(main())
    result = {"lags": lags, "events": sum(counts), "seconds": seconds, "cpu": time.process_time()}
    Path(out).write_text(json.dumps(result))


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def wait_for_clients(url: str, clients: int) -> None:
    deadline = time.monotonic() + 60
    while httpx.get(url + "/v1/positions/recent?limit=1").json()["clients"] < clients:
        if time.monotonic() > deadline:
            raise RuntimeError(f"{clients} clients did not connect")
        time.sleep(0.1)
    time.sleep(0.5)  # past their history


def relay_counters(url: str) -> dict[str, float]:
    """The console's own counts (received, delivered, clients dropped) from /metrics."""
    counters = {}
    for line in httpx.get(url + "/metrics").text.splitlines():
        if line.startswith(("console_positions_", "console_clients_dropped_total")):
            name, value = line.rsplit(" ", 1)
            counters[name] = float(value)
    return counters


def step_for(envs: list[Any], seconds: float, random: Any) -> tuple[float, float]:
    """Step the envs round-robin for `seconds`: env steps per wall second, and per second of
    this thread's CPU (what the machine's other load cannot change)."""
    steps, started, cpu = 0, time.perf_counter(), time.thread_time()
    while time.perf_counter() - started < seconds:
        for env in envs:
            _, _, terminated, truncated, _ = env.step(int(random.integers(0, 9)))
            if terminated or truncated:
                env.reset()
        steps += len(envs)
    return steps / (time.perf_counter() - started), steps / (time.thread_time() - cpu)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--envs", type=int, default=4)
    parser.add_argument("--every", type=int, default=32, help="publish every N steps per env")
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--window", type=float, default=6.0, help="seconds per measured window")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--no-pin", dest="pin", action="store_false",
        help="do not pin the console and clients to the last core, the envs to the others",
    )  # fmt: skip
    parser.add_argument(
        "--nice", type=int, default=0,
        help="run the console and the clients at this niceness (e.g. 19: as if on other machines)",
    )  # fmt: skip
    args = parser.parse_args()
    PINNED["nice"] = args.nice
    cores = os.cpu_count() or 1
    PINNED["on"] = args.pin = args.pin and cores >= 2
    if args.pin:
        os.sched_setaffinity(0, set(range(cores - 1)))
    # Imported here: the clients' process (spawned, importing this module) stays light.
    import numpy as np
    import redis

    from koholint.bus import POSITIONS_MAX_LENGTH, RedisBus
    from koholint.env.wrappers import PositionPublisher, PositionPublisherWrapper
    from koholint.env.zelda import ZeldaEnv

    client = redis.Redis()
    stream = f"bench.positions.{uuid.uuid4().hex}"
    port = free_port()
    console = start_console(stream, port)
    url = f"http://127.0.0.1:{port}"
    publisher = PositionPublisher(RedisBus(client, max_length=POSITIONS_MAX_LENGTH), stream=stream)
    envs = [
        PositionPublisherWrapper(ZeldaEnv(start_state="start_of_play"), publisher, run="bench",
                                 env_id=str(index), every=args.every, source="bench")
        for index in range(args.envs)
    ]  # fmt: skip
    random = np.random.default_rng(0)
    for index, env in enumerate(envs):
        env.reset(seed=index)
    context = multiprocessing.get_context("spawn")
    without, with_clients, results = [], [], []
    counters: dict[str, float] = {}
    console_cpus: list[float] = []
    try:
        step_for(envs, 2.0, random)  # warm-up
        for round_index in range(args.rounds):
            without.append(step_for(envs, args.window, random))
            out = f"/tmp/bench-console-{uuid.uuid4().hex}.json"
            stop = context.Event()
            clients = context.Process(
                target=run_clients, args=(url, args.clients, stop, out, args.pin, args.nice)
            )
            clients.start()
            wait_for_clients(url, args.clients)
            console_cpu = cpu_seconds(console.pid)
            with_clients.append(step_for(envs, args.window, random))
            console_cpus.append((cpu_seconds(console.pid) - console_cpu) / args.window)
            stop.set()
            clients.join(30)
            results.append(json.loads(Path(out).read_text()))
            counters = relay_counters(url)
            Path(out).unlink()
            print(f"round {round_index + 1}: {without[-1][0]:6.0f} steps/s ({without[-1][1]:6.0f} per CPU s) "
                  f"without clients, {with_clients[-1][0]:6.0f} ({with_clients[-1][1]:6.0f}) with {args.clients}",
                  flush=True)  # fmt: skip
    finally:
        publisher.close()
        console.terminate()
        try:
            console.wait(10)
        except subprocess.TimeoutExpired:
            console.kill()
        client.delete(stream)
    report(args, without, with_clients, results, publisher)
    clients_cpu = sum(float(r["cpu"]) for r in results) / sum(float(r["seconds"]) for r in results)
    print(f"CPU while the clients listen: console {statistics.median(console_cpus) * 100:.0f}% of a "
          f"core, the {args.clients} clients {clients_cpu * 100:.0f}%")  # fmt: skip
    dropped = sum(v for k, v in counters.items() if k.startswith("console_clients_dropped_total"))
    print(f"console: received {counters['console_positions_received_total']:.0f}, delivered "
          f"{counters['console_positions_delivered_total']:.0f}, clients dropped {dropped:.0f}")  # fmt: skip
    return 0


def report(
    args: argparse.Namespace,
    without: list[tuple[float, float]],
    with_clients: list[tuple[float, float]],
    results: list[dict[str, object]],
    publisher: Any,
) -> None:
    lags = sorted(lag for result in results for lag in result["lags"])  # type: ignore[attr-defined]
    delivered = sum(int(result["events"]) for result in results)  # type: ignore[call-overload]
    seconds = sum(float(result["seconds"]) for result in results)  # type: ignore[arg-type]
    print(f"\nenvs {args.envs}, publish every {args.every} steps, {args.clients} SSE clients, "
          f"{args.rounds} rounds of {args.window:.0f} s each way, pinned: {args.pin}, nice: {args.nice}")  # fmt: skip
    for index, what in ((0, "env steps/s"), (1, "env steps per CPU second")):
        before = statistics.median(value[index] for value in without)
        after = statistics.median(value[index] for value in with_clients)
        print(f"{what} median: {before:.0f} without clients, {after:.0f} with: "
              f"ratio {after / before:.3f} ({(1 - after / before) * 100:+.1f}% drop)")  # fmt: skip
    print(
        f"published {publisher.published} events, dropped {publisher.dropped}, failed {publisher.failed}"
    )
    print(f"delivered to clients: {delivered / seconds:.0f} events/s in all "
          f"({delivered / seconds / args.clients:.0f} per client)")  # fmt: skip
    if lags:
        p50, p99 = lags[len(lags) // 2], lags[min(len(lags) - 1, int(len(lags) * 0.99))]
        print(
            f"end-to-end lag (env step -> client): p50 {p50 * 1000:.1f} ms, p99 {p99 * 1000:.1f} ms"
        )


if __name__ == "__main__":
    raise SystemExit(main())

"""Planner backends side by side: decisions/s, decision latency, and the share of dialog and
puzzle starts each one clears.

Each run loads a start state in a local GameBoy (dialog starts: INTERACT up opens the
dialog), then runs the autopilot (switch + macros) with the backend until the game leaves
dialog/puzzle or the budget (32 macros, 6,000 frames) runs out. The local backend talks to
`koholint serve llm-local` (started here on a free port unless --local-url is given).

    .venv/bin/python benchmarks/bench_planner.py --runs 5
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

import httpx

from koholint.game.emulator import GameBoy
from koholint.planning.autopilot import Budget, run_autopilot
from koholint.planning.backends import make_backend
from koholint.planning.executor import MacroExecutor
from koholint.planning.macros import Interact
from koholint.planning.memory import SessionMemory

STARTS = {"before_npc": True, "before_chest": True, "before_shop": True, "before_puzzle": False}
BUDGET = Budget(max_macros=32, max_frames=6000)


def start_local_server() -> tuple[subprocess.Popen[bytes], str]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    koholint = Path(sys.executable).with_name("koholint")
    process = subprocess.Popen(
        [str(koholint), "serve", "llm-local", "--port", str(port)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        env={**os.environ, "KOHOLINT_LLM_LOCAL_N_THREADS": "2"},
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/readyz", timeout=1).is_success:
                return process, url
        except httpx.TransportError:
            pass
        time.sleep(0.5)
    process.kill()
    raise RuntimeError("llm-local did not become ready in 120 s")


def bench(backend_name: str, runs: int, local_url: str) -> dict[str, object]:
    backend = make_backend(backend_name, base_url=local_url)
    cleared: dict[str, int] = defaultdict(int)
    latencies: list[float] = []
    frames: list[int] = []
    with GameBoy() as gameboy:
        for name, opens_dialog in STARTS.items():
            for run in range(runs):
                gameboy.reset(name)
                if opens_dialog:
                    MacroExecutor(gameboy).execute(Interact(direction="up"))
                report = run_autopilot(
                    gameboy, backend, SessionMemory(), budget=BUDGET, seed=1000 * run
                )
                cleared[name] += report.cleared
                frames.append(report.frames)
                latencies += [step.decision.latency_ms for step in report.steps]
    total = len(STARTS) * runs
    return {
        "backend": backend_name,
        "decisions": len(latencies),
        "per_s": 1000 * len(latencies) / sum(latencies),
        "p50": statistics.median(latencies),
        "p90": statistics.quantiles(latencies, n=10)[-1] if len(latencies) > 1 else latencies[0],
        "cleared": dict(cleared),
        "share": sum(cleared.values()) / total,
        "runs": runs,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=5, help="runs per start state")
    parser.add_argument("--backends", default="rules,local")
    parser.add_argument("--local-url", default="", help="a running llm-local server")
    args = parser.parse_args()
    server = None
    local_url = args.local_url
    if "local" in args.backends and not local_url:
        server, local_url = start_local_server()
    try:
        rows = [bench(name, args.runs, local_url) for name in args.backends.split(",")]
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=30)
    print(f"{args.runs} runs per start; starts: {', '.join(STARTS)}")
    print(
        "| backend | decisions | decisions/s | p50 ms | p90 ms | "
        + " | ".join(STARTS)
        + " | cleared |"
    )
    print("| --- | ---: | ---: | ---: | ---: | " + " | ".join("---:" for _ in STARTS) + " | ---: |")
    for row in rows:
        per_start = " | ".join(f"{row['cleared'].get(s, 0)}/{row['runs']}" for s in STARTS)  # type: ignore[attr-defined]
        print(
            f"| {row['backend']} | {row['decisions']} | {row['per_s']:,.0f} | {row['p50']:.2f} | "
            f"{row['p90']:.2f} | {per_start} | {100 * row['share']:.0f}% |"  # type: ignore[operator]
        )


if __name__ == "__main__":
    main()

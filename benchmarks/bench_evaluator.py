"""Evaluator backends: segments/s and p50 latency per segment for `rules` and `local`, the
rules backend's throughput against the export rate measured in the same run, and the
agreement between the rules judges and the local (SmolLM2) judges on the same segments.

Segments are made here: the real env on the cartridge, a random policy, every episode
recorded by ``SegmentRecorder`` (frames on) into a local store through ``ExportQueue``, as
the trainer does. The export rate is measured while making them: one env recording *every*
episode, the worst case (the trainer records one episode in ``export_every_episodes`` = 20).
The local backend talks to `koholint serve llm-local` (started here unless --local-url).

    .venv/bin/python benchmarks/bench_evaluator.py --segments 32 --local-segments 4
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import numpy as np

from evaluator.config import Settings
from evaluator.judges import fleiss_kappa, make_judges
from evaluator.scoring import Evaluator
from koholint.bus import MemoryBus
from koholint.env.export import ExportQueue
from koholint.env.wrappers import SegmentRecorder
from koholint.env.zelda import Action, ZeldaEnv
from koholint.schemas.evaluator import ScoreRecord
from koholint.store import LocalStore

SEGMENT_STEPS = 256  # the trainer's default segment_steps
TRAINER_EXPORT_EVERY = 20  # the trainer's default export_every_episodes


def make_segments(store: LocalStore, count: int, episode_steps: int) -> tuple[list[str], float]:
    """`count` segments of a random policy; returns their prefixes and the export rate (seg/s)."""
    exporter = ExportQueue(store, capacity=256)
    env = SegmentRecorder(
        ZeldaEnv(max_episode_steps=episode_steps), exporter, run="bench", every=1,
        segment_steps=SEGMENT_STEPS,
    )  # fmt: skip
    rng = np.random.default_rng(0)
    started = time.perf_counter()
    for episode in range(-(-count * SEGMENT_STEPS // episode_steps)):
        env.reset(seed=episode)
        done = False
        while not done:
            _, _, terminated, truncated, _ = env.step(int(rng.integers(len(Action))))
            done = terminated or truncated
    env.close()
    exporter.flush()
    rate = exporter.counts["written"] / (time.perf_counter() - started)
    exporter.close()
    prefixes = [
        k.rsplit("/", 1)[0] for k in store.list("episodes/bench/") if k.endswith("manifest.json")
    ]
    return prefixes, rate


def bench(evaluator: Evaluator, prefixes: list[str], batch_size: int) -> dict[str, object]:
    """Throughput over batches, and latency of each segment scored alone."""
    started = time.perf_counter()
    records: list[ScoreRecord] = []
    for start in range(0, len(prefixes), batch_size):
        report = evaluator.evaluate(prefixes[start : start + batch_size])
        records += [r.record for r in report.results if r.record is not None]
    throughput = len(records) / (time.perf_counter() - started)
    return {"segments_per_s": throughput, "records": records}


def latency_p50(make: object, prefixes: list[str]) -> float:
    """p50 ms of one segment scored alone (a fresh judge config each time, so nothing is cached)."""
    latencies = []
    for offset, prefix in enumerate(prefixes):
        evaluator = make(1000 + offset)  # type: ignore[operator]
        started = time.perf_counter()
        evaluator.evaluate([prefix])
        latencies.append((time.perf_counter() - started) * 1000)
        evaluator.close()
    return statistics.median(latencies)


def start_local_server(threads: int) -> tuple[subprocess.Popen[bytes], str]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    process = subprocess.Popen(
        [str(Path(sys.executable).with_name("koholint")), "serve", "llm-local", "--port", str(port)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        env={**os.environ, "KOHOLINT_LLM_LOCAL_N_THREADS": str(threads)},
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


def agreement(rules: list[ScoreRecord], local: list[ScoreRecord]) -> dict[str, object]:
    """Label agreement (share and Fleiss' kappa of the two raters) per judge and ensemble."""
    by_prefix = {record.prefix: record for record in rules}
    rows: dict[str, list[list[str]]] = {"state": [], "progress": [], "ensemble": []}
    for record in local:
        other = by_prefix[record.prefix]
        for judge in ("state", "progress"):
            labels = [next(j.label for j in r.judges if j.judge == judge) for r in (other, record)]
            if None not in labels:
                rows[judge].append(labels)  # type: ignore[arg-type]
        if record.label is not None and other.label is not None:
            rows["ensemble"].append([other.label, record.label])
    return {
        name: (
            f"{sum(a == b for a, b in pairs)}/{len(pairs)} agree, kappa {fleiss_kappa(pairs)}"
            if pairs else "no pairs (local abstained)"
        )
        for name, pairs in rows.items()
    }  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--segments", type=int, default=32, help="segments for the rules backend")
    parser.add_argument(
        "--local-segments", type=int, default=4, help="segments for local (0: skip)"
    )
    parser.add_argument("--samples", type=int, default=3, help="M for rules")
    parser.add_argument("--local-samples", type=int, default=1, help="M for local")
    parser.add_argument("--episode-steps", type=int, default=1024)
    parser.add_argument("--local-url", default="", help="a running llm-local; default: start one")
    # One thread: llama.cpp's spinning threads slow down many times over on a busy core.
    parser.add_argument(
        "--local-threads", type=int, default=1, help="llm-local's llama.cpp threads"
    )
    args = parser.parse_args()
    store = LocalStore(tempfile.mkdtemp(prefix="bench-evaluator-"))
    prefixes, export_rate = make_segments(store, args.segments, args.episode_steps)
    print(f"made {len(prefixes)} segments of {SEGMENT_STEPS} steps with frames; export rate "
          f"(one env, every episode recorded): {export_rate:.2f} segments/s")  # fmt: skip

    def rules(seed: int) -> Evaluator:
        settings = Settings(samples=args.samples, seed=seed)
        return Evaluator(store, MemoryBus(), make_judges("rules"), settings)

    result = bench(rules(0), prefixes, batch_size=16)
    rules_rate = float(result["segments_per_s"])  # type: ignore[arg-type]
    rules_p50 = latency_p50(rules, prefixes[:16])
    trainer_rate = export_rate / TRAINER_EXPORT_EVERY
    print(f"rules (M={args.samples}): {rules_rate:.1f} segments/s, p50 {rules_p50:.1f} ms/segment; "
          f"{rules_rate / export_rate:.1f}x the every-episode export rate, "
          f"{rules_rate / trainer_rate:.0f}x at the trainer's default (1 episode in {TRAINER_EXPORT_EVERY})")  # fmt: skip
    if args.local_segments <= 0:
        return 0
    process = None
    url = args.local_url
    if not url:
        process, url = start_local_server(args.local_threads)
    try:
        subset = prefixes[: args.local_segments]

        def local(seed: int) -> Evaluator:
            judges = make_judges("local", base_url=url, timeout_s=300)
            settings = Settings(samples=args.local_samples, seed=seed, in_flight_per_route=1)
            return Evaluator(store, MemoryBus(), judges, settings)

        local_result = bench(local(0), subset, batch_size=len(subset))
        local_p50 = latency_p50(local, subset[:2])
        records: list[ScoreRecord] = local_result["records"]  # type: ignore[assignment]
        outcomes = [s.outcome for r in records for j in r.judges for s in j.samples]
        print(f"local (SmolLM2, M={args.local_samples}): {local_result['segments_per_s']:.3f} "
              f"segments/s, p50 {local_p50 / 1000:.1f} s/segment; answers "
              f"{ {o: outcomes.count(o) for o in sorted(set(outcomes))} }")  # fmt: skip
        rules_records = result["records"]
        print(f"agreement rules vs local: {agreement(rules_records, records)}")  # type: ignore[arg-type]
    finally:
        if process is not None:
            process.terminate()
            process.wait(timeout=30)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

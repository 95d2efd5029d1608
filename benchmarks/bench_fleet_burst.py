"""The loop's training burst through the containers against the same burst in one process.

    docker compose -f compose.yaml -f compose.test.yaml up --wait      # (make images first)
    .venv/bin/python benchmarks/bench_fleet_burst.py --trainer-url http://127.0.0.1:8002 \
        [--steps 4096] [--rounds 3]

Each round runs the burst twice, alternating so background load hits both alike: once in the
trainer container (POST /v1/runs with the fleet's token, export to the fleet's S3 and segments
announced on its Redis, timed from the request until the run reports finished), once as
`koholint train` in this process's venv with a local store (the same settings, export on).
Prints each wall time, the medians and their ratio (container / in process). Both include
starting Ray and the envs: what a user waits for.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
import uuid

import httpx

BURST = {
    "num_env_runners": 0, "envs_per_env_runner": 2, "train_batch_size": 512,
    "minibatch_size": 128, "num_epochs": 2, "segment_steps": 64, "curiosity_weight": 0,
    "archive_restart_every": 0, "checkpoint_every_iterations": 1, "export_every_episodes": 1,
    "env": {"max_episode_steps": 128},
}  # fmt: skip
FLAGS = ["--workers=0", "--envs=2", "--batch=512", "--minibatch=128", "--num-epochs=2",
         "--segment-steps=64", "--curiosity-weight=0", "--archive-restart-every=0",
         "--checkpoint-every-iterations=1", "--export-every-episodes=1",
         "--env-max-episode-steps=128"]  # fmt: skip


def in_container(url: str, token: str, steps: int) -> float:
    run = f"bench-{uuid.uuid4().hex[:8]}"
    started = time.perf_counter()
    response = httpx.post(f"{url}/v1/runs", json={"run": run, "total_env_steps": steps, **BURST},
                          headers={"Authorization": f"Bearer {token}"}, timeout=60)  # fmt: skip
    response.raise_for_status()
    while True:
        status = httpx.get(f"{url}/v1/runs/{run}", timeout=30).json()
        if status["state"] in ("finished", "failed", "stopped"):
            break
        time.sleep(0.2)
    if status["state"] != "finished":
        raise SystemExit(f"run {run} ended {status['state']}: {status.get('error')}")
    return time.perf_counter() - started


def in_process(steps: int) -> float:
    with tempfile.TemporaryDirectory() as work:
        started = time.perf_counter()
        subprocess.run([sys.executable, "-m", "koholint.cli", "train", "--run", "bench",
                        "--steps", str(steps), "--store", f"{work}/store", "--run-dir", work,
                        *FLAGS], check=True, capture_output=True)  # fmt: skip
        return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trainer-url", default="http://127.0.0.1:8002")
    parser.add_argument("--token", default="koholint-local-only")
    parser.add_argument("--steps", type=int, default=4096)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    container, process = [], []
    for round_ in range(args.rounds):
        container.append(in_container(args.trainer_url, args.token, args.steps))
        process.append(in_process(args.steps))
        print(f"round {round_ + 1}: container {container[-1]:.1f} s, in process {process[-1]:.1f} s",
              flush=True)  # fmt: skip
    ratio = statistics.median(container) / statistics.median(process)
    print(f"{args.steps} env steps with export: container median {statistics.median(container):.1f} s, "
          f"in process {statistics.median(process):.1f} s, ratio {ratio:.2f}")  # fmt: skip


if __name__ == "__main__":
    main()

"""Shortening phase 1's wins: checks replayed from a state on the kept prefix against full
replays from the start (the baseline, measured in the same run on the same trajectories).

Both must give the same shortened trajectory; the env steps are what a run's budget counts
(``--phase both`` adds them to phase 1's), the wall time is this machine's.

    .venv/bin/python benchmarks/bench_shorten.py explore-seed0 explore-seed1 explore-seed2 \
        explore-seed0-health
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from koholint.explore.shorten import Shortened, WinCheck, shorten, winner

WIN = Path(__file__).parent / "results" / "win"


def timed(actions: bytes, check: WinCheck, prefixed: bool) -> tuple[Shortened, float]:
    started = time.perf_counter()
    result = shorten(actions, check if prefixed else check.full)
    return result, time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "names", nargs="+", help="trajectories under benchmarks/results/win (no .actions)"
    )
    args = parser.parse_args()
    print(
        "| win | steps → shortened | checks | env steps, full replays | from the prefix | ratio | wall, full → prefix |"
    )
    print("| --- | --- | ---: | ---: | ---: | ---: | --- |")
    for name in args.names:
        actions = (WIN / f"{name}.actions").read_bytes()
        full, prefix = winner(), winner()
        baseline, full_s = timed(actions, full, prefixed=False)
        result, prefix_s = timed(actions, prefix, prefixed=True)
        if result != baseline:
            raise SystemExit(f"{name}: the prefixed checks shortened differently: a bug")
        print(f"| {name} | {len(actions):,} → {len(result.actions):,} | {result.replays} | "
              f"{full.steps:,} | {prefix.steps:,} | {prefix.steps / full.steps:.2f} | "
              f"{full_s:.0f} s → {prefix_s:.0f} s |", flush=True)  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

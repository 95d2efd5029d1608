"""Shortening phase 1's wins: checks replayed from a state on the kept prefix against full
replays from the start (the baseline, measured in the same run on the same trajectories).

Both must give the same shortened trajectory; the env steps are what a run's budget counts
(``--phase both`` adds them to phase 1's), the wall time is this machine's. The last
columns are the shortening phase 2 gets: the loops cut first, then the runs.

    .venv/bin/python benchmarks/bench_shorten.py explore-seed0 explore-seed1 explore-seed2 \
        explore-seed0-health
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from koholint.teachers.shorten import Shortened, WinCheck, shorten, winner

WIN = Path(__file__).parent / "results" / "win"


def timed(actions: bytes, check: WinCheck, how: str) -> tuple[Shortened, float]:
    """Shortened with every check a full replay (`full`), from the prefix (`prefix`), or
    from the prefix with the loops cut first (`loops`: what phase 2 gets)."""
    started = time.perf_counter()
    if how == "full":
        result = shorten(actions, check.full)
    else:
        result = shorten(actions, check, loops=how == "loops")
    return result, time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "names", nargs="+", help="trajectories under benchmarks/results/win (no .actions)"
    )
    args = parser.parse_args()
    print("| win | steps → shortened | checks | env steps, full replays | from the prefix | ratio "
          "| wall, full → prefix | loops cut too: steps | its env steps |")  # fmt: skip
    print("| --- | --- | ---: | ---: | ---: | ---: | --- | ---: | ---: |")
    for name in args.names:
        actions = (WIN / f"{name}.actions").read_bytes()
        full, prefix, loops = winner(), winner(), winner()
        baseline, full_s = timed(actions, full, "full")
        result, prefix_s = timed(actions, prefix, "prefix")
        if result != baseline:
            raise SystemExit(f"{name}: the prefixed checks shortened differently: a bug")
        looped, _ = timed(actions, loops, "loops")
        print(f"| {name} | {len(actions):,} → {len(result.actions):,} | {result.replays} | "
              f"{full.steps:,} | {prefix.steps:,} | {prefix.steps / full.steps:.2f} | "
              f"{full_s:.0f} s → {prefix_s:.0f} s | {len(looped.actions):,} | {loops.steps:,} |",
              flush=True)  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

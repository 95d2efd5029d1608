"""Shorten a phase-1 win as `--phase both` does, run to its end; print its env steps.

.venv/bin/python benchmarks/tools/shorten_cost.py win.actions [OUT.actions]
"""

import sys
import time
from pathlib import Path

from koholint.teachers.shorten import shorten, winner

actions = Path(sys.argv[1]).read_bytes()
check = winner(budget=None)
started = time.perf_counter()
result = shorten(actions, check)
print(f"{len(actions):,} -> {len(result.actions):,} steps; {check.steps:,} env steps, "
      f"{result.replays} checks, {time.perf_counter() - started:.0f} s")  # fmt: skip
if len(sys.argv) > 2:
    Path(sys.argv[2]).write_bytes(result.actions)

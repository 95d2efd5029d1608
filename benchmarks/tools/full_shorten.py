"""The shortening as `koholint train --phase both` runs it, on a phase-1 win, on the world
phase 1 explored ($KOHOLINT_ROM: a ROM or a world folder; unset, the cartridge).

KOHOLINT_ROM=WORLD .venv/bin/python benchmarks/tools/full_shorten.py WIN.actions OUT.actions [BUDGET]
"""

import json
import sys
import time
from pathlib import Path

from koholint.teachers.shorten import shorten, winner


def main(source: Path, out: Path, budget: int) -> None:
    actions = source.read_bytes()
    check = winner(budget=budget)
    began = time.perf_counter()
    short = shorten(actions, check)
    out.write_bytes(short.actions)
    print(json.dumps({"from": len(actions), "to": len(short.actions), "replays": short.replays,
                      "env_steps": check.steps,
                      "seconds": round(time.perf_counter() - began)}))  # fmt: skip


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3]) if len(sys.argv) > 3 else 600_000)

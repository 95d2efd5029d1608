"""The phase-2 step at which the curriculum's start first reached each demo step, read from
a `koholint train` log's progress lines.

    .venv/bin/python benchmarks/tools/start_moves.py RUN.log > start-moves.txt
"""

import re
import sys
from pathlib import Path

PROGRESS = re.compile(r"\s(\d+)/\d+ steps.*start (\d+)/(\d+)")


def first_moves(log: str) -> dict[str, int]:
    seen: dict[str, int] = {}
    for line in log.replace("\r", "\n").splitlines():
        match = PROGRESS.search(line)
        if match and match.group(2) not in seen:
            seen[match.group(2)] = int(match.group(1))
    return seen


if __name__ == "__main__":
    print("phase2_env_steps start_step")
    for start, steps in first_moves(Path(sys.argv[1]).read_text(errors="replace")).items():
        print(steps, start)

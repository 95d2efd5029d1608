"""What the walker teaches on a demonstration: its room exits, the walk states of each, the
rooms it leaves by two ways with the same progress, and the walks' clean share.

    .venv/bin/python benchmarks/tools/walks_report.py DEMO.actions [EPISODES]
"""

import sys
import time
from pathlib import Path

import numpy as np

from koholint.env.encoding import SLOT_INDEX
from koholint.env.zelda import EnvConfig
from koholint.explore.demo import demo_transitions
from koholint.teachers.walks import PROGRESS_SLOTS, demo_exits, walk_steps, walk_transitions


def main(path: Path, episodes: int) -> None:
    actions = path.read_bytes()
    config = EnvConfig.parse({"sticky_action_probability": 0.25, "reward_mode": "progress"})
    demo = demo_transitions(actions, config)
    columns = [SLOT_INDEX[slot] for slot in PROGRESS_SLOTS]
    progress = np.rint(demo.observations[:, columns] * 255).astype(int)
    wanted = walk_steps(demo, 8)
    exits_by_progress: dict[tuple, set] = {}
    entered = 0
    for exit_ in demo_exits(demo):
        starts = [step for step, chosen in wanted if chosen == exit_]
        print(f"{entered:4d}-{exit_.last:4d} room {exit_.room} -> {exit_.to} from {exit_.cell} "
              f"{exit_.facing:5s} walk states {starts}")  # fmt: skip
        key = (exit_.room, tuple(progress[exit_.last]))
        exits_by_progress.setdefault(key, set()).add(exit_.to)
        entered = exit_.last + 1
    two_ways = {key[0]: sorted(to) for key, to in exits_by_progress.items() if len(to) > 1}
    print("rooms left two ways with the same progress:", two_ways)
    began = time.perf_counter()
    report = walk_transitions(actions, demo, config, episodes=episodes)
    print(f"{len(actions)}-step demo: {report.starts} walk states, {report.clean} of "
          f"{report.episodes} walks clean, {len(report.transitions.actions)} steps, "
          f"{time.perf_counter() - began:.1f} s")  # fmt: skip


if __name__ == "__main__":
    main(Path(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 2)

"""The scripted fighter (the teacher ``fights``) from every fight start of a win, on the
world $KOHOLINT_ROM names (unset: the cartridge): how many of its fights are clean, per
start, as the teacher plays them or (``--straight``) walking straight at the enemy as the
fighter did before it took the path-finder's steps.

    KOHOLINT_ROM=WORLD .venv/bin/python benchmarks/tools/fight_starts.py WIN.actions [EPISODES] [--straight]

One JSON line per start (its demo step, room and the clean count), then the totals.
"""

import json
import sys
from pathlib import Path

from koholint.env.zelda import EnvConfig
from koholint.explore.demo import demo_transitions
from koholint.teachers.base import healed_states, rooms
from koholint.teachers.fights import fight_action, fight_episode, fight_step, fight_steps


def main(path: Path, episodes: int, straight: bool) -> None:
    actions = path.read_bytes()
    config = EnvConfig.parse({"sticky_action_probability": 0.25, "reward_mode": "progress"})
    demo = demo_transitions(actions, config)
    where = rooms(demo.observations)
    step = (lambda env, observation: fight_action(observation)) if straight else fight_step
    total = 0
    starts = healed_states(actions, config, fight_steps(demo, 8), 8)
    for start in starts:
        clean = sum(fight_episode(start.state, config, seed, step) is not None
                    for seed in range(episodes))  # fmt: skip
        total += clean
        print(json.dumps({"step": start.step, "room": where[start.step], "clean": clean,
                          "episodes": episodes}), flush=True)  # fmt: skip
    print(json.dumps({"starts": len(starts), "episodes": episodes * len(starts), "clean": total,
                      "fighter": "straight" if straight else "path-finder"}))  # fmt: skip


if __name__ == "__main__":
    arguments = [a for a in sys.argv[1:] if a != "--straight"]
    main(Path(arguments[0]), int(arguments[1]) if len(arguments) > 1 else 4,
         "--straight" in sys.argv)  # fmt: skip

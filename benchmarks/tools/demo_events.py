"""Replay a demonstration and print its room changes and reward events (kills, damage, keys,
items, the win), one line each with the step.

    .venv/bin/python benchmarks/tools/demo_events.py WIN.actions
"""

import sys
from pathlib import Path

from koholint.explore.runner import exploration_env

EVENTS = ("kill", "damage", "key", "item", "death", "win")


def main(path: Path) -> None:
    actions = path.read_bytes()
    env = exploration_env(start_state="start_of_play", max_episode_steps=len(actions) + 10)
    env.reset(seed=0)
    room = None
    for step, action in enumerate(actions):
        _, _, terminated, truncated, info = env.step(action)
        if info["room_key"] != room:
            room = info["room_key"]
            print(step, "room", room)
        events = {k: v for k, v in info["reward_components"].items() if v and k in EVENTS}
        if events:
            print(step, events)
        if terminated or truncated:
            break
    env.close()


if __name__ == "__main__":
    main(Path(sys.argv[1]))

"""Replay a demo and print per-step reward events (room changes, kills, damage, keys)."""
import sys
from pathlib import Path
from koholint.explore.runner import exploration_env

actions = Path(sys.argv[1]).read_bytes()
env = exploration_env(start_state="start_of_play", max_episode_steps=len(actions) + 10)
env.reset(seed=0)
room = None
for step, a in enumerate(actions):
    _, _, term, trunc, info = env.step(a)
    c = info["reward_components"]
    ev = {k: v for k, v in c.items() if v and k in ("kill", "damage", "key", "item", "death", "win")}
    if info["room_key"] != room:
        room = info["room_key"]
        print(step, "room", room)
    if ev:
        print(step, ev)
    if term or trunc:
        break

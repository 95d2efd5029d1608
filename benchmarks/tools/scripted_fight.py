"""The scripted fighter (koholint.teachers.fights.fight_action, without the walk to the key)
from a healed demo state, under sticky actions: does chase-and-swing clear the room?

    .venv/bin/python benchmarks/tools/scripted_fight.py WIN.actions STEP EPISODES [STICKY]
"""

import sys
from pathlib import Path

import numpy as np

from koholint.env.encoding import SLOT_INDEX
from koholint.env.zelda import ZeldaEnv
from koholint.explore.curriculum import demo_states
from koholint.explore.runner import exploration_env
from koholint.schemas.env import Action
from koholint.teachers.fights import fight_action

MAX_STEPS = 600


def healed_state(path: Path, step: int) -> bytes:
    actions = path.read_bytes()[: step + 1]
    env = exploration_env(start_state="start_of_play", max_episode_steps=2 * len(actions) + 2)
    state = demo_states(actions, env, every=step, heal=True)[-1].state
    env.close()
    return state


def one_fight(state: bytes, sticky: float, seed: int) -> tuple[float, float, int, bool, int]:
    """Kills, health points lost, steps, died, enemies at the start."""
    env = ZeldaEnv(start_state=state, sticky_action_probability=sticky,
                   max_episode_steps=MAX_STEPS, reward_mode="progress", info_state=False)  # fmt: skip
    observation, _ = env.reset(seed=seed)
    enemies = round(float(observation[SLOT_INDEX["enemy_count"]]) * 16)
    kills = damage = 0.0
    steps, died = 0, False
    while steps < MAX_STEPS and kills < enemies and not died:
        action = fight_action(observation)
        observation, _, terminated, truncated, info = env.step(
            Action.NOOP if action is None else action
        )
        components = info["reward_components"]
        kills, damage, steps = kills + components["kill"], damage + components["damage"], steps + 1
        died = bool(components["death"]) or terminated or truncated
    env.close()
    return kills, damage, steps, died, enemies


def main(path: Path, step: int, episodes: int, sticky: float) -> None:
    state = healed_state(path, step)
    results = [one_fight(state, sticky, seed) for seed in range(episodes)]
    print("kills per episode", [r[0] for r in results])
    print("cleared", sum(r[0] >= r[4] for r in results), "/", episodes,
          "mean damage", np.mean([r[1] for r in results]),
          "mean steps", np.mean([r[2] for r in results]),
          "deaths", sum(r[3] for r in results))  # fmt: skip


if __name__ == "__main__":
    main(Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]),
         float(sys.argv[4]) if len(sys.argv) > 4 else 0.25)  # fmt: skip

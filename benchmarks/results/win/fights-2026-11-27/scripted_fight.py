"""A scripted fighter from a healed demo state: can chase-and-swing clear the room under
sticky actions? (koholint.explore.fights.fight_action; the walk to the key left out)
    python scripted_fight.py DEMO.actions STEP EPISODES [sticky]"""
import sys
from pathlib import Path
import numpy as np
from koholint.env.encoding import SLOT_INDEX as S
from koholint.env.zelda import ZeldaEnv
from koholint.explore.curriculum import demo_states
from koholint.explore.fights import fight_action
from koholint.explore.runner import exploration_env
from koholint.schemas.env import Action

path, step, episodes = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
sticky = float(sys.argv[4]) if len(sys.argv) > 4 else 0.25
actions = path.read_bytes()[: step + 1]
env0 = exploration_env(start_state="start_of_play", max_episode_steps=2 * len(actions) + 2)
state = demo_states(actions, env0, every=step, heal=True)[-1].state
env0.close()

def choose(obs):
    action = fight_action(obs)
    return Action.NOOP if action is None else action

results = []
for seed in range(episodes):
    env = ZeldaEnv(start_state=state, sticky_action_probability=sticky, max_episode_steps=600,
                   reward_mode="progress", info_state=False)
    obs, _ = env.reset(seed=seed)
    kills = damage = 0
    enemies = round(float(obs[S["enemy_count"]]) * 16)
    for t in range(600):
        obs, r, term, trunc, info = env.step(choose(obs))
        c = info["reward_components"]
        kills += c["kill"]; damage += c["damage"]
        if c["death"] or term or trunc or kills >= enemies:
            break
    results.append((kills, damage, t + 1, c["death"], enemies))
    env.close()
print("kills per episode", [r[0] for r in results])
print("cleared", sum(r[0] >= r[4] for r in results), "/", episodes,
      "mean damage", np.mean([r[1] for r in results]), "mean steps", np.mean([r[2] for r in results]),
      "deaths", sum(r[3] for r in results))

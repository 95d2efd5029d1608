"""`koholint play` with its demo starts healed as the curriculum's `heal_starts` heals them.

    .venv/bin/python play_healed.py --policy checkpoint:DIR --start demo:WIN.actions@576 \
        --episodes 10 --workers 1 --max-steps 880 --export OUT
"""

import sys
from pathlib import Path

import koholint.baselines.trained as trained
from koholint.cli import main
from koholint.explore import curriculum
from koholint.explore.runner import exploration_env


def healed_state(path: Path, step: int) -> bytes:
    """The state `step` actions into the trajectory, saved with Link's hearts full."""
    actions = path.read_bytes()
    env = exploration_env(start_state="start_of_play", max_episode_steps=2 * len(actions) + 2)
    env.reset(seed=0)
    for action in actions[:step]:
        env.step(action)
    return curriculum._saved(env.unwrapped, True)  # type: ignore[arg-type]


trained.demo_state = healed_state  # one worker: the play runs in this process
sys.exit(main(["play", *sys.argv[1:]]))

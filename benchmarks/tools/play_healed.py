"""`koholint play` with its demo starts healed as the curriculum's `heal_starts` heals them.

    .venv/bin/python benchmarks/tools/play_healed.py --policy checkpoint:DIR --start demo:WIN.actions@576 \
        --episodes 10 --workers 1 --max-steps 880 --export OUT
"""

import sys
from pathlib import Path

import koholint.baselines.trained as trained
from koholint.cli import main
from koholint.explore.curriculum import demo_states
from koholint.explore.runner import exploration_env


def healed_state(path: Path, step: int) -> bytes:
    """The curriculum's own healed start `step` actions into the trajectory."""
    actions = path.read_bytes()[: step + 1]  # demo_states replays all but the last action
    env = exploration_env(start_state="start_of_play", max_episode_steps=2 * len(actions) + 2)
    last = demo_states(actions, env, every=step, heal=True)[-1]
    if last.step != step:
        raise SystemExit(f"step {step} is mid-transition: the curriculum saves no start there")
    return last.state


trained.demo_state = healed_state  # one worker: the play runs in this process
sys.exit(main(["play", *sys.argv[1:]]))

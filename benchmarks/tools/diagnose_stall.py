"""Where robustification stalled: play from a demo step of a phase-1 win, open loop (the
rest of the demo's actions) or at random, in the training env (sticky actions, hybrid
control with the rules planner), and count wins, keys, deaths and what the reward paid.

    .venv/bin/python benchmarks/tools/diagnose_stall.py \
        benchmarks/results/win/explore-seed0.actions 768 --play demo --sticky 0.25 --episodes 50
    .venv/bin/python benchmarks/tools/diagnose_stall.py \
        benchmarks/results/win/explore-seed0.actions 768 --play random --episodes 20
"""

from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path

import numpy as np

from koholint.env.wrappers import PlannerControlWrapper
from koholint.env.zelda import REWARD_MODES, ZeldaEnv, milestones
from koholint.explore.trajectory import winning_demo
from koholint.planning.backends import RulesBackend


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("trajectory", type=Path)
    parser.add_argument("step", type=int, help="a demo step (a multiple of 8)")
    parser.add_argument("--play", choices=("demo", "random"), default="demo")
    parser.add_argument("--sticky", type=float, default=0.25)
    parser.add_argument("--episodes", type=int, default=50)
    parser.add_argument("--reward-mode", choices=tuple(REWARD_MODES), default="progress+coverage")
    args = parser.parse_args()
    actions = args.trajectory.read_bytes()
    state = next(s for s in winning_demo(actions, every=8) if s.step == args.step)
    budget = 2 * (len(actions) - args.step) + 64  # the curriculum's episode budget
    zelda = ZeldaEnv(start_state=state.state, sticky_action_probability=args.sticky,
                     cartridge_seed=0, info_state=False, reward_mode=args.reward_mode,
                     max_episode_steps=budget)  # fmt: skip
    env = PlannerControlWrapper(zelda, RulesBackend())
    rng = np.random.default_rng(0)
    totals: Counter[str] = Counter()
    returns = {True: [], False: []}
    for seed in range(args.episodes):
        env.reset(seed=seed)
        episode_return, paid = 0.0, Counter()
        script = iter(actions[args.step :])
        while True:
            action = next(script, 0) if args.play == "demo" else int(rng.integers(0, 7))
            _, reward, terminated, truncated, info = env.step(action)
            episode_return += float(reward)
            paid.update({k: v for k, v in info["reward_components"].items() if v})
            if terminated or truncated:
                break
        reached = milestones(zelda.gameboy.memory, zelda.raw_state)
        totals.update(won=int(terminated), key=int(reached["key"]),
                      died=int(paid["death"] > 0), left_dungeon=int(zelda.raw_state.indoor == 0))  # fmt: skip
        returns[bool(paid["death"] > 0)].append(episode_return)
    print(f"{args.trajectory.name}@{args.step} play={args.play} sticky={args.sticky} "
          f"budget={budget} episodes={args.episodes}: {dict(totals)}")  # fmt: skip
    for died, values in returns.items():
        if values:
            print(f"  return ({args.reward_mode}) of episodes that {'died' if died else 'lived'}: "
                  f"mean {np.mean(values):.2f} (n={len(values)})")  # fmt: skip


if __name__ == "__main__":
    main()

"""Win rate of a trained policy file, with the policy's sampling and the env's sticky
actions drawn from independent streams.

`koholint play` (libs/koholint/baselines/trained.py, 2026-11-23) seeds both with the same
seed: ``np.random.default_rng(seed)`` for the policy and ``env.reset(seed=seed)``, which
gives the env the very same generator, and each draws one number a step, so the policy's
draw equals the env's sticky draw at every step: whenever an action is not repeated, the
policy's draw was >= 0.25, and the actions in the lowest quarter of its distribution are
never played. This script draws the policy's numbers from ``default_rng([seed, 1])``.

    .venv/bin/python benchmarks/results/win/evaluate_policy.py benchmarks/results/win/policy \\
        --start start_of_play --episodes 100 --workers 2
"""

from __future__ import annotations

import argparse
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

from koholint.baselines.trained import PlaySettings, load_policy, parse_start, play_env


def play(policy_path: str, start: str, seed: int) -> tuple[int, bool, int]:
    policy = load_policy(Path(policy_path))
    settings = PlaySettings(start=start, episodes=1)
    env = play_env(policy, settings, parse_start(start))
    rng = np.random.default_rng([seed, 1])  # independent of the env's own seed-`seed` stream
    observation, info = env.reset(seed=seed)
    steps, terminated, truncated = 0, False, False
    while not (terminated or truncated):
        observation, _, terminated, truncated, info = env.step(policy.act(observation, rng))
        steps += 1
    env.close()
    return seed, bool(terminated), steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("policy")
    parser.add_argument("--start", default="start_of_play")
    parser.add_argument("--episodes", type=int, default=100)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    seeds = range(args.episodes)
    with ProcessPoolExecutor(args.workers) as pool:
        results = list(pool.map(play, [args.policy] * len(seeds), [args.start] * len(seeds), seeds))
    wins = [steps for _, won, steps in results if won]
    print(f"{args.policy} from {args.start}: {len(wins)}/{len(results)} won "
          f"({len(wins) / len(results):.2f}); winning episodes took "
          f"{int(np.median(wins)) if wins else '-'} steps (median)")  # fmt: skip


if __name__ == "__main__":
    main()

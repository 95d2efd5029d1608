"""Benchmark training throughput against stepping the same wrapped env alone.

    .venv/bin/python benchmarks/bench_trainer.py [--steps 8192]

In one run: (1) the baseline — one koholint/Zelda-v0 stepped with random actions in this
process; (2) PPO training, 1 env runner x 2 envs, all features (curiosity, Go-Explore
restarts, export every 20th episode); (3) the same without curiosity and export. Prints
env steps/s of each and the ratio to the baseline.
"""

from __future__ import annotations

import argparse
import tempfile
import time

import numpy as np

from koholint.env import ZeldaEnv


def baseline(steps: int) -> float:
    env = ZeldaEnv({"max_episode_steps": 1024, "info_state": False})
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    started = time.perf_counter()
    for _ in range(steps):
        _, _, terminated, truncated, _ = env.step(int(rng.integers(9)))
        if terminated or truncated:
            env.reset()
    env.close()
    return steps / (time.perf_counter() - started)


def training(steps: int, **overrides: object) -> float:
    from trainer.config import TrainConfig
    from trainer.run import TrainingRun

    folder = tempfile.mkdtemp()
    config = TrainConfig.from_mapping(
        {"total_env_steps": steps, "store_url": f"{folder}/store", "run_dir": f"{folder}/runs", **overrides}, environ={}
    )
    rates: list[float] = []
    TrainingRun(config).run(on_iteration=lambda status: rates.append(status.steps_per_second))
    return rates[-1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=8192)
    args = parser.parse_args()
    rows = [("one env, random actions, in-process", baseline(args.steps))]
    rows.append(("PPO, 1 runner x 2 envs, all features", training(args.steps)))
    rows.append(("PPO, no curiosity, no export", training(args.steps, curiosity_weight=0.0, export_every_episodes=0)))
    print(f"{args.steps} env steps each; steps/s include Ray start-up of the env runner, not of Ray")
    print(f"{'run':<40}{'steps/s':>9}{'vs env':>8}")
    for name, rate in rows:
        print(f"{name:<40}{rate:>9.0f}{rate / rows[0][1]:>8.2f}")


if __name__ == "__main__":
    main()

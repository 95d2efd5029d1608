"""Benchmark the trainer's throughput against Stable-Baselines3 PPO and the bare env.

    .venv/bin/python benchmarks/bench_trainer.py [--steps 8192]

In one run, all with 2 envs, rollouts of 512 steps per env, batches of 1,024, minibatches
of 256, 4 epochs, torch on one thread: (1) one koholint/Zelda-v0 stepped with random
actions (the env's ceiling here); (2) Stable-Baselines3 PPO (DummyVecEnv) on the same env;
(3) the trainer (RLlib, 1 env runner) with all features (curiosity, Go-Explore, export);
(4) the trainer without curiosity and export. Prints env steps/s and the ratio to SB3.
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


SHAPE = {"envs_per_env_runner": 2, "rollout_fragment_length": 512, "train_batch_size": 1024,
         "minibatch_size": 256, "num_epochs": 4, "num_env_runners": 1}  # fmt: skip
ENV = {"max_episode_steps": 1024, "info_state": False, "sticky_action_probability": 0.25}


def stable_baselines(steps: int) -> float:
    import torch
    from stable_baselines3 import PPO
    from stable_baselines3.common.vec_env import DummyVecEnv

    torch.set_num_threads(1)
    vec = DummyVecEnv([lambda: ZeldaEnv(ENV) for _ in range(SHAPE["envs_per_env_runner"])])
    model = PPO("MlpPolicy", vec, n_steps=SHAPE["rollout_fragment_length"], batch_size=SHAPE["minibatch_size"],
                n_epochs=SHAPE["num_epochs"], learning_rate=3e-4, device="cpu", seed=0, verbose=0)  # fmt: skip
    started = time.perf_counter()
    model.learn(total_timesteps=steps)
    elapsed = time.perf_counter() - started
    vec.close()
    return steps / elapsed


def training(steps: int, **overrides: object) -> float:
    from trainer.config import TrainConfig
    from trainer.run import TrainingRun

    folder = tempfile.mkdtemp()
    config = TrainConfig.from_mapping(
        {
            "total_env_steps": steps,
            "store_url": f"{folder}/store",
            "run_dir": f"{folder}/runs",
            **SHAPE,
            **overrides,
        },
        environ={},
    )
    rates: list[float] = []
    TrainingRun(config).run(on_iteration=lambda status: rates.append(status.steps_per_second))
    return rates[-1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=8192)
    args = parser.parse_args()
    rows = [("one env, random actions (ceiling)", baseline(args.steps))]
    rows.append(("Stable-Baselines3 PPO", stable_baselines(args.steps)))
    rows.append(("trainer, all features", training(args.steps)))
    rows.append(
        (
            "trainer, no curiosity, no export",
            training(args.steps, curiosity_weight=0.0, export_every_episodes=0),
        )
    )
    print(f"{args.steps} env steps each")
    print(f"{'run':<36}{'steps/s':>9}{'vs SB3':>8}")
    for name, rate in rows:
        print(f"{name:<36}{rate:>9.0f}{rate / rows[1][1]:>8.2f}")


if __name__ == "__main__":
    main()

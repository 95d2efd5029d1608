"""Benchmark the trainer's throughput against Stable-Baselines3 PPO and the bare env.

    .venv/bin/python benchmarks/bench_trainer.py [--steps 16384]

In one run, batches of 1,024 env steps (2 envs x 512 or 8 envs x 128), minibatches of 256,
4 epochs, torch on one thread: one koholint/Zelda-v1 stepped with random actions (the env's
ceiling here); then for 2 and for 8 envs, Stable-Baselines3 PPO (DummyVecEnv) and the
trainer (RLlib new API stack) with the same shapes — plain PPO (no curiosity, archive or
export: what SB3 does) through RLlib's default connectors and through the trainer's lean
sampling path, with 1 runner of 8 envs and 2 runners of 4, and the defaults with every
feature. Prints env steps/s and the ratio to SB3 with the same number of envs.
"""

from __future__ import annotations

import argparse
import tempfile
import time

import numpy as np

from koholint.env.zelda import ZeldaEnv


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


BATCH = 1024
SHAPE = {"train_batch_size": BATCH, "minibatch_size": 256, "num_epochs": 4}
PLAIN = {"curiosity_weight": 0.0, "archive_restart_every": 0, "export_every_episodes": 0}
# Plain PPO sampled through RLlib's default connectors and SyncVectorEnv (the baseline of
# the trainer's lean sampling path).
DEFAULT_SAMPLING = {**PLAIN, "lean_sampling": False}
ENV = {"max_episode_steps": 1024, "info_state": False, "sticky_action_probability": 0.25}


def shape(envs: int, runners: int = 1) -> dict[str, int]:
    return {**SHAPE, "num_env_runners": runners, "envs_per_env_runner": envs // runners,
            "rollout_fragment_length": BATCH // envs}  # fmt: skip


def stable_baselines(steps: int, envs: int) -> float:
    import torch
    from stable_baselines3 import PPO
    from stable_baselines3.common.vec_env import DummyVecEnv

    torch.set_num_threads(1)
    vec = DummyVecEnv([lambda: ZeldaEnv(ENV) for _ in range(envs)])
    model = PPO("MlpPolicy", vec, n_steps=BATCH // envs, batch_size=SHAPE["minibatch_size"],
                n_epochs=SHAPE["num_epochs"], learning_rate=3e-4, device="cpu", seed=0, verbose=0)  # fmt: skip
    started = time.perf_counter()
    model.learn(total_timesteps=steps)
    elapsed = time.perf_counter() - started
    vec.close()
    return steps / elapsed


def training(steps: int, **overrides: object) -> float:
    from trainer.ppo.config import Deployment, resolve
    from trainer.ppo.run import TrainingRun

    folder = tempfile.mkdtemp()
    config = resolve({"total_env_steps": steps, **overrides}, environ={})
    deployment = Deployment(store_url=f"{folder}/store", run_dir=f"{folder}/runs")
    rates: list[float] = []
    TrainingRun(config, deployment).run(
        on_iteration=lambda status: rates.append(status.steps_per_second)
    )
    return rates[-1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=16384)
    args = parser.parse_args()
    steps = args.steps
    ceiling = baseline(steps)
    rows: list[tuple[str, float, float]] = [("one env, random actions (ceiling)", ceiling, 0.0)]
    for envs in (2, 8):
        sb3 = stable_baselines(steps, envs)
        rows.append((f"Stable-Baselines3 PPO, {envs} envs", sb3, sb3))
        runs = [(f"trainer, plain PPO, 1 runner x {envs} envs", shape(envs), PLAIN)]
        if envs == 8:
            runs = [
                (
                    "trainer, plain PPO, 1 runner x 8 envs, RLlib's connectors",
                    shape(8),
                    DEFAULT_SAMPLING,
                ),
                *runs,
                (
                    "trainer, plain PPO, 2 runners x 4 envs, RLlib's connectors",
                    shape(8, 2),
                    DEFAULT_SAMPLING,
                ),
                ("trainer, plain PPO, 2 runners x 4 envs (the default)", shape(8, 2), PLAIN),
                ("trainer defaults: 2 runners x 4 envs, all features", shape(8, 2), {}),
            ]
        for name, shaped, settings in runs:
            rows.append((name, training(steps, **shaped, **settings), sb3))
    print(f"{steps} env steps each")
    print("| run | env steps/s | vs SB3 (same envs) | vs ceiling |")
    print("| --- | ---: | ---: | ---: |")
    for name, rate, sb3 in rows:
        ratio = f"{rate / sb3:.2f}" if sb3 else ""
        print(f"| {name} | {rate:,.0f} | {ratio} | {rate / ceiling:.2f} |")


if __name__ == "__main__":
    main()

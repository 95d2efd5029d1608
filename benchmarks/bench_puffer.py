"""PufferLib's PPO (PuffeRL) on koholint/Zelda-v1: env steps/s, printed as one JSON line.

    make bench-venv-puffer    # PufferLib pins torch==2.9.0: it runs in a venv of its own
    PYTHONPATH=libs:services .venv-puffer/bin/python benchmarks/bench_puffer.py \\
        --steps 16384 --envs 8 --backend serial|multiprocessing [--workers 2] [--vec-batch 8] \\
        [--batch 1024] [--infos episode-end|every-step]

``bench_trainer.py`` runs this for its PufferLib rows. The same env, shapes and
hyperparameters as the trainer's plain PPO row there: the env settings of ``bench_trainer.ENV``
(sticky 0.25, 1,024-step episodes, ``info_state`` off), batches of 1,024 env steps (8 envs x
a horizon of 128; ``--batch 8192``: a horizon of 1,024), minibatches of a quarter of the
batch (256; 2,048), 4 epochs, lr 3e-4, gamma 0.99, GAE lambda 0.95, clip 0.2, entropy 0.01,
torch on one thread, PufferLib's ``models.Default`` with hidden size 64 (one GELU layer of 64,
linear policy and value heads). PufferLib's own choices stay: its advantage (V-trace with
clips 1, which is GAE on the first pass), its reward clip to [-1, 1] and its dashboard
(redirected away from stdout). Prioritised minibatches are off (``prio_alpha`` 0: uniform),
the learning rate is not annealed and nothing is compiled. The clock runs from the first
``evaluate()`` to the end of the ``train()`` that passes --steps; building the envs and the
first reset are outside it, as in SB3's row.

The env hands PufferLib an info only at an episode's end (:class:`EpisodeEndInfo`), as
PufferLib's own envs do: an info on every step is collected and averaged by its ``Serial``
on every step and, with ``Multiprocessing``, pickled through a pipe by every worker on every
step. ``--infos every-step`` passes the env's own info dict through instead.

What PufferLib 3.0.23's ``Multiprocessing`` options do here (``pufferlib/vector.py``): with
2 workers of 4 envs, ``--vec-batch 8`` (the default: every env) waits for both workers each
step; ``--vec-batch 4`` takes one worker's envs while the other steps (its async mode).
``zero_copy`` picks a path only when a step takes more than one worker and fewer than all,
so with 2 workers it changes nothing. Workers and the learner's ``recv`` poll shared memory
(a worker sleeps only after 0.5 s idle): 2 workers and the learner are three busy processes
on 2 cores, while ``--workers 1`` (8 envs in one worker, sync only) keeps to two.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import os
import sys
import tempfile
import time
from typing import Any

import gymnasium as gym
import numpy as np
from bench_trainer import BATCH, SHAPE, make_env, minibatch_size

from koholint import ENV_ID

BACKENDS = {"serial": "Serial", "multiprocessing": "Multiprocessing"}
INFOS = ("episode-end", "every-step")


class EpisodeEndInfo(gym.Wrapper[np.ndarray, Any, np.ndarray, Any]):
    """The env's info only at an episode's end, as PufferLib's own envs return it.

    ``reset`` and every step before the last return ``{}``; the step that terminates or
    truncates returns the episode's summary: ``episode_return`` (the sum of its rewards),
    ``episode_length`` (its steps), ``rooms`` and ``cells`` (distinct rooms and coverage
    cells visited) and ``milestones`` (what the game reached), from the env's last info.
    """

    def __init__(self, env: gym.Env[np.ndarray, Any]) -> None:
        super().__init__(env)
        self.episode_return, self.episode_length = 0.0, 0

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None
              ) -> tuple[np.ndarray, dict[str, Any]]:  # fmt: skip
        observation, _ = self.env.reset(seed=seed, options=options)
        self.episode_return, self.episode_length = 0.0, 0
        return observation, {}

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        observation, reward, terminated, truncated, info = self.env.step(action)
        self.episode_return += float(reward)
        self.episode_length += 1
        if not (terminated or truncated):
            return observation, float(reward), terminated, truncated, {}
        summary = {"episode_return": self.episode_return, "episode_length": self.episode_length,
                   "rooms": info["rooms"], "cells": info["cells"],
                   "milestones": info.get("milestones", {})}  # fmt: skip
        return observation, float(reward), terminated, truncated, summary


def make_puffer_env(infos: str = "episode-end") -> gym.Env[np.ndarray, Any]:
    """bench_trainer's env, its info handed over as ``infos`` says (see INFOS)."""
    if infos not in INFOS:
        raise ValueError(f"infos={infos!r}: choose one of {', '.join(INFOS)}")
    env = make_env()
    return EpisodeEndInfo(env) if infos == "episode-end" else env


def train_config(steps: int, envs: int, data_dir: str, batch: int = BATCH) -> dict[str, Any]:
    """PuffeRL's config (the keys pufferl.py reads), set to the trainer's plain PPO."""
    return {
        "env": ENV_ID,
        "seed": 0,
        "torch_deterministic": False,
        "device": "cpu",
        "cpu_offload": False,
        "compile": False,
        "compile_mode": "default",
        "compile_fullgraph": False,
        "precision": "float32",
        "use_rnn": False,
        "total_timesteps": -(-steps // batch) * batch,  # whole batches, at least one, as RLlib
        "batch_size": batch,
        "bptt_horizon": batch // envs,  # one row of the buffer per env per batch
        "minibatch_size": minibatch_size(batch),
        "max_minibatch_size": minibatch_size(batch),
        "update_epochs": SHAPE["num_epochs"],
        "optimizer": "adam",
        "learning_rate": 3e-4,
        "anneal_lr": False,
        "adam_beta1": 0.9,
        "adam_beta2": 0.999,
        "adam_eps": 1e-8,
        "gamma": 0.99,
        "gae_lambda": 0.95,
        "clip_coef": 0.2,
        "vf_coef": 0.5,
        "vf_clip_coef": 0.2,
        "ent_coef": 0.01,
        "max_grad_norm": 0.5,
        "vtrace_rho_clip": 1.0,
        "vtrace_c_clip": 1.0,
        "prio_alpha": 0.0,  # uniform minibatches, as PPO
        "prio_beta0": 1.0,
        "checkpoint_interval": 1_000_000,  # PuffeRL still saves one at the end
        "data_dir": data_dir,
    }


def make_vecenv(backend: str, envs: int, workers: int, vec_batch: int, infos: str) -> Any:
    import pufferlib.emulation
    import pufferlib.vector

    creator = functools.partial(
        pufferlib.emulation.GymnasiumPufferEnv,
        env_creator=functools.partial(make_puffer_env, infos),
    )
    if backend == "serial":
        return pufferlib.vector.make(creator, backend=pufferlib.vector.Serial, num_envs=envs)
    return pufferlib.vector.make(
        creator,
        backend=pufferlib.vector.Multiprocessing,
        num_envs=envs,
        num_workers=workers,
        batch_size=vec_batch or envs,
    )


def measure(steps: int, envs: int, backend: str, workers: int, vec_batch: int,
            batch: int = BATCH, infos: str = "episode-end") -> dict[str, Any]:  # fmt: skip
    import pufferlib.models
    import torch
    from pufferlib.pufferl import PuffeRL

    torch.set_num_threads(1)
    vecenv = make_vecenv(backend, envs, workers, vec_batch, infos)
    policy = pufferlib.models.Default(vecenv.driver_env, hidden_size=64)
    with tempfile.TemporaryDirectory() as data_dir:
        trainer = PuffeRL(train_config(steps, envs, data_dir, batch), vecenv, policy)
        try:
            started = time.perf_counter()
            while trainer.global_step < steps:
                trainer.evaluate()
                trainer.train()
            elapsed = time.perf_counter() - started
        finally:  # PuffeRL's utilization thread would keep a failed run's process alive
            trainer.utilization.stop()
            vecenv.close()
        sampled = trainer.global_step
    return {
        "backend": BACKENDS[backend],
        "workers": workers if backend != "serial" else 1,
        "vec_batch": vec_batch or envs,
        "envs": envs,
        "batch": batch,
        "infos": infos,
        "env_steps": sampled,
        "seconds": elapsed,
        "env_steps_per_second": sampled / elapsed,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=16384)
    parser.add_argument("--envs", type=int, default=8)
    parser.add_argument("--backend", choices=sorted(BACKENDS), default="serial")
    parser.add_argument("--workers", type=int, default=2, help="Multiprocessing's processes")
    parser.add_argument("--vec-batch", type=int, default=0,
                        help="envs per Multiprocessing recv (default: all; half is PufferLib's async mode)")  # fmt: skip
    parser.add_argument("--batch", type=int, default=BATCH,
                        help="env steps per PPO update (minibatches of a quarter of it)")  # fmt: skip
    parser.add_argument("--infos", choices=INFOS, default="episode-end",
                        help="hand PufferLib the env's info at episode ends only, or every step")  # fmt: skip
    args = parser.parse_args()
    # PuffeRL prints its dashboard to stdout; stdout carries only the result line.
    with open(os.devnull, "w") as quiet, contextlib.redirect_stdout(quiet):
        result = measure(args.steps, args.envs, args.backend, args.workers, args.vec_batch,
                         args.batch, args.infos)  # fmt: skip
    print(json.dumps(result), file=sys.stdout, flush=True)


if __name__ == "__main__":
    main()

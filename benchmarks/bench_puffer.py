"""PufferLib's PPO (PuffeRL) on koholint/Zelda-v1: env steps/s, printed as one JSON line.

    make bench-venv-puffer    # PufferLib pins torch==2.9.0: it runs in a venv of its own
    PYTHONPATH=libs:services .venv-puffer/bin/python benchmarks/bench_puffer.py \\
        --steps 16384 --envs 8 --backend serial|multiprocessing [--workers 2] [--vec-batch 8]

``bench_trainer.py`` runs this for its PufferLib rows. The same env, shapes and
hyperparameters as the trainer's plain PPO row there: the env settings of ``bench_trainer.ENV``
(sticky 0.25, 1,024-step episodes, ``info_state`` off), batches of 1,024 env steps (8 envs x
a horizon of 128), minibatches of 256, 4 epochs, lr 3e-4, gamma 0.99, GAE lambda 0.95, clip
0.2, entropy 0.01, torch on one thread, PufferLib's ``models.Default`` with hidden size 64
(one GELU layer of 64, linear policy and value heads). PufferLib's own choices stay: its
advantage (V-trace with clips 1, which is GAE on the first pass), its reward clip to [-1, 1]
and its dashboard (redirected away from stdout). Prioritised minibatches are off
(``prio_alpha`` 0: uniform), the learning rate is not annealed and nothing is compiled.
The clock runs from the first ``evaluate()`` to the end of the ``train()`` that passes
--steps; building the envs and the first reset are outside it, as in SB3's row.
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

import pufferlib.emulation
import pufferlib.models
import pufferlib.vector
import torch
from bench_trainer import BATCH, SHAPE, make_env
from pufferlib.pufferl import PuffeRL

from koholint import ENV_ID

BACKENDS = {"serial": "Serial", "multiprocessing": "Multiprocessing"}


def train_config(steps: int, envs: int, data_dir: str) -> dict[str, Any]:
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
        "total_timesteps": steps,
        "batch_size": BATCH,
        "bptt_horizon": BATCH // envs,  # one row of the buffer per env per batch
        "minibatch_size": SHAPE["minibatch_size"],
        "max_minibatch_size": SHAPE["minibatch_size"],
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


def make_vecenv(backend: str, envs: int, workers: int, vec_batch: int) -> Any:
    creator = functools.partial(pufferlib.emulation.GymnasiumPufferEnv, env_creator=make_env)
    if backend == "serial":
        return pufferlib.vector.make(creator, backend=pufferlib.vector.Serial, num_envs=envs)
    return pufferlib.vector.make(
        creator,
        backend=pufferlib.vector.Multiprocessing,
        num_envs=envs,
        num_workers=workers,
        batch_size=vec_batch or envs,
    )


def measure(steps: int, envs: int, backend: str, workers: int, vec_batch: int) -> dict[str, Any]:
    torch.set_num_threads(1)
    vecenv = make_vecenv(backend, envs, workers, vec_batch)
    policy = pufferlib.models.Default(vecenv.driver_env, hidden_size=64)
    with tempfile.TemporaryDirectory() as data_dir:
        trainer = PuffeRL(train_config(steps, envs, data_dir), vecenv, policy)
        started = time.perf_counter()
        while trainer.global_step < steps:
            trainer.evaluate()
            trainer.train()
        elapsed = time.perf_counter() - started
        sampled = trainer.global_step
        trainer.utilization.stop()
        vecenv.close()
    return {
        "backend": BACKENDS[backend],
        "workers": workers if backend != "serial" else 1,
        "vec_batch": vec_batch or envs,
        "envs": envs,
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
    args = parser.parse_args()
    # PuffeRL prints its dashboard to stdout; stdout carries only the result line.
    with open(os.devnull, "w") as quiet, contextlib.redirect_stdout(quiet):
        result = measure(args.steps, args.envs, args.backend, args.workers, args.vec_batch)
    print(json.dumps(result), file=sys.stdout, flush=True)


if __name__ == "__main__":
    main()

"""Benchmark the trainer's throughput against Stable-Baselines3 PPO and the bare env.

    .venv/bin/python benchmarks/bench_trainer.py [--steps 16384] [--rounds 1] [--connectors] [--nodes]

In one run, batches of 1,024 env steps (2 envs x 512 or 8 envs x 128), minibatches of 256,
4 epochs, torch on one thread: one koholint/Zelda-v1 stepped with random actions (the env's
ceiling here); then for 2 and for 8 envs, Stable-Baselines3 PPO (DummyVecEnv; with 8 envs
also SubprocVecEnv, one process per env: the fair multi-process comparison) and the trainer
(RLlib new API stack) with the same shapes: plain PPO (no curiosity, archive or export: what
SB3 does) and the defaults with every feature (RND curiosity, Go-Explore archive, export).
``--connectors`` adds plain PPO through RLlib's default connectors (the lean sampling path's
baseline); ``--nodes`` adds plain PPO 2 runners x 4 envs on a Ray cluster started with
``ray start`` on this machine: one node with 2 CPUs, then two nodes with 1 CPU each (the same
cores: the row shows the cost of a second node, not a speed-up). PufferLib is tried and its
absence explained. Prints env steps/s and the ratio to SB3 (DummyVecEnv) with as many envs.
``--feature-costs`` prints only the CPU time per env step of each feature on a runner's 4 envs
stepped in this process. ``--runner-ab`` measures only every feature with the trainer's
``LeanEnvRunner`` and with RLlib's ``SingleAgentEnvRunner``, alternated. ``--rounds N`` measures every row N times, the rows interleaved (on a shared machine a burst
of load then falls on several rows, not on one), and keeps each row's best.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

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


def make_env() -> ZeldaEnv:
    return ZeldaEnv(ENV)


def stable_baselines(steps: int, envs: int, processes: bool = False) -> float:
    import torch
    from stable_baselines3 import PPO
    from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv

    torch.set_num_threads(1)
    vector = SubprocVecEnv if processes else DummyVecEnv
    vec = vector([make_env for _ in range(envs)])
    model = PPO("MlpPolicy", vec, n_steps=BATCH // envs, batch_size=SHAPE["minibatch_size"],
                n_epochs=SHAPE["num_epochs"], learning_rate=3e-4, device="cpu", seed=0, verbose=0)  # fmt: skip
    started = time.perf_counter()
    model.learn(total_timesteps=steps)
    elapsed = time.perf_counter() - started
    vec.close()
    return steps / elapsed


def training(steps: int, ray_address: str = "", **overrides: object) -> float:
    from trainer.config import Deployment
    from trainer.ppo.config import TrainConfig
    from trainer.ppo.run import TrainingRun

    folder = tempfile.mkdtemp()
    config = TrainConfig.load({"total_env_steps": steps, **overrides}, environ={})
    deployment = Deployment(
        store_url=f"{folder}/store", run_dir=f"{folder}/runs", ray_address=ray_address
    )
    rates: list[float] = []
    TrainingRun(config, deployment).run(
        on_iteration=lambda status: rates.append(status.steps_per_second)
    )
    return rates[-1]


def runner_ab(steps: int, rounds: int) -> None:
    """Every feature (2 runners x 4 envs) sampled by LeanEnvRunner, then by RLlib's own
    SingleAgentEnvRunner (the lean path otherwise unchanged), alternated for `rounds`."""
    from trainer.ppo.rllib import algorithm

    lean = algorithm.lean_sampling_settings

    def rllib_runner(enabled: bool) -> dict[str, Any]:
        settings = lean(enabled)
        settings.pop("env_runner_cls", None)
        return settings

    try:
        for round_number in range(rounds):
            algorithm.lean_sampling_settings = lean
            mine = training(steps, **shape(8, 2))
            algorithm.lean_sampling_settings = rllib_runner
            theirs = training(steps, **shape(8, 2))
            print(f"round {round_number + 1}: LeanEnvRunner {mine:,.0f}, SingleAgentEnvRunner "
                  f"{theirs:,.0f} env steps/s: {mine / theirs:.2f}", flush=True)  # fmt: skip
    finally:
        algorithm.lean_sampling_settings = lean


def feature_costs(steps: int) -> None:
    """CPU time of the sampling thread per env step: the trainer's wrappers on a runner's 4
    envs, stepped in this process with random actions (no RLlib, no Ray: a local archive)."""
    import torch

    from koholint.env.export import ExportQueue
    from koholint.env.vector import make_vector_env
    from koholint.env.wrappers.curiosity import CuriosityVectorWrapper
    from koholint.explore.archive import Archive
    from koholint.store import open_store

    torch.set_num_threads(1)
    for features in ("none", "rnd", "go", "export", "rnd,go,export", "export every episode"):
        exporter = ExportQueue(open_store(f"{tempfile.mkdtemp()}/store"))
        every = 1 if features == "export every episode" else 20
        wrap = functools.partial(_feature_wrappers, features, Archive(), {}, exporter, every)
        curiosity = CuriosityVectorWrapper if "rnd" in features else None
        vector = make_vector_env(4, wrap=wrap, wrap_vector=curiosity, **ENV)
        vector.reset(seed=0)
        actions = np.random.default_rng(0).integers(0, 9, size=(steps // 4, 4))
        started = time.thread_time()
        for action in actions:
            vector.step(action)
        cost = (time.thread_time() - started) / steps * 1e6
        print(f"features {features}: {cost:.0f} us of sampling-thread CPU per env step")
        exporter.close()
        vector.close()


def _feature_wrappers(features: str, archive: Any, known: dict[Any, int], exporter: Any,
                      every: int, env: Any, index: int) -> Any:  # fmt: skip
    """What wrap_train_env puts around env `index` (curiosity wraps the vector env)."""
    from koholint.env.wrappers import SegmentRecorder
    from koholint.explore.restarts import GoExploreWrapper, LocalArchiveSource

    if "go" in features:
        env = GoExploreWrapper(env, LocalArchiveSource(archive), restart_every=4, known=known)
    if "export" in features:
        env = SegmentRecorder(env, exporter, run="profile", every=every)
    return env


def pufferlib_absence() -> str:
    """Why there is no PufferLib row (empty when it imports)."""
    try:
        import pufferlib  # noqa: F401
    except ImportError:
        return (
            "PufferLib: not installed. pufferlib 3.0.0 (the current release) is a source "
            "distribution whose build downloads Raylib from GitHub, which this machine cannot "
            "reach (only package registries); 2.0.2, the last wheel, pins numpy==1.23.3, "
            "gymnasium<=0.29.1 and gym<=0.23, which conflict with the project's numpy 2 and "
            "gymnasium 1.2.2."
        )
    return "PufferLib imports, but this benchmark has no PufferLib row yet."


def _ray_start(arguments: list[str], environment: dict[str, str]) -> None:
    ray = str(Path(sys.executable).with_name("ray"))
    command = [ray, "start", *arguments, "--num-gpus=0", "--disable-usage-stats"]
    subprocess.run(command, env=environment, check=True, capture_output=True, timeout=120)


def _processes_under(folder: str) -> set[int]:
    pids = set()
    for entry in os.listdir("/proc"):
        with contextlib.suppress(OSError):
            if entry.isdigit() and folder.encode() in Path(f"/proc/{entry}/cmdline").read_bytes():
                pids.add(int(entry))
    return pids


@contextlib.contextmanager
def local_cluster(cpus_per_node: list[int]) -> Iterator[str]:
    """A Ray cluster on this machine, one ``ray start`` node per entry; yields its address."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    environment = {**os.environ, "RAY_AUTH_MODE": "disabled"}
    environment["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "1"  # several nodes on one host
    os.environ.update(RAY_AUTH_MODE="disabled", RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER="1")
    folders = [tempfile.mkdtemp(prefix="kb-") for _ in cpus_per_node]
    address = f"127.0.0.1:{port}"
    try:
        for index, (cpus, folder) in enumerate(zip(cpus_per_node, folders, strict=True)):
            where = (
                ["--head", f"--port={port}", "--include-dashboard=false"]
                if index == 0
                else [f"--address={address}"]
            )
            _ray_start([*where, "--node-ip-address=127.0.0.1", f"--num-cpus={cpus}", f"--temp-dir={folder}"], environment)  # fmt: skip
        yield address
    finally:
        for folder in folders:
            for pid in _processes_under(folder):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            shutil.rmtree(folder, ignore_errors=True)


def cluster_row(steps: int, nodes: list[int]) -> float:
    """Plain PPO on a `ray start` cluster, driven from a fresh process: Ray keeps per-process
    state (its auth mode among it) from the local runs before."""
    environment = {key: value for key, value in os.environ.items() if not key.startswith("RAY_")}
    command = [sys.executable, __file__, "--steps", str(steps), "--cluster", *map(str, nodes)]
    result = subprocess.run(command, env=environment, capture_output=True, text=True, check=True)
    return float(result.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=16384)
    parser.add_argument(
        "--rounds", type=int, default=1, help="measure each row N times, keep the best"
    )
    parser.add_argument("--connectors", action="store_true", help="add RLlib's default connectors")
    parser.add_argument("--nodes", action="store_true", help="add 1 node vs 2 nodes rows")
    parser.add_argument("--cluster", type=int, nargs="+", help=argparse.SUPPRESS)
    parser.add_argument(
        "--feature-costs", action="store_true", help="only the per-step CPU cost of each feature"
    )
    parser.add_argument("--runner-ab", action="store_true",
                        help="only every feature with LeanEnvRunner vs RLlib's runner, per round")  # fmt: skip
    args = parser.parse_args()
    steps = args.steps
    if args.feature_costs:
        feature_costs(steps)
        return
    if args.runner_ab:
        runner_ab(steps, args.rounds)
        return
    if args.cluster:  # one cluster row, in a fresh process (see cluster_row)
        with local_cluster(args.cluster) as address:
            print(training(steps, ray_address=address, **shape(8, 2), **PLAIN))
        return
    runs = measured_rows(steps, args.connectors, args.nodes)
    rates: dict[str, list[float]] = {name: [] for name in runs}
    for round_number in range(args.rounds):  # rounds interleave the rows: load hits them alike
        for name, (measure, _) in runs.items():
            rates[name].append(measure())
            print(f"round {round_number + 1}: {name}: {rates[name][-1]:,.0f}", flush=True)
    best = {name: max(values) for name, values in rates.items()}
    print(f"{steps} env steps each, best of {args.rounds} round(s); ratios per round in brackets")
    print("| run | env steps/s | vs SB3 DummyVecEnv (same envs) | vs ceiling |")
    print("| --- | ---: | ---: | ---: |")
    for name, (_, baseline_row) in runs.items():
        ratio = ""
        if baseline_row:  # of the bests, then of each round's pair (measured minutes apart)
            rounds = ", ".join(
                f"{rate / base:.2f}"
                for rate, base in zip(rates[name], rates[baseline_row], strict=True)
            )
            ratio = f"{best[name] / best[baseline_row]:.2f} [{rounds}]"
        print(f"| {name} | {best[name]:,.0f} | {ratio} | {best[name] / best[CEILING]:.2f} |")
    print(pufferlib_absence())


CEILING = "one env, random actions (ceiling)"
SB3_2, SB3_8 = (
    "Stable-Baselines3 PPO, 2 envs (DummyVecEnv)",
    "Stable-Baselines3 PPO, 8 envs (DummyVecEnv)",
)


def measured_rows(
    steps: int, connectors: bool, nodes: bool
) -> dict[str, tuple[Callable[[], float], str]]:
    """Each row: how to measure it, and the row its ratio is taken against ("" for none)."""
    runs: dict[str, tuple[Callable[[], float], str]] = {
        CEILING: (lambda: baseline(steps), ""),
        SB3_2: (lambda: stable_baselines(steps, 2), SB3_2),
        "trainer, plain PPO, 1 runner x 2 envs": (
            lambda: training(steps, **shape(2), **PLAIN), SB3_2),
        # the rows compared with SB3 8 envs right after it: the least time for the load to change
        SB3_8: (lambda: stable_baselines(steps, 8), SB3_8),
        "trainer defaults: 2 runners x 4 envs, all features": (
            lambda: training(steps, **shape(8, 2)), SB3_8),
        "trainer, all features, overlap_sampling": (
            lambda: training(steps, **shape(8, 2), overlap_sampling=True), SB3_8),
        "trainer, plain PPO, 2 runners x 4 envs (the default)": (
            lambda: training(steps, **shape(8, 2), **PLAIN), SB3_8),
        "Stable-Baselines3 PPO, 8 envs (SubprocVecEnv)": (
            lambda: stable_baselines(steps, 8, processes=True), SB3_8),
    }  # fmt: skip
    if connectors:
        runs["trainer, plain PPO, 2 runners x 4 envs, RLlib's connectors"] = (
            lambda: training(steps, **shape(8, 2), **DEFAULT_SAMPLING), SB3_8)  # fmt: skip
    if nodes:
        for label, cpus in (("1 node x 2 CPUs", [2]), ("2 nodes x 1 CPU", [1, 1])):
            name = f"trainer, plain PPO, 2 runners x 4 envs, ray start cluster: {label}"
            runs[name] = (functools.partial(cluster_row, steps, cpus), SB3_8)
    return runs


if __name__ == "__main__":
    main()

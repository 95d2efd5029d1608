"""Benchmark the trainer's throughput against Stable-Baselines3, PufferLib and the bare env.

    .venv/bin/python benchmarks/bench_trainer.py [--steps 16384] [--rounds 1] [--out DIR]
        [--scale] [--connectors] [--nodes]

In one run, every learner with torch on one thread, minibatches of a quarter of the batch and
4 epochs: the env's two ceilings, one koholint/Zelda-v1 stepped with random actions on one
core, and one per core in parallel processes on every core this process may use
(``--cores``). Then, at batches of 1,024 env steps (2 envs x 512 or 8 envs x 128):
Stable-Baselines3 PPO with 2 and 8 envs (DummyVecEnv; with 8 also SubprocVecEnv, one process
per env); the trainer (RLlib new API stack) with the same shapes, plain PPO (no curiosity,
archive or export: what SB3 does) on 1 runner x 2 envs, 1 runner x 8 envs and 2 runners x 4
envs, and the defaults with every feature (RND curiosity, Go-Explore archive, export); and
PufferLib's PPO (``PuffeRL``, hidden 64) with 8 envs on its Serial backend and on
Multiprocessing, 1 worker of 8 envs (as many polling processes as 2 cores) and 2 workers of
4 (all 8 envs a step, or its async batches of 4). At batches of 8,192 (8 envs x 1,024,
minibatches of 2,048; 2 iterations at the default --steps): plain PPO on 1 runner x 8 envs
and on 2 runners x 4 envs, and PufferLib's Serial and Multiprocessing with 2 workers (all 8
envs a step).
PufferLib runs in ``bench_puffer.py`` in ``.venv-puffer`` (``make bench-venv-puffer``:
PufferLib pins its own torch), the env handing it infos at episode ends only, as PufferLib's
own envs do; without that venv its rows say how to make it.

Prints env steps/s, the ratio to SB3 (DummyVecEnv) with as many envs, to PufferLib's best
backend at batches of 1,024, to the all-cores ceiling, and to the row's own ceiling: what the
emulator does on the cores the row samples on (one process: the one-core ceiling; several:
the all-cores one); then the like-for-like ratios, each trainer row against the PufferLib
row that samples in as many processes at the same batch (1 runner x 8 envs against Serial:
one sampling process each). ``--out DIR`` also writes what it prints to DIR/output.txt and
the run's command, commit, date, machine, steps and rounds to DIR/manifest.json.

``--scale`` adds plain PPO with the 8 envs on 4 runners. ``--connectors`` adds plain PPO
through RLlib's default connectors (the lean sampling path's baseline); ``--nodes`` adds
plain PPO 2 runners x 4 envs on a Ray cluster started with ``ray start`` on this machine:
one node with 2 CPUs, then two nodes with 1 CPU each (the same cores: the row shows the cost
of a second node, not a speed-up).
``--feature-costs`` prints only the CPU time per env step of each feature on a runner's 4 envs
stepped in this process. ``--runner-ab`` measures only every feature with the trainer's
``LeanEnvRunner`` and with RLlib's ``SingleAgentEnvRunner``, alternated; ``--learner-ab``
plain PPO and every feature with ``LeanPPOTorchLearner`` and RLlib's ``PPOTorchLearner``.
``--bounds`` measures only the ceiling and plain PPO (2 runners x 4 envs) and takes the
iteration apart against 0.6 of the ceiling: the emulator's part, the runners' work beyond
it, the learner beyond a bare torch update of the same shapes, the synchronous floor.
``--against-tree PATH`` measures only the ceiling, plain PPO and every feature (2 runners x 4
envs) with this checkout's trainer and with another checkout's (``git worktree add PATH
REV``), each row in a fresh process, the two alternated, and prints where their iterations
went. ``--rounds N``
measures every row N times, the rows interleaved (on a shared machine a burst of load then
falls on several rows, not on one), and keeps each row's best.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import datetime
import functools
import itertools
import json
import multiprocessing
import os
import shlex
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

from koholint.env.encoding import OBSERVATION_SIZE
from koholint.env.zelda import Action, ZeldaEnv


def baseline(steps: int) -> float:
    """One env on one core, random actions: env steps/s."""
    env, actions = _random_env(steps, seed=0)
    started = time.perf_counter()
    _step_through(env, actions)
    return steps / (time.perf_counter() - started)


def _random_env(steps: int, seed: int) -> tuple[ZeldaEnv, list[int]]:
    env = ZeldaEnv({"max_episode_steps": 1024, "info_state": False})
    env.reset(seed=seed)
    return env, [int(action) for action in np.random.default_rng(seed).integers(9, size=steps)]


def _step_through(env: ZeldaEnv, actions: list[int]) -> None:
    for action in actions:
        _, _, terminated, truncated, _ = env.step(action)
        if terminated or truncated:
            env.reset()
    env.close()


def baseline_all_cores(steps: int, cores: int) -> float:
    """One random-action env per core, each in its own process, started together: all their
    env steps over the time from the common start to the last one's end."""
    context = multiprocessing.get_context("spawn")  # no fork of a process that ran Ray/torch
    ready = context.Barrier(cores + 1)
    results = context.Queue()
    workers = [
        context.Process(target=_ceiling_worker, args=(steps, seed, ready, results))
        for seed in range(cores)
    ]
    for worker in workers:
        worker.start()
    ready.wait(timeout=300)  # every env built and reset: the stepping starts together
    spans = [results.get(timeout=900) for _ in workers]
    for worker in workers:
        worker.join()
    started, finished = min(span[0] for span in spans), max(span[1] for span in spans)
    return cores * steps / (finished - started)


def _ceiling_worker(steps: int, seed: int, ready: Any, results: Any) -> None:
    env, actions = _random_env(steps, seed)
    ready.wait(timeout=300)
    started = time.monotonic()  # CLOCK_MONOTONIC: one clock for every process on Linux
    _step_through(env, actions)
    results.put((started, time.monotonic()))


BATCH = 1024
LARGE_BATCH = 8192  # PufferLib users' size; RLlib's fixed cost per iteration spread thinner
SHAPE = {"train_batch_size": BATCH, "minibatch_size": 256, "num_epochs": 4}
PLAIN = {"curiosity_weight": 0.0, "archive_restart_every": 0, "export_every_episodes": 0}
# Plain PPO sampled through RLlib's default connectors and SyncVectorEnv (the baseline of
# the trainer's lean sampling path).
DEFAULT_SAMPLING = {**PLAIN, "lean_sampling": False}
ENV = {"max_episode_steps": 1024, "info_state": False, "sticky_action_probability": 0.25}


def minibatch_size(batch: int) -> int:
    """SHAPE's share of the batch a minibatch takes (a quarter), at any batch."""
    return SHAPE["minibatch_size"] * batch // BATCH


def shape(envs: int, runners: int = 1, batch: int = BATCH) -> dict[str, int]:
    """The trainer's config for `envs` on `runners`, each env `batch // envs` steps a batch."""
    return {**SHAPE, "train_batch_size": batch, "minibatch_size": minibatch_size(batch),
            "num_env_runners": runners, "envs_per_env_runner": envs // runners,
            "rollout_fragment_length": batch // envs}  # fmt: skip


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
    rate, timers = timed_training(steps, ray_address, overrides)
    _print_timers(timers)
    return rate


def timed_training(steps: int, ray_address: str, overrides: dict[str, object]
                   ) -> tuple[float, list[dict[str, float]]]:  # fmt: skip
    """The trainer's last env steps/s and each iteration's timers (_recording_timers)."""
    from trainer.config import Deployment
    from trainer.ppo.config import TrainConfig
    from trainer.ppo.run import TrainingRun

    folder = tempfile.mkdtemp()
    config = TrainConfig.load({"total_env_steps": steps, **overrides}, environ={})
    deployment = Deployment(
        store_url=f"{folder}/store", run_dir=f"{folder}/runs", ray_address=ray_address
    )
    rates: list[float] = []
    timers: list[dict[str, float]] = []
    with _recording_timers(timers):
        TrainingRun(config, deployment).run(
            on_iteration=lambda status: rates.append(status.steps_per_second)
        )
    return rates[-1], timers


@contextlib.contextmanager
def _recording_timers(timers: list[dict[str, float]]) -> Iterator[None]:
    """Each iteration's wall time and its parts, timed in the driver around RLlib's PPO calls:
    sampling (the runners' sample, until the batch is back), the learner update, the weight
    sync; the rest of the iteration (metrics, callbacks, the trainer's own) is what is left.
    RLlib's own timers are running means dominated by the first iterations."""
    from ray.rllib.algorithms.ppo import ppo
    from ray.rllib.core.learner.learner_group import LearnerGroup
    from ray.rllib.env.env_runner_group import EnvRunnerGroup

    from trainer.ppo import iterations

    parts: dict[str, float] = {}
    last = [time.perf_counter()]

    def timed(name: str, function: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(function)
        def call(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                parts[name] = parts.get(name, 0.0) + time.perf_counter() - started

        return call

    def recording(result: dict[str, Any], status: Any, **options: Any) -> None:
        now = time.perf_counter()
        timers.append({**parts, "iteration": now - last[0]})
        parts.clear()
        last[0] = now
        read_result(result, status, **options)

    patches = [(ppo, "synchronous_parallel_sample", "sampling"),
               (LearnerGroup, "update", "learner"), (EnvRunnerGroup, "sync_weights", "sync")]  # fmt: skip
    originals = [(owner, attribute, getattr(owner, attribute)) for owner, attribute, _ in patches]
    read_result = iterations.read_result
    for (owner, attribute, name), (_, _, original) in zip(patches, originals, strict=True):
        setattr(owner, attribute, timed(name, original))
    iterations.read_result = recording
    try:
        yield
    finally:
        iterations.read_result = read_result
        for owner, attribute, original in originals:
            setattr(owner, attribute, original)


def _steady(timers: list[dict[str, float]]) -> list[dict[str, float]]:
    """The iterations after the first two (Ray's actors warming up), if there are any."""
    return timers[2:] or timers


def _timer_means(timers: list[dict[str, float]]) -> dict[str, float]:
    """Where a 1,024-step iteration went: ms, the mean over the steady iterations; "rest" is
    what the timed parts leave."""
    steady = _steady(timers)
    names = ("iteration", "sampling", "learner", "sync")
    means = {n: 1000 * float(np.mean([t.get(n, 0.0) for t in steady])) for n in names}
    means["rest"] = means["iteration"] - means["sampling"] - means["learner"] - means["sync"]
    return means


def _print_timers(timers: list[dict[str, float]]) -> None:
    means = _timer_means(timers)
    print(f"  ms per iteration ({len(_steady(timers))} iterations): "
          + ", ".join(f"{n} {v:.0f}" for n, v in means.items()), flush=True)  # fmt: skip


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


def learner_ab(steps: int, rounds: int) -> None:
    """Plain PPO and every feature (2 runners x 4 envs) with the trainer's LeanPPOTorchLearner,
    then with RLlib's PPOTorchLearner (the sampling path and module unchanged), alternated
    for `rounds`; each run prints where its iterations went."""
    from ray.rllib.algorithms.ppo.torch.ppo_torch_learner import PPOTorchLearner

    from trainer.ppo.rllib import algorithm

    lean = algorithm.learner_settings

    def rllib_learner(config: Any) -> dict[str, Any]:
        return {**lean(config), "learner_class": PPOTorchLearner}

    try:
        for round_number in range(rounds):
            for label, features in (("plain PPO", PLAIN), ("every feature", {})):
                algorithm.learner_settings = lean
                mine = training(steps, **shape(8, 2), **features)
                algorithm.learner_settings = rllib_learner
                theirs = training(steps, **shape(8, 2), **features)
                print(f"round {round_number + 1}, {label}: LeanPPOTorchLearner {mine:,.0f}, "
                      f"PPOTorchLearner {theirs:,.0f} env steps/s: {mine / theirs:.2f}",
                      flush=True)  # fmt: skip
    finally:
        algorithm.learner_settings = lean


def bounds(steps: int, rounds: int, share: float = 0.6) -> None:
    """Plain PPO (2 runners x 4 envs) against `share` of the all-cores ceiling, its iteration
    taken apart: the emulator's part of the sampling, the runners' work beyond it, the learner
    beyond a bare torch update of the same shapes, and the synchronous iteration's floor
    (the emulator, then the bare update: what no runner or learner code can go below)."""
    cores = len(os.sched_getaffinity(0))
    for round_number in range(1, rounds + 1):
        ceiling = baseline_all_cores(steps, cores)
        update_ms = bare_update_ms()
        rate, timers = timed_training(steps, "", {**shape(8, 2), **PLAIN})
        parts = _timer_means(timers)
        emulator_ms = 1000 * (BATCH / 2) / (ceiling / cores)  # a runner's 512 steps, a core each
        floor_ms = emulator_ms + update_ms
        print(f"round {round_number}: ceiling {ceiling:,.0f} env steps/s on {cores} cores; "
              f"{share} of it is a {BATCH:,}-step iteration in {1000 * BATCH / (share * ceiling):.0f} ms\n"
              f"  plain PPO {rate:,.0f} env steps/s ({rate / ceiling:.2f} of the ceiling): "
              f"iteration {parts['iteration']:.0f} ms = sampling {parts['sampling']:.0f} + learner "
              f"{parts['learner']:.0f} + sync {parts['sync']:.0f} + rest {parts['rest']:.0f}\n"
              f"  sampling: the emulator {emulator_ms:.0f} ms, the runners' work beyond it "
              f"{parts['sampling'] - emulator_ms:.0f} ms "
              f"({1000 * (parts['sampling'] - emulator_ms) / (BATCH / 2):.0f} us a step)\n"
              f"  learner: a bare torch update of the same shapes {update_ms:.0f} ms, the rest "
              f"{parts['learner'] - update_ms:.0f} ms\n"
              f"  a synchronous iteration's floor (emulator + bare update) {floor_ms:.0f} ms: "
              f"{1000 * BATCH / floor_ms / ceiling:.2f} of the ceiling", flush=True)  # fmt: skip


def bare_update_ms(repeats: int = 20) -> float:
    """ms for one PPO update as the trainer's plain row makes it (1,024 rows, 4 epochs of
    minibatches of 256, a 64x64 tanh actor and critic on the 128-float observation, the
    clipped surrogate, value loss, entropy and KL terms, fused Adam, one thread) in bare
    torch: the arithmetic without RLlib's learner around it. Random data: the cost does not
    depend on the values."""
    import torch
    import torch.nn.functional as F

    torch.set_num_threads(1)
    generator = torch.Generator().manual_seed(0)
    observation_size, actions, hidden = OBSERVATION_SIZE, len(Action), 64

    def network(outputs: int) -> list[torch.nn.Parameter]:
        sizes = [observation_size, hidden, hidden, outputs]
        return [torch.nn.Parameter(torch.randn(shape, generator=generator) * 0.1)
                for inputs, width in itertools.pairwise(sizes) for shape in ((width, inputs), (width,))]  # fmt: skip

    def forward(parameters: list[torch.nn.Parameter], hidden_: torch.Tensor) -> torch.Tensor:
        for layer in range(0, len(parameters), 2):
            hidden_ = F.linear(hidden_, parameters[layer], parameters[layer + 1])
            if layer + 2 < len(parameters):
                hidden_ = torch.tanh(hidden_)
        return hidden_

    actor, critic = network(actions), network(1)
    optimizer = torch.optim.Adam([*actor, *critic], lr=3e-4, fused=True)
    batch = {"obs": torch.rand(BATCH, observation_size, generator=generator),
             "actions": torch.randint(0, actions, (BATCH,), generator=generator),
             "logp": -torch.rand(BATCH, generator=generator) * 2,
             "advantages": torch.randn(BATCH, generator=generator),
             "targets": torch.randn(BATCH, generator=generator),
             "logits": torch.randn(BATCH, actions, generator=generator)}  # fmt: skip

    def minibatch_step(rows: dict[str, torch.Tensor]) -> None:
        logits = forward(actor, rows["obs"]).log_softmax(-1)
        ratio = torch.exp(logits.gather(-1, rows["actions"][:, None])[:, 0] - rows["logp"])
        old = rows["logits"].log_softmax(-1)
        kl = (old.exp() * (old - logits)).sum(-1)
        entropy = -(logits.exp() * logits).sum(-1)
        surrogate = torch.min(rows["advantages"] * ratio,
                              rows["advantages"] * ratio.clamp(0.8, 1.2))  # fmt: skip
        values = forward(critic, rows["obs"])[:, 0]
        value_loss = (values - rows["targets"]).pow(2).clamp(0, 10)
        loss = (-surrogate + value_loss - 0.01 * entropy + 0.2 * kl).mean()
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()

    def update() -> None:
        with torch.no_grad():  # the value pass GAE needs
            forward(critic, batch["obs"])
        for _ in range(SHAPE["num_epochs"]):
            order = torch.randperm(BATCH, generator=generator)
            for start in range(0, BATCH, SHAPE["minibatch_size"]):
                rows = order[start : start + SHAPE["minibatch_size"]]
                minibatch_step({name: column[rows] for name, column in batch.items()})

    update()
    started = time.perf_counter()
    for _ in range(repeats):
        update()
    return 1000 * (time.perf_counter() - started) / repeats


TREE_ROWS = {"plain PPO": PLAIN, "every feature": {}}


def against_tree(steps: int, rounds: int, other: Path) -> None:
    """This checkout's trainer against `other`'s: the ceiling, then each row of TREE_ROWS in
    both, alternated, in fresh processes whose imports come from each checkout's libs and
    services; the ratio of each pair and the iteration's parts."""
    here = Path(__file__).resolve().parents[1]
    for tree in (here, other):
        if not any((tree / "libs/koholint/game").glob("_fastpath*.so")):
            raise SystemExit(f"{tree}: the env's compiled fast path is missing, so its rows would "
                             f"run the pure-Python env: copy {here}/libs/koholint/game/_fastpath*.so "
                             "there or build it (python -m koholint.game.build_fastpath)")  # fmt: skip
    for round_number in range(1, rounds + 1):
        ceiling = baseline_all_cores(steps, len(os.sched_getaffinity(0)))
        print(f"round {round_number}: ceiling {ceiling:,.0f} env steps/s", flush=True)
        for row in TREE_ROWS:
            (mine, my_parts), (theirs, their_parts) = (
                _tree_row(tree, row, steps) for tree in (here, other)
            )  # fmt: skip
            print(f"round {round_number}, {row}: this tree {mine:,.0f} ({mine / ceiling:.2f} of the "
                  f"ceiling; {my_parts}), {other} {theirs:,.0f} ({theirs / ceiling:.2f}; "
                  f"{their_parts}): {mine / theirs:.2f}x", flush=True)  # fmt: skip


def _tree_row(tree: Path, row: str, steps: int) -> tuple[float, str]:
    """One TREE_ROWS row trained with `tree`'s packages (a fresh process): env steps/s and
    the "ms per iteration" line."""
    environment = {**os.environ, "PYTHONPATH": f"{tree}/libs{os.pathsep}{tree}/services"}
    result = subprocess.run([sys.executable, __file__, "--tree-row", row, "--steps", str(steps)],
                            env=environment, capture_output=True, text=True, check=False)  # fmt: skip
    lines = result.stdout.splitlines()
    rates = [line.split()[1] for line in lines if line.startswith("RATE ")]
    if result.returncode != 0 or not rates:
        raise SystemExit(f"{tree}: the {row} row failed:\n{result.stderr[-2000:]}")
    parts = [line.strip().split(": ", 1)[-1] for line in lines if "ms per iteration" in line]
    return float(rates[-1]), (parts[-1] if parts else "")


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


PUFFER_PYTHON = Path(__file__).resolve().parent.parent / ".venv-puffer" / "bin" / "python"
PUFFER_SCRIPT = Path(__file__).with_name("bench_puffer.py")


class RowFailed(RuntimeError):
    """A row that could not be measured; its message says why and how to fix it."""


def pufferlib(steps: int, backend: str, vec_batch: int = 0, batch: int = BATCH,
              workers: int = 2) -> float:  # fmt: skip
    """PufferLib's PPO (PuffeRL) on the same env and shapes, 8 envs (on `workers` processes
    with Multiprocessing), run by bench_puffer.py in .venv-puffer (PufferLib pins its own
    torch): env steps/s."""
    if not PUFFER_PYTHON.exists():
        raise RowFailed(f"no {PUFFER_PYTHON.parent.parent.name}: run `make bench-venv-puffer` "
                        "(torch 2.9.0 + pufferlib-core 3.0.23 in a venv of their own)")  # fmt: skip
    command = [str(PUFFER_PYTHON), str(PUFFER_SCRIPT), "--steps", str(steps), "--envs", "8",
               "--backend", backend, "--workers", str(workers), "--vec-batch", str(vec_batch),
               "--batch", str(batch)]  # fmt: skip
    root = PUFFER_SCRIPT.parent.parent
    environment = {**os.environ, "PYTHONPATH": f"{root / 'libs'}:{root / 'services'}"}
    try:  # a row that hangs fails, not the whole table: at least 100 env steps/s
        result = subprocess.run(command, env=environment, capture_output=True, text=True,
                                timeout=600 + steps / 100)  # fmt: skip
    except subprocess.TimeoutExpired as expired:
        raise RowFailed(f"`{' '.join(command)}` ran past {expired.timeout:.0f} s") from None
    if result.returncode != 0:
        tail = "\n".join(result.stderr.strip().splitlines()[-15:])
        raise RowFailed(f"`{' '.join(command)}` exited {result.returncode}:\n{tail}")
    return float(json.loads(result.stdout.strip().splitlines()[-1])["env_steps_per_second"])


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
    args = parse_arguments()
    if args.out is None:
        run(args)
        return
    with recording(args.out, sys.argv, args.steps, args.rounds):
        run(args)


def parse_arguments(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=16384)
    parser.add_argument(
        "--rounds", type=int, default=1, help="measure each row N times, keep the best"
    )
    parser.add_argument("--out", type=Path, metavar="DIR",
                        help="also write the output to DIR/output.txt, the run to DIR/manifest.json")  # fmt: skip
    parser.add_argument("--connectors", action="store_true", help="add RLlib's default connectors")
    parser.add_argument("--nodes", action="store_true", help="add 1 node vs 2 nodes rows")
    parser.add_argument("--scale", action="store_true",
                        help="add plain PPO with 8 envs on 4 runners")  # fmt: skip
    parser.add_argument("--cores", type=int, default=0,
                        help="cores the ceiling runs on (default: the cores this process may use)")  # fmt: skip
    parser.add_argument("--cluster", type=int, nargs="+", help=argparse.SUPPRESS)
    parser.add_argument(
        "--feature-costs", action="store_true", help="only the per-step CPU cost of each feature"
    )
    parser.add_argument("--runner-ab", action="store_true",
                        help="only every feature with LeanEnvRunner vs RLlib's runner, per round")  # fmt: skip
    parser.add_argument("--against-tree", type=Path, metavar="PATH",
                        help="only the ceiling, plain PPO and every feature, this checkout "
                             "against the one at PATH (git worktree add PATH REV)")  # fmt: skip
    parser.add_argument("--tree-row", choices=TREE_ROWS, help=argparse.SUPPRESS)
    parser.add_argument("--bounds", action="store_true",
                        help="only plain PPO's iteration taken apart against 0.6 of the ceiling")  # fmt: skip
    parser.add_argument("--learner-ab", action="store_true",
                        help="only plain PPO and every feature with the lean learner vs RLlib's")  # fmt: skip
    return parser.parse_args(argv)


def run(args: argparse.Namespace) -> None:
    """What the arguments ask for: one of the single measurements, or the table."""
    steps = args.steps
    if args.feature_costs:
        feature_costs(steps)
    elif args.runner_ab:
        runner_ab(steps, args.rounds)
    elif args.learner_ab:
        learner_ab(steps, args.rounds)
    elif args.bounds:
        bounds(steps, args.rounds)
    elif args.tree_row:  # one row of --against-tree, in the process it started
        print(f"RATE {training(steps, **shape(8, 2), **TREE_ROWS[args.tree_row])}")
    elif args.against_tree:
        against_tree(steps, args.rounds, args.against_tree.resolve())
    elif args.cluster:  # one cluster row, in a fresh process (see cluster_row)
        with local_cluster(args.cluster) as address:
            print(training(steps, ray_address=address, **shape(8, 2), **PLAIN))
    else:
        cores = args.cores or len(os.sched_getaffinity(0))
        runs = measured_rows(steps, cores, args.connectors, args.nodes, args.scale)
        table(steps, args.rounds, cores, runs)


def table(steps: int, rounds: int, cores: int, runs: dict[str, Row]) -> None:
    """Every row `rounds` times, the rows interleaved, then the table of their bests."""
    rates: dict[str, list[float]] = {name: [] for name in runs}
    failures: dict[str, str] = {}
    for round_number in range(rounds):  # rounds interleave the rows: load hits them alike
        for name, row in runs.items():
            rates[name].append(measure_row(name, row.measure, failures))
            print(f"round {round_number + 1}: {name}: {rates[name][-1]:,.0f}", flush=True)
    print_table(steps, rounds, cores, runs, rates)
    print_like_for_like(runs, rates)
    for name, reason in failures.items():
        print(f"{name}: not measured: {reason}")


def measure_row(name: str, measure: Callable[[], float], failures: dict[str, str]) -> float:
    """The row's rate, or NaN (and its reason kept) when it cannot run here."""
    if name in failures:  # a missing venv or a broken install fails every round alike
        return float("nan")
    try:
        return measure()
    except RowFailed as failure:
        failures[name] = str(failure)
        return float("nan")


def print_table(steps: int, rounds: int, cores: int, runs: dict[str, Row],
                rates: dict[str, list[float]]) -> None:  # fmt: skip
    best = {name: max(values) for name, values in rates.items()}
    puffer = [name for name, row in runs.items() if row.is_pufferlib and row.batch == BATCH]
    # PufferLib's best backend at 1,024 in each round (and of the bests), NaN when it did not run.
    puffer_rounds = [max((rates[name][index] for name in puffer), default=float("nan"))
                     for index in range(rounds)]  # fmt: skip
    puffer_best = max((best[name] for name in puffer), default=float("nan"))
    print(f"{steps} env steps each, best of {rounds} round(s); ratios per round in brackets; "
          f"the ceiling: one random-action env per core on {cores} cores, in parallel; a row's "
          "own ceiling: the one-core ceiling if it samples in one process, else the ceiling")  # fmt: skip
    print("| run | sampling cores | env steps/s | vs SB3 DummyVecEnv (same envs) | vs PufferLib "
          f"(best backend at {BATCH:,}) | vs ceiling ({cores} cores) | vs its own ceiling |")  # fmt: skip
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name, row in runs.items():
        against_sb3 = against_puffer = ""
        if row.sb3_row:  # of the bests, then of each round's pair (measured minutes apart)
            against_sb3 = _ratios(best[name], best[row.sb3_row], rates[name], rates[row.sb3_row])
        if row.against_pufferlib:
            against_puffer = _ratios(best[name], puffer_best, rates[name], puffer_rounds)
        own = best[name] / best[row.ceiling]
        print(f"| {name} | {cores if row.all_cores else 1} | {best[name]:,.0f} | {against_sb3} "
              f"| {against_puffer} | {best[name] / best[CEILING]:.2f} | {own:.2f} |")  # fmt: skip


def print_like_for_like(runs: dict[str, Row], rates: dict[str, list[float]]) -> None:
    """Each trainer row over the PufferLib row that samples in as many processes at the same
    batch (LIKE_FOR_LIKE), of the bests and per round."""
    for label, trainer_row, puffer_row in LIKE_FOR_LIKE:
        if trainer_row not in runs or puffer_row not in runs:
            continue
        mine, theirs = rates[trainer_row], rates[puffer_row]
        print(f"like for like ({label}): {_ratios(max(mine), max(theirs), mine, theirs)} = "
              f"{trainer_row} / {puffer_row}")  # fmt: skip


def _ratios(rate: float, base: float, per_round: list[float], base_per_round: list[float]) -> str:
    rounds = ", ".join(f"{a / b:.2f}" for a, b in zip(per_round, base_per_round, strict=True))
    return f"{rate / base:.2f} [{rounds}]"


@dataclasses.dataclass(frozen=True)
class Row:
    """How to measure a row, the cores it samples on, and what its ratios are taken against."""

    measure: Callable[[], float]
    sb3_row: str = ""  # the SB3 row with as many envs ("" for none)
    against_pufferlib: bool = False  # also a ratio to PufferLib's best backend
    is_pufferlib: bool = False
    all_cores: bool = False  # samples in several processes (every core), not in one (one core)
    batch: int = BATCH  # env steps a PPO update

    @property
    def ceiling(self) -> str:
        """The ceiling row of the cores this row samples on: what the emulator does there."""
        return CEILING if self.all_cores else CEILING_ONE_CORE


CEILING_ONE_CORE = "one env, random actions, one core"
CEILING = "one env per core, random actions, every core in parallel (ceiling)"
SB3_2, SB3_8 = (
    "Stable-Baselines3 PPO, 2 envs (DummyVecEnv)",
    "Stable-Baselines3 PPO, 8 envs (DummyVecEnv)",
)
PUFFER = "PufferLib 3.0.23 PuffeRL, 8 envs, infos at episode ends"
PUFFER_SERIAL = f"{PUFFER}, Serial"
PUFFER_WORKERS = f"{PUFFER}, Multiprocessing, 2 workers"
PUFFER_WORKER = f"{PUFFER}, Multiprocessing, 1 worker"
PLAIN_1X8 = "trainer, plain PPO, 1 runner x 8 envs"
PLAIN_2X4 = "trainer, plain PPO, 2 runners x 4 envs (the default)"
LARGE = f", batches of {LARGE_BATCH:,}"
# (what is alike, the trainer's row, PufferLib's row): the same envs, batch and PPO settings.
LIKE_FOR_LIKE = [
    ("one sampling process, batches of 1,024", PLAIN_1X8, PUFFER_SERIAL),
    (f"one sampling process{LARGE}", PLAIN_1X8 + LARGE, PUFFER_SERIAL + LARGE),
    ("two sampling processes, batches of 1,024", PLAIN_2X4, PUFFER_WORKERS),
    (f"two sampling processes{LARGE}", PLAIN_2X4 + LARGE, PUFFER_WORKERS + LARGE),
]


def measured_rows(steps: int, cores: int, connectors: bool, nodes: bool,
                  scale: bool) -> dict[str, Row]:  # fmt: skip
    """The rows in the order each round measures them."""
    runs: dict[str, Row] = {
        CEILING_ONE_CORE: Row(lambda: baseline(steps)),
        CEILING: Row(lambda: baseline_all_cores(steps, cores), all_cores=True),
        SB3_2: Row(lambda: stable_baselines(steps, 2), SB3_2),
        "trainer, plain PPO, 1 runner x 2 envs": Row(
            lambda: training(steps, **shape(2), **PLAIN), SB3_2),
        # the rows compared with SB3 8 envs and PufferLib right after them, each like-for-like
        # pair side by side: the least time for the load to change
        SB3_8: Row(lambda: stable_baselines(steps, 8), SB3_8),
        PUFFER_SERIAL: Row(lambda: pufferlib(steps, "serial"), SB3_8, is_pufferlib=True),
        PLAIN_1X8: Row(lambda: training(steps, **shape(8, 1), **PLAIN), SB3_8,
                       against_pufferlib=True),
        # the envs in one worker process, the learner in the main one: on 2 cores, no more
        # processes polling shared memory than cores
        PUFFER_WORKER: Row(lambda: pufferlib(steps, "multiprocessing", workers=1), SB3_8,
                           is_pufferlib=True),
        PUFFER_WORKERS: Row(lambda: pufferlib(steps, "multiprocessing"), SB3_8,
                            is_pufferlib=True, all_cores=True),
        PLAIN_2X4: Row(lambda: training(steps, **shape(8, 2), **PLAIN), SB3_8,
                       against_pufferlib=True, all_cores=True),
        # PufferLib's async mode: the learner takes one worker's 4 envs while the other steps
        f"{PUFFER_WORKERS}, batches of 4": Row(lambda: pufferlib(steps, "multiprocessing", 4),
                                               SB3_8, is_pufferlib=True, all_cores=True),
        "trainer defaults: 2 runners x 4 envs, all features": Row(
            lambda: training(steps, **shape(8, 2)), SB3_8, against_pufferlib=True,
            all_cores=True),
        "trainer, all features, overlap_sampling": Row(
            lambda: training(steps, **shape(8, 2), overlap_sampling=True), SB3_8, all_cores=True),
        "Stable-Baselines3 PPO, 8 envs (SubprocVecEnv)": Row(
            lambda: stable_baselines(steps, 8, processes=True), SB3_8, all_cores=True),
        PUFFER_SERIAL + LARGE: Row(lambda: pufferlib(steps, "serial", batch=LARGE_BATCH),
                                   is_pufferlib=True, batch=LARGE_BATCH),
        PLAIN_1X8 + LARGE: Row(lambda: training(steps, **shape(8, 1, LARGE_BATCH), **PLAIN),
                               batch=LARGE_BATCH),
        PUFFER_WORKERS + LARGE: Row(
            lambda: pufferlib(steps, "multiprocessing", batch=LARGE_BATCH), is_pufferlib=True,
            all_cores=True, batch=LARGE_BATCH),
        PLAIN_2X4 + LARGE: Row(lambda: training(steps, **shape(8, 2, LARGE_BATCH), **PLAIN),
                               all_cores=True, batch=LARGE_BATCH),
    }  # fmt: skip
    if scale:  # 1 runner x 8 envs and 2 runners x 4 envs are rows above
        runs["trainer, plain PPO, 4 runners x 2 envs"] = Row(
            lambda: training(steps, **shape(8, 4), **PLAIN), SB3_8, all_cores=True)  # fmt: skip
    if connectors:
        runs["trainer, plain PPO, 2 runners x 4 envs, RLlib's connectors"] = Row(
            lambda: training(steps, **shape(8, 2), **DEFAULT_SAMPLING), SB3_8, all_cores=True)  # fmt: skip
    if nodes:
        for label, cpus in (("1 node x 2 CPUs", [2]), ("2 nodes x 1 CPU", [1, 1])):
            name = f"trainer, plain PPO, 2 runners x 4 envs, ray start cluster: {label}"
            runs[name] = Row(functools.partial(cluster_row, steps, cpus), SB3_8, all_cores=True)
    return runs


@contextlib.contextmanager
def recording(folder: Path, argv: list[str], steps: int, rounds: int) -> Iterator[None]:
    """Records the run in `folder`: manifest.json first, then output.txt, this process's
    stdout written there as it is printed (a run cut short keeps what it printed)."""
    folder.mkdir(parents=True, exist_ok=True)
    manifest = run_manifest(folder, argv, steps, rounds)
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    with (
        open(folder / "output.txt", "w") as output,
        contextlib.redirect_stdout(_Tee(sys.stdout, output)),
    ):
        yield


class _Tee:
    """A stdout that writes to the terminal's stream and to a file alike."""

    def __init__(self, stream: Any, copy: Any) -> None:
        self.stream, self.copy = stream, copy

    def write(self, text: str) -> int:
        self.copy.write(text)
        return int(self.stream.write(text))

    def flush(self) -> None:
        self.copy.flush()
        self.stream.flush()

    def __getattr__(self, name: str) -> Any:  # isatty, encoding, fileno: the terminal's
        return getattr(self.stream, name)


def run_manifest(folder: Path, argv: list[str], steps: int, rounds: int) -> dict[str, Any]:
    """The records' manifest.json (the keys tests/test_benchmarks_report.py asks of one)."""
    root = Path(__file__).resolve().parent.parent

    def git(*arguments: str) -> str:
        result = subprocess.run(["git", *arguments], cwd=root, capture_output=True, text=True)
        return result.stdout.strip() if result.returncode == 0 else ""

    script = Path(argv[0]).resolve()
    command = [_from(root, Path(sys.executable)), _from(root, script), *argv[1:]]
    return {
        "schema_version": 1,
        "records": _from(root, folder.resolve()),
        "command": ["make bench-venv-puffer", shlex.join(command)],
        "commit": git("rev-parse", "HEAD"),
        "uncommitted_changes": git("diff", "--name-only", "HEAD").split(),  # at the start
        "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "machine": {"cores": len(os.sched_getaffinity(0)), "cpu_model": cpu_model()},
        "steps": steps,
        "rounds": rounds,
        "seeds": "fixed in bench_trainer.py and bench_puffer.py (random actions 0 to cores - 1, "
        "SB3 and PufferLib seed 0, the trainer's config defaults)",
        "files": {"output.txt": "what the run printed to stdout, as it printed it"},
    }


def _from(root: Path, path: Path) -> str:
    """`path` relative to the repository when it is inside it (a command to run from there)."""
    return str(path.relative_to(root)) if path.is_relative_to(root) else str(path)


def cpu_model() -> str:
    """The CPU's model name as /proc/cpuinfo gives it ("unknown" where there is none)."""
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return "unknown"


if __name__ == "__main__":
    main()

"""Benchmark the Gymnasium environment against raw PyBoy ticking the same inputs.

    .venv/bin/python benchmarks/bench_env.py [--steps 20000] [--rounds 3] [--envs 8]

1. Speed, one core, frame skip 4, render off. A random policy (seed 0, actions held for
   8 steps so Link really walks) plays the env for --steps steps from `start_of_play` (one
   episode, no reset); the same button presses are replayed on a bare PyBoy from the same
   state with nothing but ``button_press``/``button_release`` and ``tick``. Same frames, same
   emulated work: the ratio is the env's overhead. Rows: the compiled fast path (the default
   when built) with and without the structured state in ``info``, and the pure-Python
   reference path. Each round runs every row once, in turn; each row reports its best round,
   timed both by the wall clock and by the thread's CPU time (on a loaded machine the CPU
   time leaves out the time other processes held the core).
2. N envs in one process: total steps/s stepping --envs envs in turn.
3. Memory: RSS growth per extra env instance, for --envs envs in one process.
"""

from __future__ import annotations

import argparse
import gc
import io
import os
import resource
import time
from collections.abc import Callable

import numpy as np

from koholint.env.zelda import ACTION_BUTTONS, ZeldaEnv
from koholint.game import fastpath
from koholint.game.emulator import GameBoy
from koholint.game.savestate import unpack_state
from koholint.game.states import load_named_state

NAMES = ("right", "left", "up", "down", "a", "b", "select", "start")


def policy_actions(steps: int, seed: int = 0) -> list[int]:
    rng = np.random.default_rng(seed)
    return [int(a) for a in np.repeat(rng.integers(0, 9, size=steps // 8 + 1), 8)[:steps]]


Timing = tuple[float, float]  # (wall seconds, thread CPU seconds)


def run_env(actions: list[int], info_state: bool, fast_path: bool = True) -> Timing:
    env = ZeldaEnv(info_state=info_state, max_episode_steps=len(actions) + 1)
    env.fast_path = fast_path and fastpath.COMPILED
    env.reset(seed=0)
    step = env.step
    started, cpu = time.perf_counter(), time.thread_time()
    for action in actions:
        step(action)
    elapsed = time.perf_counter() - started, time.thread_time() - cpu
    env.close()
    return elapsed


def button_schedule(actions: list[int], frame_skip: int = 4) -> list[tuple[int, int, int]]:
    """(mask pressed, frames, then-mask, frames) as the env applies each action."""
    press = max(1, frame_skip // 2)
    schedule = []
    for action in actions:
        mask = int(ACTION_BUTTONS[action])
        if action <= 4:
            schedule.append((mask, frame_skip, 0))
        else:
            schedule.append((mask, press, frame_skip - press))
    return schedule


def run_raw(actions: list[int]) -> Timing:
    """Bare PyBoy: the same inputs, the same frames, no observation, no reward."""
    state = unpack_state(load_named_state("start_of_play"))
    gameboy = GameBoy()
    pyboy = gameboy._pyboy
    pyboy.load_state(io.BytesIO(state.payload))
    held = state.held_buttons
    schedule = button_schedule(actions)

    def hold(mask: int) -> None:
        nonlocal held
        for bit, name in enumerate(NAMES):
            flag = 1 << bit
            if (mask ^ held) & flag:
                (pyboy.button_press if mask & flag else pyboy.button_release)(name)
        held = mask

    started, cpu = time.perf_counter(), time.thread_time()
    for mask, frames, rest in schedule:
        hold(mask)
        pyboy.tick(frames, False)
        if rest:
            hold(0)
            pyboy.tick(rest, False)
    elapsed = time.perf_counter() - started, time.thread_time() - cpu
    gameboy.close()
    return elapsed


def rss_kib() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def memory_per_env(count: int) -> list[int]:
    envs = []
    readings = [rss_kib()]
    for _ in range(count):
        env = ZeldaEnv()
        env.reset(seed=0)
        for action in range(64):
            env.step(action % 9)
        envs.append(env)
        gc.collect()
        readings.append(rss_kib())
    for env in envs:
        env.close()
    return readings


def round_robin(count: int, steps: int) -> float:
    """Total env steps/s with `count` envs in one process, stepped in turn."""
    envs = [ZeldaEnv() for _ in range(count)]
    for seed, env in enumerate(envs):
        env.reset(seed=seed)
    actions = policy_actions(steps)
    started = time.perf_counter()
    for step, action in enumerate(actions):
        env = envs[step % count]
        _, _, terminated, truncated, _ = env.step(action)
        if terminated or truncated:
            env.reset()
    elapsed = time.perf_counter() - started
    for env in envs:
        env.close()
    return steps / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--envs", type=int, default=8)
    args = parser.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
    actions = policy_actions(args.steps)
    rows: dict[str, Callable[[], Timing]] = {
        "raw PyBoy, same inputs": lambda: run_raw(actions),
        "env, fast path, info_state=False": lambda: run_env(actions, info_state=False),
        "env, fast path, info carries state": lambda: run_env(actions, info_state=True),
        "env, reference path, info_state=False": lambda: run_env(actions, False, False),
        "env, reference path, info carries state": lambda: run_env(actions, True, False),
    }
    best: dict[str, Timing] = {}
    for _ in range(args.rounds):
        for name, run in rows.items():
            wall, cpu = run()
            old_wall, old_cpu = best.get(name, (wall, cpu))
            best[name] = (min(wall, old_wall), min(cpu, old_cpu))
    compiled = "built" if fastpath.COMPILED else "NOT built: fast rows run the reference path"
    print(f"speed: {args.steps} steps, frame skip 4, render off, one core, best of {args.rounds}")
    print(f"compiled fast path: {compiled}")
    print("| run | steps/s (wall) | vs raw (wall) | steps/s (CPU) | vs raw (CPU) |")
    print("| --- | ---: | ---: | ---: | ---: |")
    raw_wall, raw_cpu = best["raw PyBoy, same inputs"]
    for name, (wall, cpu) in best.items():
        print(
            f"| {name} | {args.steps / wall:,.0f} | {raw_wall / wall:.2f} "
            f"| {args.steps / cpu:,.0f} | {raw_cpu / cpu:.2f} |"
        )

    total = round_robin(args.envs, args.steps)
    print(f"{args.envs} envs in one process, stepped in turn: {total:.0f} steps/s in all")

    readings = memory_per_env(args.envs)
    growth = [(b - a) / 1024 for a, b in zip(readings, readings[1:], strict=False)]
    print(f"\nmemory: {args.envs} envs in one process")
    print(f"RSS before: {readings[0] / 1024:.0f} MiB, after: {readings[-1] / 1024:.0f} MiB")
    print(
        f"growth per env (MiB): first {growth[0]:.1f}, then mean {np.mean(growth[1:]):.1f}, max {max(growth[1:]):.1f}"
    )


if __name__ == "__main__":
    main()

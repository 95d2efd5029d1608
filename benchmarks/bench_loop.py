"""Does the judges' knowledge make the agent learn faster? The sparse reward (the win only) with
RND, with the online loop (rules judges, or `noisy` judges of accuracy p) using R_phi as a
potential or as a bonus, a potential written by hand on what the rules judges know (the
progress level: `progress-potential`), and the hand-written progress+coverage reward, at the
same budget and seeds.

Every row trains `--steps` env steps per seed from `start_of_play` (2 env runners x 4 envs,
1,024-step episodes, RND curiosity on, the Go-Explore archive off so every episode starts at
the beginning and the milestones are the policy's own). Loop rows run ``koholint loop
--online`` (every 2nd episode of an env exported, a refit every `--refit-every` iterations);
the others ``koholint train``. From each run's learning curve: the env steps at which each
milestone (sword, puzzle, dungeon, key, win) was first reached by an episode, and the share of
the last 100 episodes that reached it at the end. Each run writes
`<out>/<row>-seed<N>.json`; the summary (mean and 95% t-interval over seeds) goes to
`<out>/loop.json` and `<out>/table.md`. Runs already in `<out>` are not run again.

    .venv/bin/python benchmarks/bench_loop.py --rows sparse+rnd loop-rules-potential \
        loop-rules-bonus full --seeds 0 1 2 --steps 100000

Rows `loop-noisy<p>-<mode>` set ``KOHOLINT_EVALUATOR_BACKEND=noisy`` and the evaluator's
accuracy setting for the judges' commands; they are skipped, with the reason, where the
evaluator does not know a `noisy` backend.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from koholint.store import LocalStore

MILESTONES = {"sword": "sword", "puzzle": "puzzle", "dungeon": "dungeon", "key": "key",
              "win": "instrument"}  # fmt: skip
"""the benchmark's names -> the env's (the instrument is the win)"""
COMMON = [
    "--workers=2", "--envs=4", "--episode-length=1024", "--archive-restart-every=0",
    "--curiosity-weight=1.0",
]  # fmt: skip
SPARSE = ["--env-reward-mode=sparse"]
NOISY_ACCURACIES = (0.9, 0.75, 0.6)
T_95 = {2: 12.706, 3: 4.303, 4: 3.182, 5: 2.776, 6: 2.571, 7: 2.447, 8: 2.365}
"""Student's t, two-sided 95%, by the number of seeds"""


def rows() -> dict[str, dict[str, Any]]:
    table: dict[str, dict[str, Any]] = {
        "sparse+rnd": {"flags": SPARSE},
        "full": {"flags": ["--env-reward-mode=progress+coverage"]},
        # what the rules judges know, written by hand as the potential R_phi takes the place
        # of: a level's rise pays about what R_phi's standardised jump at the sword does
        # (0.1 x ~3-7 standard deviations, the sword being 2-10% of the data)
        "progress-potential": {
            "flags": [*SPARSE, "--reward-hand-potential=progress", "--shaping-scale=0.5"]
        },
    }
    for mode in ("potential", "bonus"):
        table[f"loop-rules-{mode}"] = {"flags": SPARSE, "loop": mode, "judges": "rules"}
        for accuracy in NOISY_ACCURACIES:
            table[f"loop-noisy{accuracy}-{mode}"] = {
                "flags": SPARSE, "loop": mode, "judges": "noisy", "accuracy": accuracy,
            }  # fmt: skip
            # the floor read against R_phi's accuracy corrected for the labels' measured error
            table[f"loop-noisy{accuracy}-{mode}-denoised"] = {
                **table[f"loop-noisy{accuracy}-{mode}"],
                "environment": {"KOHOLINT_REWARD_MODEL_DENOISED_FLOOR": "true"},
            }  # fmt: skip
    return table


def noisy_environment(accuracy: float) -> dict[str, str] | str:
    """The judges' settings for a noisy backend of `accuracy`, or why there is none."""
    try:
        from evaluator.config import Settings
    except ImportError as error:
        return f"the evaluator is not installed ({error})"
    try:
        Settings(backend="noisy", consume=False)
    except Exception:
        return "the evaluator has no 'noisy' backend yet (KOHOLINT_EVALUATOR_BACKEND=noisy refused)"
    fields = [name for name in Settings.model_fields if "accuracy" in name]
    if len(fields) != 1:
        return f"cannot tell the noisy judges' accuracy setting among {fields or 'no fields'}"
    return {"KOHOLINT_EVALUATOR_BACKEND": "noisy",
            f"KOHOLINT_EVALUATOR_{fields[0].upper()}": str(accuracy)}  # fmt: skip


def command(row: dict[str, Any], run: str, seed: int, steps: int, store: Path, runs: Path,
            refit_every: int) -> list[str]:  # fmt: skip
    base = [sys.executable, "-m", "koholint.cli"]
    flags = [*COMMON, *row["flags"]]
    if "loop" not in row:
        return [*base, "train", "--run", run, "--steps", str(steps), "--seed", str(seed),
                "--store", str(store), "--run-dir", str(runs), "--export-every-episodes=0",
                "--checkpoint-every-iterations=10", *flags]  # fmt: skip
    return [*base, "loop", "--online", "--name", run, "--steps", str(steps), "--seed", str(seed),
            "--store", str(store), "--run-dir", str(runs), "--mode", row["loop"],
            "--refit-every", str(refit_every), "--export-every", "2",
            *(f"--train-flag={flag}" for flag in flags)]  # fmt: skip


def final_curve(store: LocalStore, run: str) -> list[dict[str, float]]:
    ledger = json.loads(store.get(f"checkpoints/{run}/ledger.json"))
    newest = max(ledger["checkpoints"], key=lambda record: record["step"])
    state = json.loads(store.get(f"checkpoints/{run}/{newest['step']:012d}/koholint_run.json"))
    return list(state["curve"])


def measure(curve: list[dict[str, float]]) -> dict[str, Any]:
    """Env steps to each milestone's first episode, its share of the last 100 at the end."""
    first, final = {}, {}
    for name, key in MILESTONES.items():
        reached = [p["env_steps"] for p in curve if p.get(f"reached_{key}", 0.0) > 0]
        first[name] = int(reached[0]) if reached else None
        final[name] = float(curve[-1].get(f"reached_{key}", 0.0)) if curve else 0.0
    return {"first_step": first, "final_share": final,
            "rooms": curve[-1]["rooms"] if curve else None,
            "cells": curve[-1]["cells"] if curve else None}  # fmt: skip


def run_one(name: str, row: dict[str, Any], seed: int, args: argparse.Namespace) -> dict[str, Any]:
    work = Path(args.work) / f"{name}-seed{seed}"
    store, runs = work / "store", work / "runs"
    run = f"bench-{name.replace('+', '-')}-s{seed}"
    environment = {**os.environ}
    if row.get("judges") == "noisy":
        noisy = noisy_environment(row["accuracy"])
        assert isinstance(noisy, dict)
        environment.update(noisy)
    environment.update(row.get("environment", {}))
    started = time.perf_counter()
    completed = subprocess.run(
        command(row, run, seed, args.steps, store, runs, args.refit_every),
        capture_output=True, text=True, env=environment, check=False,
    )  # fmt: skip
    wall = time.perf_counter() - started
    work.mkdir(parents=True, exist_ok=True)
    (work / "output.log").write_text(completed.stdout + completed.stderr)
    if completed.returncode != 0:
        raise RuntimeError(f"{name} seed {seed} failed: {completed.stderr[-500:]} ({work})")
    result = {"row": name, "seed": seed, "steps": args.steps, "wall_s": round(wall, 1),
              **measure(final_curve(LocalStore(store), run))}  # fmt: skip
    if "loop" in row:
        result["refits"] = [line.strip() for line in completed.stdout.splitlines()
                            if re.match(r"\s*refit \d+ at step", line)]  # fmt: skip
        ledger = json.loads(LocalStore(store).get(f"checkpoints/{run}/ledger.json"))
        metrics = max(ledger["checkpoints"], key=lambda record: record["step"])["metrics"]
        result["reward_model_steps"] = int(sum(v for k, v in metrics.items()
                                               if k.startswith("shaped_steps.")))  # fmt: skip
    return result


def interval(values: list[float]) -> tuple[float, float]:
    """Mean and the half-width of its 95% t-interval (0 for one value)."""
    mean = float(np.mean(values))
    if len(values) < 2:
        return mean, 0.0
    t = T_95.get(len(values), 1.96)
    return mean, t * float(np.std(values, ddof=1)) / math.sqrt(len(values))


def censored_median(steps: list[int | None]) -> float | None:
    """The median env steps to a milestone over every seed, a seed that never reached it
    counted as later than any that did; None when half or more never reached it."""
    ordered = sorted(math.inf if step is None else step for step in steps)
    middle = len(ordered) // 2
    median = ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2
    return None if math.isinf(median) else float(median)


def summarise(results: list[dict[str, Any]], order: list[str]) -> tuple[dict[str, Any], str]:
    """Per row and milestone: the median steps to first over all seeds (unreached counted as
    never), how many seeds reached it, and the mean share at the end with its 95% interval."""
    summary: dict[str, Any] = {}
    lines = ["| row | seeds | " + " | ".join(f"{m}: median steps to first (reached/seeds)"
                                              for m in MILESTONES) + " | "
             + " | ".join(f"{m} share at end" for m in MILESTONES) + " |",
             "| --- | ---: | " + " | ".join("---:" for _ in range(2 * len(MILESTONES))) + " |"]  # fmt: skip
    for name in order:
        mine = [r for r in results if r["row"] == name]
        if not mine:
            continue
        row: dict[str, Any] = {"seeds": [r["seed"] for r in mine], "first_step": {}, "final": {}}
        cells_first, cells_final = [], []
        for milestone in MILESTONES:
            every = [r["first_step"][milestone] or None for r in mine]
            steps = [step for step in every if step]
            mean, half = interval(steps) if steps else (None, None)
            median = censored_median(every)
            row["first_step"][milestone] = {"reached": len(steps), "median": median,
                                            "mean_of_reached": mean, "half": half}  # fmt: skip
            share_mean, share_half = interval([r["final_share"][milestone] for r in mine])
            row["final"][milestone] = {"mean": share_mean, "half": share_half}
            shown = "never" if median is None else f"{median:,.0f}"
            cells_first.append(f"{shown} ({len(steps)}/{len(mine)})")
            cells_final.append(f"{share_mean:.2f} ± {share_half:.2f}")
        summary[name] = row
        lines.append(f"| {name} | {len(mine)} | " + " | ".join(cells_first + cells_final) + " |")
    return summary, "\n".join(lines)


def main() -> None:
    table = rows()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", nargs="+", default=list(table), choices=list(table))
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--steps", type=int, default=100_000)
    parser.add_argument("--refit-every", type=int, default=10, help="iterations between refits")
    parser.add_argument("--out", default="benchmarks/results/loop")
    parser.add_argument("--work", default="runs/bench-loop", help="stores and logs of the runs")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    skipped: dict[str, str] = {}
    for name in args.rows:
        noisy = noisy_environment(table[name]["accuracy"]) if "accuracy" in table[name] else {}
        if isinstance(noisy, str):
            skipped[name] = noisy
            print(f"{name}: skipped: {noisy}", flush=True)
    # seed by seed, so that a budget cut short leaves every row on the same seeds
    for seed in args.seeds:
        for name in (name for name in args.rows if name not in skipped):
            row = table[name]
            path = out / f"{name}-seed{seed}.json"
            if path.exists():
                continue
            result = run_one(name, row, seed, args)
            path.write_text(json.dumps(result, indent=1))
            print(json.dumps(result), flush=True)
    results = [json.loads(p.read_text()) for p in sorted(out.glob("*-seed*.json"))]
    summary, markdown = summarise(results, list(table))
    (out / "loop.json").write_text(json.dumps({"steps": args.steps, "rows": summary,
                                               "skipped": skipped}, indent=1))  # fmt: skip
    (out / "table.md").write_text(markdown + "\n")
    print(markdown)


if __name__ == "__main__":
    main()

"""Go-Explore guided by the judges: env steps to phase 1's first win when the archive's level is
(i) none, (ii) the hand-written progress level, (iii) R_phi from rules judges, (iv) R_phi from
noisy judges (p = 0.75), on the same seeds. R_phi comes two ways: a version fitted beforehand on
an RL run's segments (``rphi-*`` rows, ``--level reward-model``), or fitted by the judges on
the explorer's own cells while it explores (``judges-*`` rows, ``--level judges``: a refit
round every ``--refit-every`` env steps, each run in a store of its own under ``--work``).

Each run is ``koholint explore --workers 1 --seed N --level ...`` (one worker: deterministic
per seed) with a budget of ``--max-env-steps``; a run that spends it without a win counts as
never (the censored median of bench_loop). The R_phi versions are read from ``--store``
(``benchmarks/results/explore-level/store`` holds the two this table used: both fitted on the
same exported segments of one 150,000-step RL run, judged once by the rules and once by the
noisy judges). Each run writes `<out>/<row>-seed<N>.json`; the table goes to
`<out>/table.md`. Runs already in `<out>` are not run again.

    .venv/bin/python benchmarks/bench_explore_level.py --seeds 0 1 2 --max-env-steps 800000 \
        --rules-version rm-... --noisy-version rm-...
    .venv/bin/python benchmarks/bench_explore_level.py --rows progress none judges-rules \
        judges-noisy0.75 --seeds 0 1 2 --max-env-steps 550000 --out benchmarks/results/explore-level/held
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench_loop import censored_median

MILESTONES = ("sword", "puzzle", "dungeon", "key", "instrument")
OUT = Path("benchmarks/results/explore-level")


def rows(args: argparse.Namespace) -> dict[str, list[str]]:
    reward_model = ["--level", "reward-model", "--store", args.store, "--reward-model"]
    table = {"none": ["--level", "none"], "progress": ["--level", "progress"]}
    if args.rules_version:
        table["rphi-rules"] = [*reward_model, args.rules_version]
    if args.noisy_version:
        table["rphi-noisy0.75"] = [*reward_model, args.noisy_version]
    # The first judged level's settings; a row's later flags override them.
    judged = ["--level", "judges", "--refit-every", str(args.refit_every),
              "--level-encoding", "observation", "--level-bins", "0",
              "--judges-question", "progress+rooms", "--judges-tie-weight", "0"]  # fmt: skip
    table["judges-rules"] = [*judged, "--judges", "rules"]
    table["judges-noisy0.75"] = [*judged, "--judges", "noisy", "--noisy-accuracy", "0.75"]
    memory = ["--level-encoding", "memory"]  # R_phi also reads the room flags' counts
    table["judges-rules-memory"] = [*table["judges-rules"], *memory]
    table["judges-noisy0.75-memory"] = [*table["judges-noisy0.75"], *memory]
    table["judges-rules-memory-step1.5"] = [*table["judges-rules-memory"], "--level-step", "1.5"]
    for bins in (3, 5, 10):  # restarts from the best 1/N of the archive by R_phi
        for judges in ("rules", "noisy0.75"):
            table[f"judges-{judges}-memory-bins{bins}"] = [*table[f"judges-{judges}-memory"],
                                                           "--level-bins", str(bins)]  # fmt: skip
    # The judges asked for the progress level alone: rooms no longer break ties.
    level_only = ["--judges-question", "progress"]
    for name in ("judges-rules-memory", "judges-rules-memory-bins5", "judges-noisy0.75-memory",
                 "judges-noisy0.75-memory-bins5"):  # fmt: skip
        table[f"{name}-question-progress"] = [*table[name], *level_only]
        # and R_phi pulled together on the cells they called the same
        table[f"{name}-question-progress-ties"] = [*table[name], *level_only,
                                                   "--judges-tie-weight", "1"]  # fmt: skip
    return table


def run_one(name: str, flags: list[str], seed: int, args: argparse.Namespace) -> dict[str, Any]:
    work = Path(args.work) / f"{name}-seed{seed}"
    if "judges" in flags:  # a store of its own: the run's cells, scores and versions
        flags = [*flags, "--store", str(work / "store")]
    command = [sys.executable, "-m", "koholint.cli", "explore", "--workers", "1", "--seed",
               str(seed), "--max-env-steps", str(args.max_env_steps), "--quiet", "--out",
               str(work), *flags]  # fmt: skip
    started = time.perf_counter()
    completed = subprocess.run(command, capture_output=True, text=True, check=False)
    if completed.returncode not in (0, 1):  # 1: no win within the budget
        raise RuntimeError(f"{name} seed {seed} failed: {completed.stderr[-500:]}")
    summary = json.loads((work / "summary.json").read_text())
    return {"row": name, "seed": seed, "budget": args.max_env_steps, "won": summary["won"],
            "env_steps": summary["env_steps"], "milestones": summary["milestones"],
            "cells": summary["cells"], "top_level": summary["top_level"],
            "refits": _refits(summary.get("refits", [])),
            "wall_s": round(time.perf_counter() - started, 1)}  # fmt: skip


def _refits(refits: list[dict[str, Any]]) -> dict[str, Any]:
    """The judged rounds in brief: how many published, the first one's step, the last one's."""
    published = [r for r in refits if r["state"] == "published"]
    last = published[-1] if published else {}
    return {"rounds": len(refits), "published": len(published),
            "first_published_at": published[0]["step"] if published else None,
            "last_pairs": last.get("pairs"), "last_accuracy": last.get("accuracy")}  # fmt: skip


def table(results: list[dict[str, Any]], order: list[str]) -> str:
    lines = ["| level | seeds | first win: median env steps (won/seeds) | per seed | "
             + " | ".join(f"{m}: median" for m in MILESTONES) + " |",
             "| --- | ---: | ---: | --- | " + " | ".join("---:" for _ in MILESTONES) + " |"]  # fmt: skip
    for name in order:
        mine = sorted((r for r in results if r["row"] == name), key=lambda r: r["seed"])
        if not mine:
            continue
        wins = [r["env_steps"] if r["won"] else None for r in mine]
        per_seed = ", ".join(f"{w:,}" if w else f"> {r['budget']:,}"
                             for w, r in zip(wins, mine, strict=True))  # fmt: skip
        milestones = [_shown(censored_median([r["milestones"].get(m) for r in mine]))
                      for m in MILESTONES]  # fmt: skip
        won = sum(1 for w in wins if w)
        lines.append(f"| {name} | {len(mine)} | {_shown(censored_median(wins))} "
                     f"({won}/{len(mine)}) | {per_seed} | "
                     + " | ".join(milestones) + " |")  # fmt: skip
    return "\n".join(lines)


def _shown(value: float | None) -> str:
    return "never" if value is None else f"{value:,.0f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", nargs="+", default=None)
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--max-env-steps", type=int, default=800_000)
    parser.add_argument("--store", default=str(OUT / "store"))
    parser.add_argument("--rules-version", default="", help="R_phi from the rules judges")
    parser.add_argument("--noisy-version", default="", help="R_phi from noisy judges (0.75)")
    parser.add_argument("--refit-every", type=int, default=25_000,
                        help="judges-* rows: env steps between refit rounds")  # fmt: skip
    parser.add_argument("--out", default=str(OUT))
    parser.add_argument("--work", default="runs/bench-explore-level")
    args = parser.parse_args()
    table_rows = rows(args)
    chosen = args.rows or list(table_rows)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for seed in args.seeds:  # seed by seed: a budget cut short leaves every row on the same seeds
        for name in chosen:
            path = out / f"{name}-seed{seed}.json"
            if path.exists():
                continue
            result = run_one(name, table_rows[name], seed, args)
            path.write_text(json.dumps(result, indent=1))
            print(json.dumps(result), flush=True)
    results = [json.loads(p.read_text()) for p in sorted(out.glob("*-seed*.json"))]
    markdown = table(results, list(table_rows))
    (out / "table.md").write_text(markdown + "\n")
    print(markdown)


if __name__ == "__main__":
    main()

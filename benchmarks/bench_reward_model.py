"""Learning with the reward model: `full` vs `full + RM shaping` vs `full + SIL`, same budget, seeds.

Per seed: a base burst of `full` (curiosity + archive) exports every episode; the rules judges
score its segments (`koholint evaluate`); R_phi is fitted on them (`koholint train-reward-model`).
Then three continuations from the base burst's checkpoint, each `--steps` more env steps:
`full`, `full + RM shaping` (that version, scale `--shaping-scale`) and `full + SIL`
(`--sil-weight`). Printed and written to `<out>/reward_model.json`: rooms, cells, milestones
reached (furthest progress), win rate per continuation, and the RM's held-out accuracy against
the judges.

    .venv/bin/python benchmarks/bench_reward_model.py --base-steps 16384 --steps 32768 --seeds 0
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from koholint.env.zelda import MILESTONES

EPISODE = 1024
FULL = {"curiosity_weight": 1.0, "archive_restart_every": 4}
CONTINUATIONS: dict[str, dict[str, Any]] = {
    "full": {},
    "full+rm-shaping": {"reward": {"model": "VERSION"}},
    "full+sil": {"sil": {"weight": "SIL"}},
}


def train(run: str, steps: int, seed: int, folder: Path, workers: int, envs: int,
          **settings: Any) -> dict[str, Any]:  # fmt: skip
    from trainer.config import Deployment
    from trainer.ppo.config import TrainConfig
    from trainer.ppo.run import TrainingRun

    config = TrainConfig.load({
        "run": run, "total_env_steps": steps, "seed": seed, "env": {"max_episode_steps": EPISODE},
        "num_env_runners": workers, "envs_per_env_runner": envs, "checkpoint_every_iterations": 1000,
        **FULL, **settings,
    }, environ={})  # fmt: skip
    deployment = Deployment(store_url=str(folder / "store"), run_dir=str(folder / "runs"))
    started = time.perf_counter()
    status = TrainingRun(config, deployment).run()
    if status.state != "finished":
        raise RuntimeError(f"{run}: the run ended {status.state}: {status.error}")
    return {
        "rooms": status.rooms_mean, "cells": status.cells_mean, "win_rate": status.win_rate,
        "reached": {m: status.reached.get(m, 0.0) for m in MILESTONES},
        "env_steps": status.env_steps, "wall_s": round(time.perf_counter() - started, 1),
        "shaped_steps": status.shaped_steps,
    }  # fmt: skip


def koholint(*arguments: str) -> str:
    completed = subprocess.run([sys.executable, "-m", "koholint.cli", *arguments],
                               capture_output=True, text=True, check=False)  # fmt: skip
    if completed.returncode not in (0, 1):
        raise RuntimeError(f"koholint {arguments[0]} failed: {completed.stderr[-2000:]}")
    return completed.stdout


def last_checkpoint(folder: Path, run: str) -> str:
    from koholint.store import LocalStore

    ledger = json.loads(LocalStore(folder / "store").get(f"checkpoints/{run}/ledger.json"))
    return str(max(ledger["checkpoints"], key=lambda record: record["step"])["name"])


def one_seed(seed: int, args: argparse.Namespace) -> dict[str, Any]:
    folder = Path(tempfile.mkdtemp(prefix=f"bench-rm-{seed}-"))
    base = train(f"base-s{seed}", args.base_steps, seed, folder, args.workers, args.envs,
                 export_every_episodes=1)  # fmt: skip
    checkpoint = last_checkpoint(folder, f"base-s{seed}")
    koholint("evaluate", "--run", f"base-s{seed}", "--store", str(folder / "store"))
    status = json.loads(koholint("train-reward-model", "--store", str(folder / "store"),
                                 "--seed", str(seed)).strip().splitlines()[-1])  # fmt: skip
    print(f"seed {seed}: base {base}\nseed {seed}: reward model {status}", flush=True)
    rows = {"base": base, "reward_model": status}
    for name, settings in CONTINUATIONS.items():
        if "reward" in settings and status["state"] != "published":
            rows[name] = {"skipped": "no reward model was published"}
            continue
        chosen = {"VERSION": status.get("version"), "SIL": args.sil_weight}
        values = {group: {key: chosen.get(value, value) for key, value in fields.items()}
                  for group, fields in settings.items()}  # fmt: skip
        if "reward" in values:
            values["reward"]["shaping_scale"] = args.shaping_scale
        rows[name] = train(f"{name.replace('+', '-')}-s{seed}", args.base_steps + args.steps, seed,
                           folder, args.workers, args.envs, resume_from=checkpoint,
                           export_every_episodes=0, **values)  # fmt: skip
        print(f"seed {seed}: {name} {rows[name]}", flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--base-steps", type=int, default=16_384)
    parser.add_argument("--steps", type=int, default=32_768, help="steps of each continuation")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--envs", type=int, default=4)
    parser.add_argument("--shaping-scale", type=float, default=0.1)
    parser.add_argument("--sil-weight", type=float, default=0.1)
    parser.add_argument("--out", default="benchmarks/results/reward-model")
    args = parser.parse_args()
    results = {str(seed): one_seed(seed, args) for seed in args.seeds}
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    document = {"settings": vars(args), "seeds": results}
    (out / "reward_model.json").write_text(json.dumps(document, indent=2))
    print(f"wrote {out / 'reward_model.json'}")


if __name__ == "__main__":
    main()

"""Learning at a fixed budget: random play, PPO, + coverage, + RND, + the Go-Explore archive;
and Go-Explore phase 1 (`explore`): env steps to the first win and to each milestone.

Each configuration trains (or plays, for random) `--steps` env steps from `start_of_play`
with 1,024-step episodes and writes `<out>/<config>.json` (final window means of rooms and
cells per episode, win rate, the highest share of episodes that reached each milestone,
steps/s, wall time, the curve). `--plot` draws every result found in `<out>` into
`<out>/learning_curve.png`. Run configurations one at a time; results accumulate.

    .venv/bin/python benchmarks/bench_learning.py --config random --steps 1000000
    .venv/bin/python benchmarks/bench_learning.py --config full --steps 1000000 --plot
    .venv/bin/python benchmarks/bench_learning.py --config explore --seeds 0 1 2 --workers 2 \
        --steps 2000000 --out benchmarks/results/win

`explore` runs phase 1 (``koholint.explore``) once per seed until the first win or `--steps`
env steps over `--workers` processes, and writes `<out>/explore.json`: per seed, env steps
to the win and to each milestone, cells, wall time, and whether the winning trajectory
replays to the credits; `<out>/explore-seed<N>.actions` keeps each win.

`robustify` is phase 2 (``koholint train --phase robustify``, the recipe in ``ROBUSTIFY``)
for `--steps`; then each checkpoint's policy (~every 250k steps) plays `--episodes`
episodes from `start_of_play`, in order, until one wins 90% of them (the goal), and the
last: `evaluations` and `steps_to_goal` in `<out>/robustify.json`.

    .venv/bin/python benchmarks/bench_learning.py --config robustify --steps 5000000 --seed 0 \
        --out benchmarks/results/win

`evaluate` is phase 2's measure: a trained policy (`--policy`: a checkpoint folder or a
policy folder, ``koholint.baselines.trained``) plays `--episodes` episodes (seeds 0..N-1,
in `--workers` processes; the seeds fix the results) from `start_of_play` and from power-on with sticky actions `--sticky` (0.25), and from each
`--demo <trajectory.actions>@<step>`, in the env settings it trained with; writes
`<out>/evaluate.json` (win rate, Wilson 95% interval, mean steps and progress level per
start) and prints the BENCHMARKS.md rows.

    .venv/bin/python benchmarks/bench_learning.py --config evaluate --policy benchmarks/results/win/policy \
        --demo benchmarks/results/win/explore-seed0.actions@768 --out benchmarks/results/win
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from koholint.env.zelda import MILESTONES, ZeldaEnv
from trainer.ppo.config import PHASE_TWO_RECIPE

EPISODE = 1024
ROBUSTIFY: dict[str, Any] = {
    # phase 2's recipe (services/trainer/recipes/phase-two.toml) is the layer under these:
    # its episode length over this script's EPISODE, without its cloning (a row of its own)
    # and its evaluations (this script plays the checkpoints)
    "phase": "robustify", "env": {"max_episode_steps": PHASE_TWO_RECIPE["env"]["max_episode_steps"]},
    "curriculum": {"trajectory": "benchmarks/results/win/explore-seed0-health-short.actions"},
    "imitation": {"clone_epochs": 0, "teachers": [], "corrections": 0},
    "evaluation": {"every_env_steps": 0, "stop_at_win_rate": 0.0},
    "checkpoint_every_iterations": PHASE_TWO_RECIPE["checkpoint_every_iterations"],
}  # fmt: skip
GOAL_WIN_RATE = 0.9
PPO_CONFIGS: dict[str, dict[str, Any]] = {
    "ppo": {
        "env": {"reward_mode": "progress"},
        "curiosity_weight": 0.0,
        "archive_restart_every": 0,
    },
    "ppo+coverage": {"curiosity_weight": 0.0, "archive_restart_every": 0},
    "ppo+coverage+rnd": {"curiosity_weight": 1.0, "archive_restart_every": 0},
    "full": {"curiosity_weight": 1.0, "archive_restart_every": 4},  # + the archive
    # + hybrid control: the rules planner takes dialogs and the block puzzle
    "full+planner": {"curiosity_weight": 1.0, "archive_restart_every": 4, "planner": "rules"},
    # Go-Explore phase 2: the backward curriculum over phase 1's win (prefer-health, seed 0,
    # shortened), SIL 0.1, on the route's progress alone (no rooms, rupees or kills: each
    # paid a detour, BENCHMARKS.md), gamma 0.999, three walks of the route, a policy
    # checkpoint every ~250k steps
    "robustify": ROBUSTIFY,
    "robustify+swarm": {
        **ROBUSTIFY,
        "curriculum": {**ROBUSTIFY["curriculum"], "swarm_share": 0.25},
    },
    # + the demonstration cloned into the policy before PPO (warm_start.py): every segment
    # of the route taught at once, before the curriculum teaches them one after another
    "robustify+clone": {
        **ROBUSTIFY,
        "imitation": {**ROBUSTIFY["imitation"], "clone_epochs": 400},
    },
}
WINDOW = 100


def random_play(steps: int, seed: int) -> dict[str, Any]:
    env = ZeldaEnv(max_episode_steps=EPISODE, info_state=False)
    rng = np.random.default_rng(seed)
    env.reset(seed=seed)
    episodes: list[dict[str, Any]] = []
    curve = []
    started = time.perf_counter()
    for step in range(1, steps + 1):
        _, _, terminated, truncated, info = env.step(int(rng.integers(9)))
        if terminated or truncated:
            episodes.append({"rooms": info["rooms"], "cells": info["cells"], "won": terminated,
                             **info["milestones"]})  # fmt: skip
            recent = episodes[-WINDOW:]
            curve.append({"env_steps": step, "rooms": _mean(recent, "rooms"),
                          "cells": _mean(recent, "cells")})  # fmt: skip
            env.reset()
    elapsed = time.perf_counter() - started
    recent = episodes[-WINDOW:]
    return {
        "rooms": _mean(recent, "rooms"), "cells": _mean(recent, "cells"),
        "win_rate": _mean(recent, "won"),
        "reached": {m: max(_mean(episodes[i : i + WINDOW], m) for i in range(0, len(episodes), WINDOW))
                    for m in MILESTONES},
        "steps_per_second": steps / elapsed, "wall_s": elapsed, "env_steps": steps, "curve": curve,
    }  # fmt: skip


def _mean(rows: list[dict[str, Any]], key: str) -> float:
    return float(np.mean([float(row[key]) for row in rows])) if rows else 0.0


def train(
    config_name: str, steps: int, seed: int, workers: int, envs: int, episodes: int = 100
) -> dict[str, Any]:
    from trainer.config import Deployment
    from trainer.ppo.config import TrainConfig
    from trainer.ppo.run import TrainingRun

    folder = tempfile.mkdtemp(prefix=f"learning-{config_name}-")
    settings = dict(PPO_CONFIGS[config_name])
    env = {"max_episode_steps": EPISODE, **settings.pop("env", {})}
    config = TrainConfig.load(
        {
            "run": f"learning-{config_name.replace('+', '-')}", "total_env_steps": steps, "seed": seed,
            "env": env, "num_env_runners": workers, "envs_per_env_runner": envs,
            "export_every_episodes": 0, "checkpoint_every_iterations": 50, **settings,
        },
        environ={},
    )  # fmt: skip
    deployment = Deployment(store_url=f"{folder}/store", run_dir=f"{folder}/runs")
    started = time.perf_counter()
    run = TrainingRun(config, deployment)
    status = run.run()
    elapsed = time.perf_counter() - started
    if status.state != "finished":
        raise RuntimeError(f"{config_name}: the run ended {status.state}: {status.error}")
    result = {
        "rooms": status.rooms_mean, "cells": status.cells_mean, "win_rate": status.win_rate,
        "reached": {m: status.reached.get(m, 0.0) for m in MILESTONES},
        "archive_cells": status.archive_cells, "steps_per_second": status.steps_per_second,
        "wall_s": elapsed, "env_steps": status.env_steps, "curve": run.curve,
        "curriculum": status.curriculum, "store": deployment.store_url, "run": config.run,
    }  # fmt: skip
    if config.phase == "robustify":
        result.update(
            evaluate_checkpoints(Path(deployment.store_url), config.run, episodes, workers)
        )
    return result


def evaluate_checkpoints(store: Path, run: str, episodes: int, workers: int) -> dict[str, Any]:
    """Phase 2's goal measured along the run: each checkpoint's policy from `start_of_play`
    (sticky 0.25 as trained, `episodes` seeded episodes) in order, up to the first that wins
    GOAL_WIN_RATE of them, and the last."""
    from koholint.baselines.trained import PlaySettings, load_policy, play_policy

    folders = sorted(
        (f for f in (store / "checkpoints" / run).iterdir() if f.name.isdigit()),
        key=lambda f: int(f.name),
    )
    rows: list[dict[str, Any]] = []
    for folder in folders:
        if rows and rows[-1]["win_rate"] >= GOAL_WIN_RATE and folder != folders[-1]:
            continue
        report = play_policy(load_policy(folder), PlaySettings(episodes=episodes, workers=workers))
        row = {"env_steps": int(folder.name), "wins": report.wins, "win_rate": report.win_rate}
        print(json.dumps(row), flush=True)
        rows.append(row)
    reached = [row["env_steps"] for row in rows if row["win_rate"] >= GOAL_WIN_RATE]
    return {"evaluations": rows, "steps_to_goal": reached[0] if reached else None}


def explore_seeds(steps: int, seeds: list[int], workers: int, out: Path) -> dict[str, Any]:
    from koholint.explore import ExploreConfig, explore
    from koholint.explore.trajectory import write_trajectory

    rows = []
    for seed in seeds:
        result = explore(ExploreConfig(seed=seed, workers=workers, max_env_steps=steps))
        row = {
            "seed": seed, "won": result.won, "env_steps": result.env_steps,
            "milestones": result.milestones, "cells": result.cells,
            "top_level": result.top_level, "wall_s": round(result.seconds, 1),
            "steps_per_second": round(result.env_steps / result.seconds),
            "trajectory_steps": len(result.trajectory) if result.trajectory else None,
        }  # fmt: skip
        if result.trajectory is not None:
            (out / f"explore-seed{seed}.actions").write_bytes(result.trajectory)
            check = write_trajectory(result.trajectory, out / f"explore-seed{seed}.jsonl")
            row["replay_wins"] = check.won
        print(json.dumps(row), flush=True)
        rows.append(row)
    wins = [row["env_steps"] for row in rows if row["won"]]
    return {"workers": workers, "budget": steps, "runs": rows, "wins": len(wins),
            "median_steps_to_win": float(np.median(wins)) if wins else None}  # fmt: skip


def evaluate(
    policy_path: Path, episodes: int, sticky: float, demos: list[str], workers: int
) -> dict[str, Any]:
    """Win rate of a trained policy from start_of_play, power-on and the given demo steps."""
    from koholint.baselines.trained import PlaySettings, load_policy, play_policy

    policy = load_policy(policy_path)
    rows = []
    for start in ["start_of_play", "power-on", *(f"demo:{demo}" for demo in demos)]:
        started = time.perf_counter()
        settings = PlaySettings(start=start, episodes=episodes, sticky=sticky, workers=workers)
        report = play_policy(policy, settings)
        low, high = report.interval()
        played = report.episodes
        row = {
            "start": report.start, "sticky": report.sticky, "planner": report.planner,
            "max_steps": report.max_steps, "episodes": len(played), "wins": report.wins,
            "win_rate": report.win_rate, "interval_95": [round(low, 4), round(high, 4)],
            "mean_steps": float(np.mean([e.steps for e in played])),
            "mean_level": float(np.mean([e.level for e in played])),
            "reached": {m: _mean([e.milestones for e in played], m) for m in MILESTONES},
            "workers": workers,
            "wall_s": round(time.perf_counter() - started, 1),
        }  # fmt: skip
        print(json.dumps(row), flush=True)
        rows.append(row)
    return {"policy": str(policy.path), "source": policy.source, "rows": rows}


def evaluation_table(result: dict[str, Any]) -> str:
    """The rows of BENCHMARKS.md's evaluation table."""
    lines = ["| start | sticky | episodes | wins | win rate | 95% interval | mean steps | mean level |",
             "| --- | ---: | ---: | ---: | ---: | --- | ---: | ---: |"]  # fmt: skip
    for row in result["rows"]:
        low, high = row["interval_95"]
        lines.append(f"| {row['start']} | {row['sticky']} | {row['episodes']} | {row['wins']} | "
                     f"{row['win_rate']:.2f} | {low:.2f}-{high:.2f} | {row['mean_steps']:.0f} | "
                     f"{row['mean_level']:.2f} |")  # fmt: skip
    return "\n".join(lines)


def plot(out: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, (rooms, cells) = plt.subplots(1, 2, figsize=(11, 4))
    for path in sorted(out.glob("*.json")):
        result = json.loads(path.read_text())
        xs = [point["env_steps"] for point in result["curve"]]
        rooms.plot(xs, [p["rooms"] for p in result["curve"]], label=path.stem)
        cells.plot(xs, [p["cells"] for p in result["curve"]], label=path.stem)
    for axis, name in ((rooms, "rooms per episode"), (cells, "cells per episode")):
        axis.set_xlabel("env steps")
        axis.set_ylabel(f"{name} (mean of the last {WINDOW} episodes)")
        axis.legend()
    figure.tight_layout()
    target = out / "learning_curve.png"
    figure.savefig(target, dpi=80)
    return target


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", choices=["random", "explore", "evaluate", *PPO_CONFIGS])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2],
                        help="explore: one phase-1 run per seed")  # fmt: skip
    parser.add_argument("--steps", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--envs", type=int, default=4)
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/learning"))
    parser.add_argument("--plot", action="store_true")
    parser.add_argument("--policy", type=Path, help="evaluate: a checkpoint or policy folder")
    parser.add_argument("--episodes", type=int, default=100,
                        help="evaluate, robustify: episodes per start / per checkpoint")  # fmt: skip
    parser.add_argument("--sticky", type=float, default=0.25, help="evaluate: sticky actions")
    parser.add_argument("--demo", nargs="*", default=[],
                        help="evaluate: also from these <trajectory.actions>@<step> starts")  # fmt: skip
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    if args.config == "evaluate":
        if args.policy is None:
            parser.error("--config evaluate needs --policy PATH (a checkpoint or policy folder)")
        result = evaluate(args.policy, args.episodes, args.sticky, args.demo, args.workers)
        (args.out / "evaluate.json").write_text(json.dumps(result, indent=1))
        print(evaluation_table(result))
    elif args.config == "explore":
        result = explore_seeds(args.steps, args.seeds, args.workers, args.out)
        (args.out / "explore.json").write_text(json.dumps(result, indent=1))
        print(json.dumps({k: v for k, v in result.items() if k != "runs"}, indent=1))
    elif args.config:
        if args.config == "random":
            result = random_play(args.steps, args.seed)
        else:
            result = train(
                args.config, args.steps, args.seed, args.workers, args.envs, args.episodes
            )
        result.update(config=args.config, seed=args.seed)
        (args.out / f"{args.config}.json").write_text(json.dumps(result, indent=1))
        summary = {k: v for k, v in result.items() if k != "curve"}
        print(json.dumps(summary, indent=1))
    if args.plot:
        print(f"wrote {plot(args.out)}")


if __name__ == "__main__":
    main()

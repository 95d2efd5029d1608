"""``koholint loop``: the whole system's loop on one machine, burst after burst (or, with
``--online``, while one run trains: ``koholint.online``).

    burst 1: koholint train (export every episode)  -> segments in the store
             koholint evaluate (the judges)          -> score records
             koholint train-reward-model             -> a reward-model version
    burst 2: koholint train --resume <burst 1's last checkpoint> --reward-model <version>
             ... and so on for --bursts N; then a table comparing the bursts.

Each stage is the same command a user runs (a subprocess: the library never imports a
service), so the loop takes the same code paths as the fleet. With no settings it runs on the
embedded defaults (a local store folder, no bus, the rules judges); the ``KOHOLINT_*``
settings in the environment (an S3 store, Redis, llm-d judges) reach every stage unchanged.
Results are read back from the object store: manifests, score batches, the reward-model
card, the checkpoint ledgers.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from koholint.reward.model import RewardModelError, latest_version, read_card
from koholint.stages import count_scores, koholint
from koholint.store import ObjectNotFoundError, ObjectStore, open_store

MAX_BURSTS = 10
TABLE_ROW = "{:<8}{:>9}{:>10}{:>8}{:>8}{:>7}{:>10}{:>13}  {}"


class LoopError(RuntimeError):
    """A stage failed; the message names it and where its log is."""


@dataclass
class BurstResult:
    burst: int
    run: str
    steps: int = 0
    metrics: dict[str, float] = field(default_factory=dict)
    segments: int = 0
    scored: int = 0
    pairs: int = 0
    accuracy: float | None = None
    shaped_by: str = ""
    """the reward-model version that shaped this burst ('' for none)"""
    version_out: str = ""
    """the version trained on this burst's scores"""


@dataclass
class LoopPlan:
    name: str
    bursts: int
    steps_per_burst: int
    store_url: str
    run_dir: str
    seed: int
    shaping_scale: float
    train_flags: list[str]

    def run_name(self, burst: int) -> str:
        return f"{self.name}-b{burst}"


def run_stage(plan: LoopPlan, stage: str, command: list[str], ok: tuple[int, ...] = (0,)) -> str:
    """Run one stage with its output in `<run_dir>/<name>/<stage>.log`; returns the output.
    An exit status outside `ok` stops the loop, naming the stage and its log."""
    log = Path(plan.run_dir) / plan.name / f"{stage}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    completed = subprocess.run(command, capture_output=True, text=True, check=False)
    log.write_text(f"$ {' '.join(command)}\n{completed.stdout}\n{completed.stderr}")
    if completed.returncode not in ok:
        tail = (completed.stderr or completed.stdout).strip().splitlines()[-3:]
        raise LoopError(
            f"stage {stage} failed (exit {completed.returncode}): {' | '.join(tail)}; log: {log}"
        )
    print(f"  {stage:<22} done in {time.perf_counter() - started:6.1f} s   (log: {log})")
    return completed.stdout


def train_burst(plan: LoopPlan, burst: int, resume: str, version: str) -> None:
    # The trainer counts steps across resumes: burst b ends at b * steps_per_burst.
    command = koholint(
        "train", "--run", plan.run_name(burst), "--steps", str(burst * plan.steps_per_burst),
        "--store", plan.store_url, "--run-dir", plan.run_dir, "--seed", str(plan.seed),
        "--export-every-episodes", "1", *plan.train_flags,
    )  # fmt: skip
    if resume:
        command += ["--resume", resume]
    if version:
        command += ["--reward-model", version, "--shaping-scale", str(plan.shaping_scale)]
    run_stage(plan, f"burst{burst}-train", command)


def evaluate_burst(plan: LoopPlan, burst: int) -> None:
    command = koholint("evaluate", "--run", plan.run_name(burst), "--store", plan.store_url)
    run_stage(plan, f"burst{burst}-evaluate", command)


def train_reward_model(plan: LoopPlan, burst: int) -> dict[str, Any]:
    """Fit R_phi on every score so far; the command's status (published or refused, why)."""
    # Exit 1: trained but refused (the status says why); the loop goes on without a new version.
    command = koholint("train-reward-model", "--store", plan.store_url, "--seed", str(plan.seed))
    output = run_stage(plan, f"burst{burst}-reward-model", command, ok=(0, 1))
    lines = [line for line in output.strip().splitlines() if line.startswith("{")]
    if not lines:
        raise LoopError(
            f"train-reward-model printed no status (log under {plan.run_dir}/{plan.name})"
        )
    status: dict[str, Any] = json.loads(lines[-1])
    return status


def last_checkpoint(store: ObjectStore, run: str) -> tuple[str, int, dict[str, float]]:
    """(name, step, metrics) of a run's newest checkpoint, from its ledger in the store."""
    try:
        ledger = json.loads(store.get(f"checkpoints/{run}/ledger.json"))
    except ObjectNotFoundError:
        raise LoopError(f"run {run} left no checkpoint ledger in the store") from None
    newest = max(ledger["checkpoints"], key=lambda record: record["step"])
    return newest["name"], int(newest["step"]), dict(newest.get("metrics", {}))


def count_segments(store: ObjectStore, run: str) -> int:
    return sum(1 for key in store.list(f"episodes/{run}/") if key.endswith("/manifest.json"))


def run_loop(plan: LoopPlan) -> list[BurstResult]:
    store = open_store(plan.store_url)
    results: list[BurstResult] = []
    resume, version = "", ""
    for burst in range(1, plan.bursts + 1):
        result = BurstResult(burst, plan.run_name(burst), shaped_by=version)
        print(
            f"burst {burst}: {result.run}"
            + (f", shaped by {version}" if version else ", no shaping")
        )
        train_burst(plan, burst, resume, version)
        resume, result.steps, result.metrics = last_checkpoint(store, result.run)
        result.segments = count_segments(store, result.run)
        print(f"  segments exported      {result.segments}")
        if burst < plan.bursts:
            evaluate_burst(plan, burst)
            result.scored = count_scores(store, result.run)
            print(f"  segments scored        {result.scored}")
            version = _next_version(plan, burst, store, result, version)
        results.append(result)
    return results


def _next_version(plan: LoopPlan, burst: int, store: ObjectStore, result: BurstResult,
                  previous: str) -> str:  # fmt: skip
    status = train_reward_model(plan, burst)
    result.pairs = int(status.get("pairs", 0))
    result.accuracy = status.get("heldout_accuracy")
    accuracy = "-" if result.accuracy is None else f"{result.accuracy:.3f}"
    print(f"  preference pairs       {result.pairs}   held-out accuracy {accuracy}")
    if status.get("state") != "published":
        print(f"  reward model           not published: {status.get('detail')}")
        return previous
    result.version_out = str(status["version"])
    try:
        card = read_card(store, latest_version(store) or result.version_out)
        print(f"  reward model           {card.version} (encoder {card.encoder_version})")
    except RewardModelError as error:
        raise LoopError(f"the published version cannot be read back: {error}") from None
    return result.version_out


def print_table(results: list[BurstResult]) -> None:
    print("\n" + TABLE_ROW.format("burst", "steps", "return", "rooms", "cells", "wins",
                                  "|F|/step", "RM accuracy", "shaped by"))  # fmt: skip
    for result in results:
        metrics = result.metrics
        shaped_steps = sum(v for k, v in metrics.items() if k.startswith("shaped_steps."))
        per_step = metrics.get("shaping_abs_sum", 0.0) / shaped_steps if shaped_steps else 0.0
        print(TABLE_ROW.format(
            result.burst, result.steps, _shown(metrics.get("episode_return_mean")),
            _shown(metrics.get("rooms")), _shown(metrics.get("cells"), 0), _shown(metrics.get("win_rate")),
            f"{per_step:.4f}", _shown(result.accuracy, 3), result.shaped_by or "-",
        ))  # fmt: skip


def _shown(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def cmd_loop(args: argparse.Namespace) -> int:
    if args.online:
        return cmd_online(args)
    if not 2 <= args.bursts <= MAX_BURSTS or args.steps_per_burst < 1:
        print(
            f"koholint loop: --bursts must be 2..{MAX_BURSTS}, --steps-per-burst >= 1",
            file=sys.stderr,
        )
        return 2
    plan = LoopPlan(
        name=args.name or time.strftime("loop-%Y%m%d-%H%M%S"), bursts=args.bursts,
        steps_per_burst=args.steps_per_burst, store_url=args.store, run_dir=args.run_dir,
        seed=args.seed, shaping_scale=args.shaping_scale, train_flags=list(args.train_flag or []),
    )  # fmt: skip
    try:
        results = run_loop(plan)
    except LoopError as error:
        print(f"koholint loop: {error}", file=sys.stderr)
        return 1
    print_table(results)
    return 0


def cmd_online(args: argparse.Namespace) -> int:
    """--online: one run, judged and refitted while it trains (koholint.online)."""
    from koholint.online import OnlineLoop, OnlineLoopError, OnlinePlan, print_online

    if args.steps < 1 or args.refit_every < 1:
        print("koholint loop --online: --steps and --refit-every must be >= 1", file=sys.stderr)
        return 2
    train_flags = list(args.train_flag or [])
    train_flags += [f"--shaping-scale={args.shaping_scale}",
                    f"--reward-bonus-coefficient={args.bonus_coefficient}"]  # fmt: skip
    plan = OnlinePlan(
        run=args.name or time.strftime("online-%Y%m%d-%H%M%S"), steps=args.steps,
        store_url=args.store, run_dir=args.run_dir, seed=args.seed, mode=args.mode,
        refit_every=args.refit_every, export_every=args.export_every, train_flags=train_flags,
        evaluate_flags=list(args.evaluate_flag or []),
    )  # fmt: skip
    try:
        result = OnlineLoop(plan).run()
    except OnlineLoopError as error:
        print(f"koholint loop --online: {error}", file=sys.stderr)
        return 1
    print_online(result)
    return 0


def register(commands: argparse._SubParsersAction) -> None:
    loop = commands.add_parser(
        "loop", help="train, evaluate, fit the reward model, train again with shaping; compare"
    )
    loop.add_argument("--bursts", type=int, default=2, help="training bursts (default 2)")
    loop.add_argument("--steps-per-burst", type=int, default=4096, help="env steps per burst")
    loop.add_argument("--store", default="runs/store", help="object store URL (default runs/store)")
    loop.add_argument("--run-dir", default="runs", help="local folder for logs (default runs)")
    loop.add_argument("--name", default="", help="runs are <name>-b1, <name>-b2, ...")
    loop.add_argument("--seed", type=int, default=0)
    loop.add_argument("--shaping-scale", type=float, default=0.1, help="Phi = scale * R_phi")
    loop.add_argument("--train-flag", action="append", metavar="FLAG",
                      help="extra flag for every `koholint train` (repeatable), e.g. --train-flag=--workers=0")  # fmt: skip
    online = loop.add_argument_group(
        "online", "--online: one run trains while its segments are judged and R_phi refitted"
    )
    online.add_argument("--online", action="store_true",
                        help="one run; the judges and the reward model work beside it")  # fmt: skip
    online.add_argument("--steps", type=int, default=20_480, help="the run's env steps")
    online.add_argument("--mode", choices=("potential", "bonus"), default="potential",
                        help="how the trainer uses R_phi (its reward.mode)")  # fmt: skip
    online.add_argument("--refit-every", type=int, default=5,
                        help="training iterations between refits (default 5)")  # fmt: skip
    online.add_argument("--export-every", type=int, default=1,
                        help="every N-th episode of an env is exported for the judges")  # fmt: skip
    online.add_argument("--bonus-coefficient", type=float, default=0.2,
                        help="bonus mode: the weight of the standardised R_phi")  # fmt: skip
    online.add_argument("--evaluate-flag", action="append", metavar="FLAG",
                        help="extra flag for every `koholint evaluate` (repeatable)")  # fmt: skip
    loop.set_defaults(handler=cmd_loop)

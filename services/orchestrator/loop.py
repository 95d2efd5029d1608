"""``koholint loop``: the whole system's loop on one machine, burst after burst (or, with
``--online``, while one run trains: ``orchestrator.online``).

    burst 1: koholint train (export every episode)  -> segments in the store
             koholint evaluate (the judges)          -> score records
             koholint train-reward-model             -> a reward-model version
    burst 2: koholint train --resume <burst 1's last checkpoint> --reward-model <version>
             ... and so on for --bursts N; then a table comparing the bursts.

Each stage is the same command a user runs (a subprocess: the orchestrator imports no
service), so the loop takes the same code paths as the fleet. With no settings it runs on the
embedded defaults (a local store folder, no bus, the rules judges); the ``KOHOLINT_*``
settings in the environment (an S3 store, Redis, llm-d judges) reach every stage unchanged.
Results are read back from the object store: manifests, score batches, the reward-model
card, the checkpoint ledgers.
"""

from __future__ import annotations

import json
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from koholint.reward.model import RewardModelError, latest_version, read_card
from koholint.store import ObjectNotFoundError, ObjectStore, open_store
from orchestrator.stages import count_scores, koholint

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
    shaping_scale: float | None = None
    """Phi = scale * R_phi in the shaped bursts (None: the trainer's reward.shaping_scale)"""
    train_flags: list[str] = field(default_factory=list)

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
        command += ["--reward-model", version]
        if plan.shaping_scale is not None:
            command += ["--shaping-scale", str(plan.shaping_scale)]
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

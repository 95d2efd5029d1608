"""``koholint loop --online``: the judges and the reward model at work while the run trains.

    koholint train --reward-model latest --reward-mode <potential|bonus>   (runs throughout)
      at each new checkpoint (every --refit-every iterations):
        koholint evaluate --run <run>          the judges score the segments exported so far
        koholint train-reward-model            R_phi refitted on every score, published
      the trainer hot-loads each published version between iterations (koholint.reward.hotload)
    when the run ends, a refit still under way is stopped.

Every stage is the command a user runs, as a subprocess (the orchestrator imports no
service), so ``KOHOLINT_*`` settings (an S3 store, Redis, the judges' backend) reach them
all. A refit round starts when the trainer's ledger has a checkpoint the last round had not
seen; rounds never overlap (one that is still running when a checkpoint arrives is followed
by the next as soon as it ends).
"""

from __future__ import annotations

import json
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from koholint.reward.refit import Refit
from koholint.store import ObjectNotFoundError, ObjectStore, open_store
from orchestrator.config import Settings
from orchestrator.stages import count_scores
from orchestrator.stages import koholint as koholint_command

POLL_SECONDS = 1.0
STOP_GRACE_SECONDS = 60.0
DEFAULTS = Settings.model_construct()
"""The loop's settings' defaults (a plan made in code starts from them)."""
REFIT_ROW = "{:<7}{:>10}{:>10}{:>9}{:>8}{:>10}  {}"


class OnlineLoopError(RuntimeError):
    """A stage failed or the trainer ended badly; the message names it and its log."""


@dataclass
class OnlinePlan:
    run: str
    steps: int
    store_url: str
    run_dir: str
    seed: int = DEFAULTS.seed
    mode: str = ""
    """how the trainer uses R_phi: potential or bonus (its reward.mode; empty: the trainer's)"""
    refit_every: int = DEFAULTS.refit_every
    """training iterations between refits (the trainer's checkpoint_every_iterations)"""
    export_every: int = DEFAULTS.export_every
    """every N-th episode of an env is exported for the judges"""
    train_flags: list[str] = field(default_factory=list)
    evaluate_flags: list[str] = field(default_factory=list)


@dataclass
class OnlineResult:
    run: str
    refits: list[Refit]
    steps: int = 0
    metrics: dict[str, float] = field(default_factory=dict)


class Stage:
    """A running command with its output in a log file."""

    def __init__(self, name: str, command: list[str], log: Path) -> None:
        self.name, self.log = name, log
        log.parent.mkdir(parents=True, exist_ok=True)
        self._output: IO[str] = log.open("w")
        self._output.write(f"$ {' '.join(command)}\n")
        self._output.flush()
        self.started = time.perf_counter()
        self.process = subprocess.Popen(command, stdout=self._output, stderr=subprocess.STDOUT,
                                        text=True)  # fmt: skip

    def poll(self) -> int | None:
        code = self.process.poll()
        if code is not None:
            self._output.close()
        return code

    def output(self) -> str:
        return self.log.read_text()

    def stop(self, interrupt: bool = False, grace: float = 10.0) -> None:
        """Ask it to end (SIGINT: the trainer checkpoints first; else SIGTERM), then kill it."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT if interrupt else signal.SIGTERM)
            try:
                self.process.wait(grace)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.poll()

    def failure(self) -> str:
        tail = self.output().strip().splitlines()[-3:]
        return f"{self.name} failed (exit {self.process.returncode}): {' | '.join(tail)}; log: {self.log}"


class OnlineLoop:
    """Runs the trainer and, beside it, refit rounds; `run()` blocks until the run ends."""

    def __init__(self, plan: OnlinePlan) -> None:
        self.plan = plan
        self.store: ObjectStore = open_store(plan.store_url)
        self.logs = Path(plan.run_dir) / plan.run
        self.refits: list[Refit] = []
        self._round: Stage | None = None
        self._checkpoints_seen = 0

    def train_command(self) -> list[str]:
        plan = self.plan
        return koholint_command(
            "train", "--run", plan.run, "--steps", str(plan.steps), "--store", plan.store_url,
            "--run-dir", plan.run_dir, "--seed", str(plan.seed), "--reward-model", "latest",
            *(["--reward-mode", plan.mode] if plan.mode else []),
            "--export-every-episodes", str(plan.export_every),
            "--checkpoint-every-iterations", str(plan.refit_every), *plan.train_flags,
        )  # fmt: skip

    def run(self) -> OnlineResult:
        trainer = Stage("train", self.train_command(), self.logs / "online-train.log")
        mode = self.plan.mode or "the trainer's reward mode"
        print(f"online loop: {self.plan.run} ({mode}), trainer log {trainer.log}", flush=True)
        try:
            while trainer.poll() is None:
                self.tick()
                time.sleep(POLL_SECONDS)
        except BaseException:
            trainer.stop(interrupt=True, grace=STOP_GRACE_SECONDS)
            raise
        finally:
            self._stop_round()
        if trainer.process.returncode != 0:
            raise OnlineLoopError(trainer.failure())
        steps, metrics = newest_checkpoint(self.store, self.plan.run)
        return OnlineResult(self.plan.run, self.refits, steps, metrics)

    def tick(self) -> None:
        """Advance the refit round (judges, then R_phi); start one at a new checkpoint."""
        if self._round is not None:
            code = self._round.poll()
            if code is None:
                return
            self._round_ended(self._round, code)
        if self._round is None:
            count, step = checkpoint_count(self.store, self.plan.run)
            if count > self._checkpoints_seen:
                self._checkpoints_seen = count
                self.refits.append(Refit(len(self.refits) + 1, step))
                self._round = self._stage("evaluate", koholint_command(
                    "evaluate", "--run", self.plan.run, "--store", self.plan.store_url,
                    *self.plan.evaluate_flags))  # fmt: skip

    def _stage(self, name: str, command: list[str]) -> Stage:
        refit = self.refits[-1]
        return Stage(name, command, self.logs / f"online-{refit.round:03d}-{name}.log")

    def _round_ended(self, stage: Stage, code: int) -> None:
        refit = self.refits[-1]
        self._round = None
        if stage.name == "evaluate":
            # exit 1: some segments deferred (a judge unreachable); the rest are scored
            if code not in (0, 1):
                raise OnlineLoopError(stage.failure())
            refit.scored = count_scores(self.store, self.plan.run)
            self._round = self._stage("reward-model", koholint_command(
                "train-reward-model", "--store", self.plan.store_url, "--seed",
                str(self.plan.seed)))  # fmt: skip
            return
        if code not in (0, 1):  # exit 1: fitted but refused (the status says why)
            raise OnlineLoopError(stage.failure())
        read_status(refit, stage.output())
        refit.ended_step = checkpoint_count(self.store, self.plan.run)[1]
        print(f"  refit {refit.round} at step {refit.step} (ended by step {refit.ended_step}): "
              f"{refit.state} {refit.version} "
              f"{refit.detail if refit.state != 'published' else ''}".rstrip(), flush=True)  # fmt: skip

    def _stop_round(self) -> None:
        if self._round is not None:
            self._round.stop()
            self.refits[-1].state = "stopped"
            self.refits[-1].detail = f"the run ended during {self._round.name}"
            self._round = None


def read_status(refit: Refit, output: str) -> None:
    """Fill `refit` from the JSON status line `koholint train-reward-model` prints last."""
    lines = [line for line in output.splitlines() if line.startswith("{")]
    if not lines:
        raise OnlineLoopError(f"train-reward-model printed no status: {output[-300:]}")
    status: dict[str, Any] = json.loads(lines[-1])
    refit.state = str(status.get("state", "refused"))
    refit.version = str(status.get("version") or "")
    refit.pairs = int(status.get("pairs") or 0)
    refit.accuracy = status.get("heldout_accuracy")
    refit.detail = str(status.get("detail", ""))


def read_ledger(store: ObjectStore, run: str) -> list[dict[str, Any]]:
    try:
        records: list[dict[str, Any]] = json.loads(store.get(f"checkpoints/{run}/ledger.json"))[
            "checkpoints"
        ]
    except ObjectNotFoundError:
        return []
    return records


def checkpoint_count(store: ObjectStore, run: str) -> tuple[int, int]:
    """(checkpoints in the run's ledger, the newest one's env steps)."""
    records = read_ledger(store, run)
    return len(records), max((int(record["step"]) for record in records), default=0)


def newest_checkpoint(store: ObjectStore, run: str) -> tuple[int, dict[str, float]]:
    records = read_ledger(store, run)
    if not records:
        raise OnlineLoopError(f"run {run} left no checkpoint ledger in the store")
    newest = max(records, key=lambda record: record["step"])
    return int(newest["step"]), dict(newest.get("metrics", {}))


def print_online(result: OnlineResult) -> None:
    print("\n" + REFIT_ROW.format("refit", "at step", "ended by", "scored", "pairs", "accuracy",
                                   "version"))  # fmt: skip
    for refit in result.refits:
        accuracy = "-" if refit.accuracy is None else f"{refit.accuracy:.3f}"
        outcome = refit.version if refit.state == "published" else f"{refit.state}: {refit.detail}"
        ended = "-" if refit.ended_step is None else refit.ended_step
        print(REFIT_ROW.format(refit.round, refit.step, ended, refit.scored, refit.pairs,
                               accuracy, outcome))  # fmt: skip
    metrics = result.metrics
    used = {k.removeprefix("shaped_steps."): int(v) for k, v in metrics.items()
            if k.startswith("shaped_steps.")}  # fmt: skip
    steps_used = sum(used.values())
    per_step = metrics.get("shaping_abs_sum", 0.0) / steps_used if steps_used else 0.0
    print(f"\nrun {result.run}: {result.steps} env steps; return "
          f"{metrics.get('episode_return_mean', float('nan')):.2f}, rooms "
          f"{metrics.get('rooms', float('nan')):.2f}, cells {metrics.get('cells', float('nan')):.1f}, "
          f"wins {metrics.get('win_rate', float('nan')):.2f}")  # fmt: skip
    print(f"reward-model steps {steps_used} over {len(used)} versions, |added|/step {per_step:.4f}")

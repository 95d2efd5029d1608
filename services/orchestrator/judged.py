"""``koholint explore --level judges``: phase 1 ranks its cells by an R_phi that the judges fit
on the explorer's own cells while it explores.

Every ``refit_every`` env steps (``LevelSpec``) a round runs:

1. the cells found or bettered since the last round, and as many cells judged in earlier rounds
   (``REVIEW_CELLS`` at most, drawn at random), are written to ``--store`` in a shuffled order as
   segments of ``CELLS_PER_SEGMENT`` steps, one step per cell (its observation and structured
   state), under ``episodes/<run>/cells-<round>/``: the judges compare states within a batch of
   segments, and without the earlier cells a round's frontier, most of it at one level, would
   never be compared with where the route began;
2. ``koholint evaluate --run <run>``: the judges compare the cells' states (every step of a
   segment, ``KOHOLINT_EVALUATOR_STATE_STRIDE=1``), measured against the RAM truth;
3. ``koholint train-reward-model --scores scores/<run>/`` refits R_phi on every comparison of
   the run so far and publishes it when its held-out accuracy clears the floor;
4. a published version re-levels the archive (``Archive.relevel``): a cell's level is R_phi's
   of its state, quantised (``koholint.explore.levels``) and ratcheted along the cells it was
   reached from (its parent's level, computed first), and the workers level new states with
   it. Before the first version every level is 0 (the ``none`` level).

Exploration waits for the round: the benchmark counts env steps, so a seed's result does not
depend on how busy the machine is. The stages are the commands a user runs, as subprocesses
(the orchestrator imports no service), so ``KOHOLINT_*`` settings reach them. Phase 1 finds
this class through the ``koholint.levels`` entry point (``koholint.explore.judging``).
"""

from __future__ import annotations

import os
import subprocess
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from koholint.env.encoding import encoding_size
from koholint.env.export import Segment, write_segment
from koholint.explore.archive import Archive
from koholint.explore.levels import LevelSpec, reward_model_level
from koholint.reward.refit import Refit
from koholint.store import open_store
from orchestrator.online import read_status
from orchestrator.stages import koholint as koholint_command

CELLS_PER_SEGMENT = 32
"""cells per exported segment: the reward model holds out whole segments, so a round of a few
hundred cells still gives it several to hold out"""
REVIEW_CELLS = 256
"""earlier cells exported again with a round's new ones, at most"""
STAGE_TIMEOUT_S = 1800


class JudgedLevelError(RuntimeError):
    """A stage of a refit round failed; the message names it and its log."""


@dataclass
class CellFacts:
    """What the judges and R_phi see of a cell's kept state."""

    observation: np.ndarray
    state: dict[str, Any]
    parent: str
    """the state id of the cell its run started from ('' for the start)"""


class JudgedLevels:
    """The refit rounds of one exploration (see the module docstring)."""

    def __init__(self, spec: LevelSpec, *, run: str, logs: Path, seed: int = 0) -> None:
        self.spec, self.run, self.logs, self.seed = spec, run, logs, seed
        self.store = open_store(spec.store)
        self.next_refit = spec.refit_every
        self.facts: dict[str, CellFacts] = {}
        self.pending: set[str] = set()
        """state ids whose facts the judges have not seen yet"""
        self.rounds: list[Refit] = []
        self.current = spec
        """the spec the workers level new states with: ``judges`` (level 0), then each version"""

    def add(self, state_id: str, observation: bytes, state: dict[str, Any], parent: str) -> None:
        """A cell's kept state is new or bettered."""
        vector, size = np.frombuffer(observation, np.float32), encoding_size(self.spec.encoding)
        if vector.shape != (size,):
            raise ValueError(f"cell {state_id}: observation of {vector.size} floats, not {size} "
                             f"(run the runner with record_states={self.spec.encoding!r})")  # fmt: skip
        self.facts[state_id] = CellFacts(vector, state, parent)
        self.pending.add(state_id)

    def due(self, env_steps: int) -> bool:
        return env_steps >= self.next_refit

    def refit(self, archive: Archive, env_steps: int) -> Refit:
        """One round at `env_steps` (see the module docstring); re-levels `archive` when a
        version is published."""
        while self.next_refit <= env_steps:
            self.next_refit += self.spec.refit_every
        refit = Refit(len(self.rounds) + 1, env_steps)
        self.rounds.append(refit)
        started = time.perf_counter()
        exported = self._export(archive, refit.round)
        if exported:
            self._stage(refit, "evaluate", self._evaluate_command(), accept=(0, 1))
            output = self._stage(refit, "reward-model", koholint_command(
                "train-reward-model", "--store", self.spec.store, "--seed", str(self.seed),
                "--scores", f"scores/{self.run}/"), accept=(0, 1))  # fmt: skip
            read_status(refit, output)
        else:
            refit.state, refit.detail = "skipped", "no new cells"
        if refit.state == "published":
            self._relevel(archive, refit.version)
        refit.ended_step = env_steps
        refit.detail = f"{exported} cells exported, {time.perf_counter() - started:.1f} s" + (
            f"; {refit.detail}" if refit.detail else "")  # fmt: skip
        return refit

    # -- a round's parts -------------------------------------------------------
    def _export(self, archive: Archive, round_number: int) -> int:
        """Write the pending cells that are still in the archive, with as many earlier ones, as
        segments; returns the new cells written."""
        live = {record.state_id: record.found_order for record in archive.cells.values()}
        new = sorted((i for i in self.pending if i in live), key=live.__getitem__)
        if not new:
            return 0
        earlier = sorted((i for i in self.facts if i in live and i not in self.pending),
                         key=live.__getitem__)  # fmt: skip
        rng = np.random.default_rng([self.seed, round_number])
        review = rng.permutation(len(earlier))[: min(len(new), REVIEW_CELLS)]
        chosen = new + [earlier[k] for k in review.tolist()]
        ids = [chosen[k] for k in rng.permutation(len(chosen)).tolist()]
        for index, start in enumerate(range(0, len(ids), CELLS_PER_SEGMENT)):
            chunk = ids[start : start + CELLS_PER_SEGMENT]
            steps = [
                {"t": t, "action": 0, "reward": 0.0,
                 "observation": self.facts[i].observation.tolist(), "state": self.facts[i].state}
                for t, i in enumerate(chunk)
            ]  # fmt: skip
            write_segment(self.store, Segment(self.run, f"cells-{round_number:03d}", index, steps,
                                              encoding=self.spec.encoding))  # fmt: skip
        self.pending.clear()
        return len(new)

    def _evaluate_command(self) -> list[str]:
        command = koholint_command("evaluate", "--run", self.run, "--store", self.spec.store,
                                   "--backend", self.spec.judges,
                                   "--state-question", self.spec.question)  # fmt: skip
        if self.spec.judges == "noisy":
            command += ["--noisy-accuracy", str(self.spec.noisy_accuracy)]
        return command

    def _stage(self, refit: Refit, name: str, command: list[str], accept: tuple[int, ...]) -> str:
        log = self.logs / f"judged-{refit.round:03d}-{name}.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        environment = {**os.environ, "KOHOLINT_EVALUATOR_STATE_STRIDE": "1",
                       "KOHOLINT_REWARD_MODEL_ENCODING": self.spec.encoding,
                       "KOHOLINT_REWARD_MODEL_TIE_WEIGHT": str(self.spec.tie_weight)}  # fmt: skip
        with log.open("w") as output:
            output.write(f"$ {' '.join(command)}\n")
            output.flush()
            done = subprocess.run(command, stdout=output, stderr=subprocess.STDOUT, text=True,
                                  env=environment, timeout=STAGE_TIMEOUT_S, check=False)  # fmt: skip
        text = log.read_text()
        if done.returncode not in accept:
            tail = " | ".join(text.strip().splitlines()[-3:])
            raise JudgedLevelError(f"{name} failed (exit {done.returncode}): {tail}; log: {log}")
        return text

    def _relevel(self, archive: Archive, version: str) -> None:
        """Every cell levelled by `version`, ratcheted along its parents (found first)."""
        current = self.spec.with_version(version)
        level_of = reward_model_level(current)
        records = sorted(archive.cells.values(), key=lambda record: record.found_order)
        known = [r for r in records if r.state_id in self.facts]
        observations = np.stack([self.facts[r.state_id].observation for r in known])
        if self.spec.level_bins:  # cut at the archive's shares of this version's R_phi
            thresholds = level_of.thresholds_for(observations, self.spec.level_bins)
            current, level_of = replace(current, thresholds=thresholds), level_of.cut_at(thresholds)
        self.current = current
        own = level_of.of_observations(observations)
        levels: dict[str, int] = {}
        for record, level in zip(known, own.tolist(), strict=True):
            parent = self.facts[record.state_id].parent
            levels[record.state_id] = max(int(level), levels.get(parent, 0))
        renamed = archive.relevel(
            {r.cell: levels[r.state_id] for r in records if r.state_id in levels}
        )
        holder = {old: new for old, (new, _) in renamed.items()}
        kept = {old: new for old, (new, survived) in renamed.items() if survived}
        self.facts = {kept[old]: facts for old, facts in self.facts.items() if old in kept}
        for facts in self.facts.values():  # a merged parent: the cell that absorbed it
            facts.parent = holder.get(facts.parent, "")
        self.pending = {kept[old] for old in self.pending if old in kept}


__all__ = ["CELLS_PER_SEGMENT", "REVIEW_CELLS", "CellFacts", "JudgedLevelError", "JudgedLevels"]

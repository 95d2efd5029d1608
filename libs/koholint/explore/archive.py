"""A Go-Explore-style archive of cells: where the agent has been, and how to get back there.

A cell is (room key, x // bin, y // bin, progress level, ...): where Link stands, and how far
along the route the game is (sword, puzzles solved, keys held and doors opened, instrument:
``koholint.env.zelda.progress_level``), as the Go-Explore paper's cells count the keys held.
Without the level the fewest-steps rule would keep the shorter path that skipped an item
the route needs further on. Callers may add more to a cell (phase 1
of ``koholint.explore`` adds the enemies left in the room and where the block stands).

For each cell the archive keeps the best save state that reached it — a higher level first,
then fewer steps into the episode, then a higher return — optionally with the actions that
reach it from the start (the trajectory), and counts how often the cell was visited and
chosen as a restart. Restarts are drawn with weight

    w = (1 / sqrt(1 + chosen) + 0.5 / sqrt(1 + visits) + 2 * found_order / cells)
        * LEVEL_BASE ** (level - highest level in the archive)

so cells rarely chosen, rarely visited and recently found (the frontier) come first, and a
cell one level below the best known weighs a third as much: restarts go where the route is.
A caller may draw with another base (phase 1 draws with 1, every level alike, while its
best level has not risen for a while: ``koholint.explore.explorer``).
The archive persists in the object store (``<prefix>/index.json``,
``<prefix>/states/<id>.state`` and ``<prefix>/trajectories/<id>.actions``) and a restarted run
resumes it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from koholint.store import ObjectStore, put_json

ARCHIVE_SCHEMA_VERSION = 3  # 2: cells carry the progress level; 3: it counts puzzles and doors
# (room key, x bin, y bin, progress level, ...): ints after the room key.
Cell = tuple[Any, ...]
RECENCY = 2.0
LEVEL_BASE = 3.0


@dataclass
class CellRecord:
    cell: Cell
    state_id: str
    steps: int
    episode_return: float
    visits: int = 1
    chosen: int = 0
    found_order: int = 0
    level: int = 0
    score: float = 0.0
    """compared after the level, before the steps (phase 1's prefer_health: hearts)"""

    def weight(
        self,
        archive_size: int,
        top_level: int | None = None,
        level_base: float = LEVEL_BASE,
        count_power: float = 0.5,
    ) -> float:
        """Rarely chosen and rarely visited cells weigh more (Go-Explore's count terms), and
        so do recently found ones: the newest cells are the frontier (up to +RECENCY). Each
        level below `top_level` divides the weight by `level_base`. `count_power` is the
        exponent of the count terms (0.5: Go-Explore's 1 / sqrt)."""
        recency = RECENCY * (self.found_order + 1) / max(archive_size, self.found_order + 1)
        chosen = (1 + self.chosen) ** -count_power
        counts = chosen + 0.5 * (1 + self.visits) ** -count_power + recency
        below = 0 if top_level is None else max(top_level - self.level, 0)
        return float(counts * level_base**-below)

    def better_than(
        self, level: int, steps: int, episode_return: float, score: float = 0.0
    ) -> bool:
        """Whether (level, score, steps, return) beats this record: higher level, then a
        higher score, then fewer steps, then a higher return."""
        mine = (self.level, self.score, -self.steps, self.episode_return)
        return (level, score, -steps, episode_return) > mine


def cell_id(cell: Cell) -> str:
    return hashlib.sha256(repr(cell).encode()).hexdigest()[:32]


class Archive:
    def __init__(
        self,
        *,
        store: ObjectStore | None = None,
        prefix: str = "archives/default",
        max_cells: int = 100_000,
        level_base: float = LEVEL_BASE,
        count_power: float = 0.5,
    ) -> None:
        if level_base < 1.0:
            raise ValueError(f"level_base {level_base} must be >= 1 (1 ignores the level)")
        if count_power <= 0:
            raise ValueError(f"count_power {count_power} must be > 0")
        self.level_base = level_base
        self.count_power = count_power
        self.store = store
        self.prefix = prefix.rstrip("/")
        self.max_cells = max_cells
        self.cells: dict[Cell, CellRecord] = {}
        self._states: dict[str, bytes] = {}
        self._trajectories: dict[str, bytes] = {}
        self._dirty: set[str] = set()
        self.top_level = 0
        self.found = 0
        """cells ever added: the next one's found_order (relevel merges cells, so not len)"""

    def __len__(self) -> int:
        return len(self.cells)

    def observe(
        self,
        cell: Cell,
        steps: int,
        episode_return: float,
        state: Callable[[], bytes],
        *,
        level: int | None = None,
        trajectory: Callable[[], bytes] | None = None,
        score: float = 0.0,
    ) -> bool:
        """Count a visit; keep the state when the cell is new or better reached (see
        CellRecord.better_than; `level` defaults to the cell's fourth entry). `state` and
        `trajectory` (the actions from the start, one byte each) are called only when kept."""
        if level is None:
            level = int(cell[3]) if len(cell) > 3 else 0
        record = self.cells.get(cell)
        if record is not None:
            record.visits += 1
            if not record.better_than(level, steps, episode_return, score):
                return False
            record.level, record.steps, record.episode_return = level, steps, episode_return
            record.score = score
        else:
            if len(self.cells) >= self.max_cells:
                return False
            record = CellRecord(
                cell, cell_id(cell), steps, episode_return, found_order=self.found,
                level=level, score=score,
            )  # fmt: skip
            self.cells[cell] = record
            self.found += 1
        self.top_level = max(self.top_level, level)
        self._states[record.state_id] = state()
        if trajectory is not None:
            self._trajectories[record.state_id] = trajectory()
        else:
            self._trajectories.pop(record.state_id, None)
        self._dirty.add(record.state_id)
        return True

    def best_steps(self) -> dict[Cell, int]:
        """The fewest steps known to reach each cell."""
        return {cell: record.steps for cell, record in self.cells.items()}

    def best_known(self) -> dict[Cell, tuple[float, int]]:
        """(score, steps) of each cell's kept state: what a new state must beat."""
        return {cell: (record.score, record.steps) for cell, record in self.cells.items()}

    def select(self, rng: np.random.Generator, level_base: float | None = None) -> CellRecord:
        """Draw a cell to restart from, by weight, and count the choice. `level_base`
        (default: the archive's) divides the weight per level below the best."""
        if not self.cells:
            raise LookupError("the archive is empty: observe some cells before selecting")
        records = list(self.cells.values())
        top = self.top_level
        base = self.level_base if level_base is None else level_base
        power = self.count_power
        found = max(self.found, len(records))  # recency over every cell ever found
        weights = np.array([record.weight(found, top, base, power) for record in records])
        record = records[int(rng.choice(len(records), p=weights / weights.sum()))]
        record.chosen += 1
        return record

    def relevel(self, levels: dict[Cell, int]) -> dict[str, tuple[str, bool]]:
        """Give cells new levels (a new level function: ``orchestrator.judged``): each
        cell's fourth entry becomes its new level; cells that then share a key merge into the
        better record (visits and choices added up). Returns, per old state id, the state id
        that now holds the cell and whether the old record is the one kept (False: merged
        into another). In-memory archives only."""
        if self.store is not None:
            raise LookupError("relevel works on an archive held in memory, not a stored one")
        merged: dict[Cell, CellRecord] = {}
        survivor_of: dict[str, Cell] = {}
        for record in sorted(self.cells.values(), key=lambda r: r.found_order):
            level = levels.get(record.cell, record.level)
            cell = (*record.cell[:3], level, *record.cell[4:])
            kept = merged.get(cell)
            survivor_of[record.state_id] = cell
            if kept is None:
                merged[cell] = record
                record.level = level
                continue
            if kept.better_than(level, record.steps, record.episode_return, record.score):
                record.visits += kept.visits
                record.chosen += kept.chosen
                record.found_order = kept.found_order
                record.level, merged[cell] = level, record
            else:
                kept.visits += record.visits
                kept.chosen += record.chosen
        states, trajectories = self._states, self._trajectories
        self._states, self._trajectories, self.cells = {}, {}, {}
        kept_ids = {record.state_id for record in merged.values()}
        for cell, record in merged.items():
            new_id = cell_id(cell)
            self._states[new_id] = states[record.state_id]
            if record.state_id in trajectories:
                self._trajectories[new_id] = trajectories[record.state_id]
            record.cell, record.state_id = cell, new_id
            self.cells[cell] = record
        self._dirty = set(self._states)
        self.top_level = max((record.level for record in self.cells.values()), default=0)
        return {old: (self.cells[cell].state_id, old in kept_ids)
                for old, cell in survivor_of.items()}  # fmt: skip

    def state(self, record: CellRecord) -> bytes:
        if record.state_id not in self._states:
            if self.store is None:
                raise LookupError(f"no state for cell {record.cell}")
            self._states[record.state_id] = self.store.get(
                f"{self.prefix}/states/{record.state_id}.state"
            )
        return self._states[record.state_id]

    def trajectory(self, record: CellRecord) -> bytes:
        """The actions (one byte each) that reach the cell's state from the start."""
        if record.state_id not in self._trajectories:
            key = f"{self.prefix}/trajectories/{record.state_id}.actions"
            if self.store is None or not self.store.exists(key):
                raise LookupError(f"no trajectory for cell {record.cell}")
            self._trajectories[record.state_id] = self.store.get(key)
        return self._trajectories[record.state_id]

    def save(self) -> None:
        """Write new and improved states, then the index, to the store."""
        if self.store is None:
            raise LookupError("this archive has no store to save into")
        for state_id in sorted(self._dirty):
            self.store.put(f"{self.prefix}/states/{state_id}.state", self._states[state_id])
            if state_id in self._trajectories:
                key = f"{self.prefix}/trajectories/{state_id}.actions"
                self.store.put(key, self._trajectories[state_id])
        self._dirty.clear()
        index = {
            "schema_version": ARCHIVE_SCHEMA_VERSION,
            "cells": [_record_to_json(record) for record in self.cells.values()],
        }
        put_json(self.store, f"{self.prefix}/index.json", index)

    @classmethod
    def load(
        cls,
        store: ObjectStore,
        prefix: str,
        max_cells: int = 100_000,
        level_base: float = LEVEL_BASE,
    ) -> Archive:
        """Resume an archive saved under `prefix` (an empty one if none was saved)."""
        archive = cls(store=store, prefix=prefix, max_cells=max_cells, level_base=level_base)
        if not store.exists(f"{archive.prefix}/index.json"):
            return archive
        index = json.loads(store.get(f"{archive.prefix}/index.json"))
        if index.get("schema_version") != ARCHIVE_SCHEMA_VERSION:
            raise ValueError(
                f"archive {archive.prefix}: schema_version {index.get('schema_version')} is not "
                f"{ARCHIVE_SCHEMA_VERSION} (an older trainer wrote it); start a run with another "
                f"name, or delete {archive.prefix}/ from the store"
            )
        for item in index["cells"]:
            record = _record_from_json(item)
            archive.cells[record.cell] = record
            archive.top_level = max(archive.top_level, record.level)
            archive.found = max(archive.found, record.found_order + 1)
        return archive


def _record_to_json(record: CellRecord) -> dict[str, Any]:
    document = asdict(record)
    room, *rest = record.cell
    document["cell"] = [list(room), *rest]
    return document


def _record_from_json(document: dict[str, Any]) -> CellRecord:
    room, *rest = document["cell"]
    return CellRecord(**{**document, "cell": (tuple(room), *rest)})

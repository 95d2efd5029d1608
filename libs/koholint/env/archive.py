"""A Go-Explore-style archive of cells: where the agent has been, and how to get back there.

A cell is (room key, x // bin, y // bin, progress level): where Link stands, and how far
along the route the game is (items plus keys held, ``koholint.env.zelda.progress_level``), as the
Go-Explore paper's cells count the keys held. Without the level the fewest-steps rule kept
the sword-less paths to the dungeon, and no restart there could beat the key hall
(BENCHMARKS.md). For each cell the archive keeps the best save state that reached it —
fewest steps into the episode, then highest return — and counts how often the cell was
visited and chosen as a restart. Restarts are drawn with weight

    w = 1 / sqrt(1 + chosen) + 0.5 / sqrt(1 + visits) + 2 * found_order / cells

so cells rarely chosen, rarely visited and recently found (the frontier) come first. The
archive persists in the object store (``<prefix>/index.json`` and ``<prefix>/states/<id>.state``) and a
restarted run resumes it.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from koholint.store import ObjectStore, put_json

ARCHIVE_SCHEMA_VERSION = 2  # 2: cells carry the progress level
Cell = tuple[tuple[int, int, int], int, int, int]
RECENCY = 2.0


@dataclass
class CellRecord:
    cell: Cell
    state_id: str
    steps: int
    episode_return: float
    visits: int = 1
    chosen: int = 0
    found_order: int = 0

    def weight(self, archive_size: int) -> float:
        """Rarely chosen and rarely visited cells weigh more (Go-Explore's count terms), and
        so do recently found ones: the newest cells are the frontier (up to +RECENCY)."""
        recency = RECENCY * (self.found_order + 1) / max(archive_size, self.found_order + 1)
        return 1.0 / math.sqrt(1 + self.chosen) + 0.5 / math.sqrt(1 + self.visits) + recency


def cell_id(cell: Cell) -> str:
    return hashlib.sha256(repr(cell).encode()).hexdigest()[:32]


class Archive:
    def __init__(
        self,
        *,
        store: ObjectStore | None = None,
        prefix: str = "archives/default",
        max_cells: int = 100_000,
    ) -> None:
        self.store = store
        self.prefix = prefix.rstrip("/")
        self.max_cells = max_cells
        self.cells: dict[Cell, CellRecord] = {}
        self._states: dict[str, bytes] = {}
        self._dirty: set[str] = set()

    def __len__(self) -> int:
        return len(self.cells)

    def observe(
        self, cell: Cell, steps: int, episode_return: float, state: Callable[[], bytes]
    ) -> bool:
        """Count a visit; keep the state when the cell is new or reached faster (or equally
        fast with a higher return). `state` is called only when the state is kept."""
        record = self.cells.get(cell)
        if record is not None:
            record.visits += 1
            better = steps < record.steps or (
                steps == record.steps and episode_return > record.episode_return
            )
            if not better:
                return False
            record.steps, record.episode_return = steps, episode_return
        else:
            if len(self.cells) >= self.max_cells:
                return False
            record = CellRecord(
                cell, cell_id(cell), steps, episode_return, found_order=len(self.cells)
            )
            self.cells[cell] = record
        self._states[record.state_id] = state()
        self._dirty.add(record.state_id)
        return True

    def best_steps(self) -> dict[Cell, int]:
        """The fewest steps known to reach each cell."""
        return {cell: record.steps for cell, record in self.cells.items()}

    def select(self, rng: np.random.Generator) -> CellRecord:
        """Draw a cell to restart from, by weight, and count the choice."""
        if not self.cells:
            raise LookupError("the archive is empty: observe some cells before selecting")
        records = list(self.cells.values())
        weights = np.array([record.weight(len(records)) for record in records])
        record = records[int(rng.choice(len(records), p=weights / weights.sum()))]
        record.chosen += 1
        return record

    def state(self, record: CellRecord) -> bytes:
        if record.state_id not in self._states:
            if self.store is None:
                raise LookupError(f"no state for cell {record.cell}")
            self._states[record.state_id] = self.store.get(
                f"{self.prefix}/states/{record.state_id}.state"
            )
        return self._states[record.state_id]

    def save(self) -> None:
        """Write new and improved states, then the index, to the store."""
        if self.store is None:
            raise LookupError("this archive has no store to save into")
        for state_id in sorted(self._dirty):
            self.store.put(f"{self.prefix}/states/{state_id}.state", self._states[state_id])
        self._dirty.clear()
        index = {
            "schema_version": ARCHIVE_SCHEMA_VERSION,
            "cells": [_record_to_json(record) for record in self.cells.values()],
        }
        put_json(self.store, f"{self.prefix}/index.json", index)

    @classmethod
    def load(cls, store: ObjectStore, prefix: str, max_cells: int = 100_000) -> Archive:
        """Resume an archive saved under `prefix` (an empty one if none was saved)."""
        archive = cls(store=store, prefix=prefix, max_cells=max_cells)
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
        return archive


def _record_to_json(record: CellRecord) -> dict[str, Any]:
    document = asdict(record)
    room, x, y, level = record.cell
    document["cell"] = [list(room), x, y, level]
    return document


def _record_from_json(document: dict[str, Any]) -> CellRecord:
    room, x, y, level = document["cell"]
    return CellRecord(**{**document, "cell": (tuple(room), x, y, level)})

"""The archive's heat layer: how often the envs of a run stood in each cell of its Go-Explore
archive, read from the trainer's object store (``archives/<run>/index.json``)."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from koholint.store import ObjectStore, StoreError, validate_key
from koholint.web.problems import NotFoundError, UnavailableError, UnprocessableError

MAX_HEAT_CELLS = 20_000
COVERAGE_BIN = 16  # pixels per cell side: the env's default coverage_bin, as the trainer uses it


def archive_heat(store: ObjectStore, run: str) -> dict[str, Any]:
    """Visits per (room, x bin, y bin), summed over progress levels; the most visited first."""
    key = f"archives/{run}/index.json"
    try:
        validate_key(key)  # e.g. '..': no run of the trainer's is named so
    except StoreError as error:
        raise UnprocessableError(
            f"run {run!r} is no run name", errors=[{"field": "path.run", "message": str(error)}]
        ) from error
    try:
        if not store.exists(key):
            raise NotFoundError(f"run {run!r} has no archive in the store (yet)", run=run)
        data = store.get(key)
    except StoreError as error:
        raise UnavailableError(f"object store: {error}") from error
    try:
        cells = json.loads(data)["cells"]
        visits: Counter[tuple[int, int, int, int, int]] = Counter()
        for item in cells:
            (indoor, map_id, room), x_bin, y_bin, *_ = item["cell"]
            visits[(indoor, map_id, room, x_bin, y_bin)] += int(item.get("visits", 1))
    except (KeyError, TypeError, ValueError) as error:
        raise UnprocessableError(f"archive of {run!r} is not readable: {error}") from error
    top = visits.most_common(MAX_HEAT_CELLS)
    return {
        "run": run, "bin": COVERAGE_BIN, "cells_total": len(visits),
        "cells": [{"indoor": i, "map": m, "room": r, "x": x, "y": y, "visits": n}
                  for (i, m, r, x, y), n in top],
    }  # fmt: skip

"""The fleet's commands as stages of a loop: each runs as a subprocess, the same command a
user runs (found through the entry points, so the orchestrator imports no service), and what it
left in the object store is counted from there."""

from __future__ import annotations

import sys

from koholint.store import ObjectStore


def koholint(*arguments: str) -> list[str]:
    return [sys.executable, "-m", "koholint.cli", *arguments]


def count_scores(store: ObjectStore, run: str) -> int:
    return sum(
        len([line for line in store.get(key).decode().splitlines() if line.strip()])
        for key in store.list(f"scores/{run}/")
        if key.endswith(".jsonl")
    )

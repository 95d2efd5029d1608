"""The learning curve: one point per iteration (env steps, rooms and cells per episode, the
archive's cells, milestones reached, the curriculum's start). Checkpoints carry it, so a
resumed run's curve goes on from its checkpoint; at the end of the run it is drawn as
``learning_curve.png`` beside what else the run folder records.

What the picture shows follows what the run is for. A run that evaluates its policy or
walks a curriculum (``--phase robustify|both``) is decided by two things, drawn against
the env steps of the whole run (phase 1 and its shortening included, what
``total_env_steps`` bounds): the evaluations' win rate with their 95% intervals, one series
per start (``<run>/evaluation/evaluations.jsonl``), and the curriculum's start on the
demonstration (lower is further along); vertical lines mark where phase 1, the shortening
and phase 2 begin (``<run>/explore.json``). A plain ``train`` run, with neither, draws rooms
and cells per episode and the archive's cells.
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from koholint.schemas.trainer import RunStatus

EVALUATIONS = Path("evaluation") / "evaluations.jsonl"
EXPLORE_SUMMARY = "explore.json"


class LearningCurve:
    def __init__(self) -> None:
        self.points: list[dict[str, float]] = []
        """env steps, rooms, cells and archive cells after each iteration, and the share of
        the last 100 episodes that reached each milestone (``reached_<milestone>``)"""

    def add(self, status: RunStatus) -> None:
        """The point after an iteration, from the run's status."""
        self.points.append({
            "env_steps": status.env_steps, "rooms": status.rooms_mean or 0.0,
            "cells": status.cells_mean or 0.0, "archive_cells": status.archive_cells,
            **{f"reached_{name}": share for name, share in status.reached_last.items()},
            # robustify: where episodes start on the demonstration (lower is further along)
            **({"start_step": status.curriculum["start_step"]}
               if "start_step" in status.curriculum else {}),
        })  # fmt: skip

    def resume(self, points: list[dict[str, float]], step: int) -> None:
        """Continue a checkpoint's curve: its points up to the checkpoint's step."""
        self.points = [point for point in points if point["env_steps"] <= step]

    def write_png(self, path: Path) -> None:
        """Draw the curve as `path`, with what the run folder beside it records."""
        write_learning_curve(self.points, path, RunRecords.read(path.parent))


@dataclass
class RunRecords:
    """What a run folder records besides the curve: phase 1's summary and the evaluations."""

    evaluations: list[dict[str, Any]] = field(default_factory=list)
    """``evaluations.jsonl``'s records (`PolicyEvaluation` as JSON), oldest first"""
    explore: dict[str, Any] = field(default_factory=dict)
    """``explore.json``: phase 1's env steps, and the shortening's when it ran"""

    @classmethod
    def read(cls, run_dir: Path) -> RunRecords:
        """The records of `run_dir`; what is missing or unreadable is left out."""
        records = cls()
        log = run_dir / EVALUATIONS
        if log.is_file():
            for line in log.read_text().splitlines():
                try:
                    records.evaluations.append(json.loads(line))
                except json.JSONDecodeError:
                    continue  # a line cut short by a crash
        summary = run_dir / EXPLORE_SUMMARY
        if summary.is_file():
            with contextlib.suppress(json.JSONDecodeError):
                records.explore = json.loads(summary.read_text())
        return records

    @property
    def phase_one_env_steps(self) -> int:
        """Env steps before phase 2 (exploring and shortening): the offset of the curve's
        points, which count phase 2's own steps."""
        explore = self.explore
        return int(explore.get("total_env_steps", explore.get("env_steps", 0)))

    def phase_starts(self) -> dict[str, int]:
        """Where each phase begins, in env steps of the whole run (none without phase 1)."""
        if not self.explore:
            return {}
        starts = {"phase 1": 0}
        if "shorten_env_steps" in self.explore:
            starts["shortening"] = int(self.explore.get("env_steps", 0))
        starts["phase 2"] = self.phase_one_env_steps
        return starts


def curve_series(curve: list[dict[str, float]], records: RunRecords) -> dict[str, Any]:
    """What the picture draws, as data: ``kind`` ("decisive" or "plain"), and for decisive
    runs ``win_rate`` (per start: env steps in all, rates, interval lows and highs),
    ``start_step`` (env steps in all, demo steps) and ``phases`` (name: env step)."""
    offset = records.phase_one_env_steps
    starts = [(offset + point["env_steps"], point["start_step"])
              for point in curve if "start_step" in point]  # fmt: skip
    if not (records.evaluations or starts or records.explore):
        return {
            "kind": "plain",
            "env_steps": [point["env_steps"] for point in curve],
            "rooms": [point["rooms"] for point in curve],
            "cells": [point["cells"] for point in curve],
            "archive_cells": [point["archive_cells"] for point in curve],
        }
    win_rate: dict[str, dict[str, list[float]]] = {}
    for record in records.evaluations:
        series = win_rate.setdefault(str(record["start"]), {
            "env_steps": [], "win_rate": [], "low": [], "high": []})  # fmt: skip
        low, high = record.get("interval") or (record["win_rate"], record["win_rate"])
        series["env_steps"].append(record.get("total_env_steps", offset + record["env_steps"]))
        series["win_rate"].append(record["win_rate"])
        series["low"].append(low)
        series["high"].append(high)
    return {
        "kind": "decisive",
        "win_rate": win_rate,
        "start_step": {"env_steps": [s for s, _ in starts], "demo_step": [d for _, d in starts]},
        "phases": records.phase_starts(),
    }


def learning_curve_figure(curve: list[dict[str, float]], records: RunRecords | None = None) -> Any:
    """The learning curve as a matplotlib figure (see the module's docstring)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    series = curve_series(curve, records or RunRecords())
    if series["kind"] == "plain":
        figure, axes = plt.subplots(1, 2, figsize=(10, 4))
        steps = series["env_steps"]
        axes[0].plot(steps, series["rooms"], marker="o")
        axes[0].set(title="rooms per episode (mean)", xlabel="env steps")
        axes[1].plot(steps, series["cells"], marker="o", label="cells per episode (mean)")
        axes[1].plot(steps, series["archive_cells"], marker="s", label="archive cells")
        axes[1].set(title="cells", xlabel="env steps")
        axes[1].legend()
        figure.tight_layout()
        return figure

    figure, (wins, start) = plt.subplots(2, 1, figsize=(10, 7), sharex=True)
    for name, points in series["win_rate"].items():
        rates = points["win_rate"]
        below = [rate - low for rate, low in zip(rates, points["low"], strict=True)]
        above = [high - rate for rate, high in zip(rates, points["high"], strict=True)]
        wins.errorbar(points["env_steps"], rates, yerr=[below, above], marker="o", capsize=3,
                      label=f"from {name.replace('_', '-')}")  # fmt: skip
    wins.set(title="evaluations: win rate (95% interval)", ylabel="win rate", ylim=(-0.02, 1.02))
    if not series["win_rate"]:
        wins.text(0.5, 0.5, "no evaluations", ha="center", va="center", transform=wins.transAxes)
    demo = series["start_step"]
    start.plot(demo["env_steps"], demo["demo_step"], drawstyle="steps-post", label="start")
    start.set(title="curriculum: where episodes start on the demonstration (0: its beginning)",
              ylabel="demo step", xlabel="env steps in all (phase 1 and shortening included)")  # fmt: skip
    if not demo["env_steps"]:
        start.text(0.5, 0.5, "no curriculum", ha="center", va="center", transform=start.transAxes)
    colours = {"phase 1": "tab:gray", "shortening": "tab:purple", "phase 2": "tab:green"}
    for axes in (wins, start):
        for name, step in series["phases"].items():
            axes.axvline(step, color=colours.get(name, "black"), linestyle="--",
                         label=f"{name} begins")  # fmt: skip
        if axes.get_legend_handles_labels()[0]:
            axes.legend(loc="best", fontsize="small")
    figure.tight_layout()
    return figure


def write_learning_curve(curve: list[dict[str, float]], path: Path,
                         records: RunRecords | None = None) -> None:  # fmt: skip
    """The learning curve as PNG (see the module's docstring)."""
    figure = learning_curve_figure(curve, records)
    import matplotlib.pyplot as plt

    figure.savefig(path)
    plt.close(figure)

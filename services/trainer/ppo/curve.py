"""The learning curve: rooms and cells per episode and the archive's cells against env
steps, one point per iteration. Checkpoints carry it, so a resumed run's curve goes on from
its checkpoint; at the end of the run it is drawn as ``learning_curve.png``.
"""

from __future__ import annotations

from pathlib import Path

from koholint.schemas.trainer import RunStatus


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
        write_learning_curve(self.points, path)


def write_learning_curve(curve: list[dict[str, float]], path: Path) -> None:
    """Rooms and cells discovered against env steps, as PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(1, 2, figsize=(10, 4))
    steps = [point["env_steps"] for point in curve]
    axes[0].plot(steps, [point["rooms"] for point in curve], marker="o")
    axes[0].set(title="rooms per episode (mean)", xlabel="env steps")
    axes[1].plot(
        steps, [point["cells"] for point in curve], marker="o", label="cells per episode (mean)"
    )
    axes[1].plot(
        steps, [point["archive_cells"] for point in curve], marker="s", label="archive cells"
    )
    axes[1].set(title="cells", xlabel="env steps")
    axes[1].legend()
    figure.tight_layout()
    figure.savefig(path)
    plt.close(figure)

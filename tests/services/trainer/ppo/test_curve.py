"""The learning curve's picture: what decides a `--phase both` run, and a plain run's rooms."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from trainer.ppo.curve import (
    LearningCurve,
    RunRecords,
    curve_series,
    learning_curve_figure,
    write_learning_curve,
)

# A `--phase both` run, cut short: phase 1 explored 577,668 env steps and the shortening
# replayed 453,048 more (one-s2's explore.json); phase 2's points count its own steps.
EXPLORE = {"won": True, "env_steps": 577_668, "shortened_steps": 636,
           "shorten_env_steps": 453_048, "total_env_steps": 1_030_716}  # fmt: skip
POINTS = [
    {"env_steps": 1_024, "rooms": 1.0, "cells": 3.0, "archive_cells": 0, "start_step": 624},
    {"env_steps": 250_554, "rooms": 2.0, "cells": 9.0, "archive_cells": 0, "start_step": 400},
    {"env_steps": 501_018, "rooms": 3.0, "cells": 7.0, "archive_cells": 0, "start_step": 0},
]
EVALUATIONS = [
    {"env_steps": 250_554, "total_env_steps": 1_281_270, "start": "power_on", "episodes": 100,
     "wins": 54, "win_rate": 0.54, "interval": [0.4426, 0.6344], "seconds": 19.4},
    {"env_steps": 501_018, "total_env_steps": 1_531_734, "start": "power_on", "episodes": 100,
     "wins": 91, "win_rate": 0.91, "interval": [0.8377, 0.9519], "seconds": 14.9},
    {"env_steps": 501_018, "total_env_steps": 1_531_734, "start": "start_of_play",
     "episodes": 100, "wins": 94, "win_rate": 0.94, "interval": [0.8752, 0.9722], "seconds": 10.4},
]  # fmt: skip


def recorded_run(run_dir: Path) -> Path:
    (run_dir / "evaluation").mkdir(parents=True)
    (run_dir / "explore.json").write_text(json.dumps(EXPLORE))
    lines = [json.dumps(record) for record in EVALUATIONS] + ['{"env_steps": 7']  # a cut line
    (run_dir / "evaluation" / "evaluations.jsonl").write_text("\n".join(lines) + "\n")
    return run_dir


def test_a_both_run_shows_win_rates_the_curriculum_and_where_the_phases_begin(
    tmp_path: Path,
) -> None:
    records = RunRecords.read(recorded_run(tmp_path))
    assert len(records.evaluations) == 3  # the cut line left out

    series = curve_series(POINTS, records)
    assert series["kind"] == "decisive"
    assert series["phases"] == {"phase 1": 0, "shortening": 577_668, "phase 2": 1_030_716}
    power_on = series["win_rate"]["power_on"]
    assert power_on["env_steps"] == [1_281_270, 1_531_734]
    assert power_on["win_rate"] == [0.54, 0.91]
    assert power_on["low"] == [0.4426, 0.8377]
    assert power_on["high"] == [0.6344, 0.9519]
    assert series["win_rate"]["start_of_play"]["win_rate"] == [0.94]
    # the curriculum's start on the whole run's axis: phase 2's steps after phase 1's
    assert series["start_step"] == {
        "env_steps": [1_031_740, 1_281_270, 1_531_734],
        "demo_step": [624, 400, 0],
    }

    figure = learning_curve_figure(POINTS, records)
    wins, start = figure.axes
    assert "win rate" in wins.get_title()
    assert "95%" in wins.get_title()
    assert wins.get_ylim() == pytest.approx((-0.02, 1.02))
    labels = wins.get_legend_handles_labels()[1]
    assert {"from power-on", "from start-of-play"} <= set(labels)
    assert {"phase 1 begins", "shortening begins", "phase 2 begins"} <= set(labels)
    assert "curriculum" in start.get_title()
    assert start.get_ylabel() == "demo step"
    assert "env steps in all" in start.get_xlabel()
    vertical = [line for line in start.get_lines() if line.get_label().endswith("begins")]
    assert sorted(line.get_xdata()[0] for line in vertical) == [0, 577_668, 1_030_716]
    curriculum = next(line for line in start.get_lines() if line.get_label() == "start")
    assert list(curriculum.get_ydata()) == [624, 400, 0]

    png = tmp_path / "learning_curve.png"
    curve = LearningCurve()
    curve.points = POINTS
    curve.write_png(png)  # reads explore.json and the evaluations beside it
    assert png.read_bytes().startswith(b"\x89PNG")


def test_a_plain_train_run_still_plots_rooms_and_cells(tmp_path: Path) -> None:
    points = [{"env_steps": 1_024 * i, "rooms": 1.0 + i, "cells": 10.0 * i, "archive_cells": 5 * i}
              for i in range(1, 4)]  # fmt: skip
    records = RunRecords.read(tmp_path)  # nothing recorded beside the curve
    assert curve_series(points, records)["kind"] == "plain"
    figure = learning_curve_figure(points, records)
    rooms, cells = figure.axes
    assert rooms.get_title() == "rooms per episode (mean)"
    assert list(rooms.get_lines()[0].get_ydata()) == [2.0, 3.0, 4.0]
    assert cells.get_legend_handles_labels()[1] == ["cells per episode (mean)", "archive cells"]
    write_learning_curve(points, tmp_path / "curve.png")
    assert (tmp_path / "curve.png").read_bytes().startswith(b"\x89PNG")


def test_a_robustify_run_without_evaluations_draws_its_curriculum(tmp_path: Path) -> None:
    figure = learning_curve_figure(POINTS, RunRecords())
    wins, start = figure.axes
    assert [text.get_text() for text in wins.texts] == ["no evaluations"]
    assert list(start.get_lines()[0].get_xdata()) == [1_024, 250_554, 501_018]

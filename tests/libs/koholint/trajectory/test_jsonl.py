"""Trajectories replay exactly; a divergence is reported at its first step."""

import json
from pathlib import Path

import pytest

from koholint.baselines.play import run_episode
from koholint.cli import main
from koholint.trajectory.jsonl import TrajectoryError, replay


@pytest.fixture
def trajectory(tmp_path: Path) -> Path:
    path = tmp_path / "random.jsonl"
    run_episode("random", seed=4, max_steps=300, trajectory=path)
    return path


def test_replay_matches_every_step(trajectory: Path):
    result = replay(trajectory)
    assert result.ok
    assert result.steps == 300


def test_replay_reports_the_first_differing_step(trajectory: Path, capsys):
    lines = trajectory.read_text().splitlines()
    record = json.loads(lines[120])
    record["action"] = (record["action"] + 1) % 9 if record["action"] != 0 else 3  # another action
    lines[120] = json.dumps(record)
    trajectory.write_text("\n".join(lines) + "\n")
    result = replay(trajectory)
    assert not result.ok
    assert result.first_mismatch == record["t"]
    assert main(["replay", str(trajectory)]) == 1
    assert f"MISMATCH at step {record['t']}" in capsys.readouterr().out


def test_header_records_settings_and_summary_closes(trajectory: Path):
    lines = [json.loads(line) for line in trajectory.read_text().splitlines()]
    assert lines[0]["type"] == "header"
    assert lines[0]["env_config"]["frame_skip"] == 4
    assert lines[-1]["type"] == "summary"
    assert lines[-1]["steps"] == 300


def test_not_a_trajectory_is_refused(tmp_path: Path):
    path = tmp_path / "x.jsonl"
    path.write_text('{"type": "step"}\n')
    with pytest.raises(TrajectoryError, match="header"):
        replay(path)

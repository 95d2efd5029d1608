"""Phase 1 inside a run: its win shortened within the run's budget, with the run's settings."""

from __future__ import annotations

from pathlib import Path

import pytest

from koholint.explore import ExploreConfig
from koholint.schemas.trainer import RunStatus
from koholint.teachers.shorten import winner
from trainer.ppo.config import TrainConfig
from trainer.ppo.phase_one import _shortened

WIN_DIRECTORY = Path(__file__).parents[4] / "benchmarks" / "results" / "win"


def test_phase_ones_win_is_shortened_within_its_budget_and_counted(tmp_path: Path):
    win = (WIN_DIRECTORY / "explore-seed0.actions").read_bytes()
    status, summary = RunStatus(run="short", env_steps=391_179), {}
    config = TrainConfig.load({"explore": {"shorten_env_steps": 30_000}}, {})
    path = _shortened(win, ExploreConfig(), config, tmp_path, status, summary)
    short = path.read_bytes()
    assert path.name == "win-short.actions"
    assert len(short) < len(win)
    assert winner().full(short)
    assert 30_000 <= summary["shorten_env_steps"] < 30_000 + 3 * len(win)  # the budget held
    assert status.env_steps == summary["total_env_steps"] == 391_179 + summary["shorten_env_steps"]
    assert summary["shortened_steps"] == len(short)


@pytest.mark.parametrize("errands", [False, True])
def test_the_shortening_takes_the_errands_setting(tmp_path: Path, monkeypatch, errands):
    """The settings are the trainer's, the passes the library's (tested there): they reach it."""
    import koholint.teachers.shorten as shortening

    seen: dict[str, bool] = {}

    def recorded(actions: bytes, check: object, **passes: bool) -> shortening.Shortened:
        seen.update(passes)
        return shortening.Shortened(actions[:-1], 1)

    monkeypatch.setattr(shortening, "shorten", recorded)
    config = TrainConfig.load({"explore": {"errands_first": errands}}, {})
    path = _shortened(b"\x01\x02", ExploreConfig(), config, tmp_path, RunStatus(run="e"), {})
    assert seen == {"errands": errands}
    assert path.read_bytes() == b"\x01"

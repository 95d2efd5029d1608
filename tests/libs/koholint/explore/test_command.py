"""`koholint explore`: flags, the summary it writes, and its exit status."""

from __future__ import annotations

import json
from pathlib import Path

from koholint.cli import main


def test_a_budget_too_small_to_win_writes_the_summary_and_fails(tmp_path: Path, capsys):
    code = main(["explore", "--seed", "1", "--workers", "1", "--max-env-steps", "800",
                 "--out", str(tmp_path), "--quiet"])  # fmt: skip
    assert code == 1
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["won"] is False
    assert summary["trajectory_steps"] is None
    assert 0 < summary["env_steps"] <= 800
    assert summary["cells"] > 5
    assert set(summary["milestones"]) == {"sword", "puzzle", "dungeon", "key", "lock", "instrument"}
    assert not (tmp_path / "win.actions").exists()
    assert "no win after" in capsys.readouterr().out


def test_bad_settings_exit_2_naming_the_setting(tmp_path: Path, capsys):
    assert main(["explore", "--workers", "0", "--out", str(tmp_path)]) == 2
    assert "workers=0" in capsys.readouterr().err

"""`koholint explore`: flags, the summary it writes, and its exit status."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

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
    assert "--workers: Input should be greater than or equal to 1" in capsys.readouterr().err
    assert main(["explore", "--level-base", "0.5", "--out", str(tmp_path)]) == 2
    assert "--level-base: Input should be greater than or equal to 1" in capsys.readouterr().err
    assert main(["explore", "--level", "judges", "--out", str(tmp_path)]) == 2
    assert "needs --store URL" in capsys.readouterr().err
    assert main(["explore", "--level-bins", "5", "--level-encoding", "memory",
                 "--out", str(tmp_path)]) == 2  # fmt: skip
    assert "--level-encoding and --level-bins set how the judges" in capsys.readouterr().err
    assert main(["explore", "--level", "judges", "--store", "x", "--level-encoding", "pixels",
                 "--out", str(tmp_path)]) == 2  # fmt: skip
    assert "encoding 'pixels': use one of observation, memory" in capsys.readouterr().err
    assert main(["explore", "--judges-question", "progress", "--out", str(tmp_path)]) == 2
    assert "--judges-question set how the judges" in capsys.readouterr().err
    assert main(["explore", "--level", "judges", "--store", "x", "--judges-question", "rooms",
                 "--out", str(tmp_path)]) == 2  # fmt: skip
    assert "question 'rooms': use one of progress+rooms, progress" in capsys.readouterr().err


@pytest.mark.slow  # ~3 min: seed 1's win (67k env steps), then ~150 replays to shorten it
def test_shorten_writes_a_shorter_win_that_still_wins(tmp_path: Path):
    from koholint.teachers.shorten import winner

    code = main(["explore", "--seed", "1", "--workers", "1", "--quiet", "--shorten",
                 "--prefer-health", "false", "--out", str(tmp_path)])  # fmt: skip
    assert code == 0
    found = (tmp_path / "win.actions").read_bytes()
    short = (tmp_path / "win-short.actions").read_bytes()
    assert len(short) < len(found)
    assert winner()(short)
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["shortened_steps"] == len(short)


def test_every_flag_shows_its_variable_and_default(capsys):
    """The flags are derived from the settings model, as `koholint train`'s are."""
    from koholint.explore.command import ExploreCommandSettings

    with pytest.raises(SystemExit):
        main(["explore", "--help"])
    shown = " ".join(capsys.readouterr().out.split())
    for name in ExploreCommandSettings.model_fields:
        flag = "--" + name.replace("_", "-")
        assert flag in shown, flag
        variable = ExploreCommandSettings.environment_names.get(name)
        assert f"({variable or 'KOHOLINT_EXPLORE_' + name.upper()}; default" in shown, name


def test_the_environment_sets_a_setting_and_a_flag_beats_it(tmp_path: Path, monkeypatch, capsys):
    monkeypatch.setenv("KOHOLINT_EXPLORE_WORKERS", "0")
    assert main(["explore", "--out", str(tmp_path)]) == 2
    assert "--workers" in capsys.readouterr().err
    monkeypatch.setenv("KOHOLINT_EXPLORE_LEVEL_BASE", "0.5")
    assert main(["explore", "--workers", "1", "--out", str(tmp_path)]) == 2
    assert "--level-base" in capsys.readouterr().err

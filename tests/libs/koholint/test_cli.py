"""`koholint play` works for every baseline; bad input gets a clear message."""

from pathlib import Path

import pytest

from koholint.cli import main
from koholint.game.states import STATE_NAMES


@pytest.mark.parametrize("policy", ["noop", "random", "explorer"])
def test_play_each_baseline(policy, tmp_path: Path, capsys):
    assert main(["play", "--policy", policy, "--max-steps", "200", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert policy in out
    assert (tmp_path / f"{policy}-start_of_play-seed0.jsonl").exists()


def test_play_walkthrough_wins(tmp_path: Path, capsys):
    assert main(["play", "--policy", "walkthrough", "--out", str(tmp_path)]) == 0
    row = next(
        line for line in capsys.readouterr().out.splitlines() if line.startswith("walkthrough")
    )
    assert row.split()[-1] == "yes"


def test_play_batch_over_all_named_states(tmp_path: Path, capsys):
    assert (
        main(
            [
                "play",
                "--policy",
                "random",
                "--start",
                "all",
                "--max-steps",
                "50",
                "--out",
                str(tmp_path),
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "summary" in out
    for name in STATE_NAMES:
        assert name in out


def test_unknown_start_state_is_a_clear_error(tmp_path: Path, capsys):
    assert main(["play", "--policy", "random", "--start", "castle", "--out", str(tmp_path)]) == 2
    assert "unknown start 'castle'" in capsys.readouterr().err


def test_absurd_step_count_is_refused(capsys):
    assert main(["play", "--max-steps", "0"]) == 2
    assert "--max-steps" in capsys.readouterr().err


def test_rom_info_refuses_a_non_rom(tmp_path: Path, capsys):
    path = tmp_path / "notes.gb"
    path.write_text("hello")
    assert main(["rom", "info", str(path)]) == 2
    assert "notes.gb" in capsys.readouterr().err


def test_schemas_check(capsys):
    assert main(["schemas", "export", "--check"]) == 0


@pytest.mark.parametrize(
    ("command", "model"), [("play", "PlayCommandSettings"), ("serve", "ServeSettings")]
)
def test_the_help_names_every_settings_variable_and_default(command: str, model: str, capsys):
    from koholint.baselines.settings import PlayCommandSettings
    from koholint.cli import ServeSettings
    from koholint.flags import default_settings, variable_of

    settings = {"PlayCommandSettings": PlayCommandSettings, "ServeSettings": ServeSettings}[model]
    with pytest.raises(SystemExit):
        main([command, "--help"])
    text = " ".join(capsys.readouterr().out.split())
    defaults = default_settings(settings)
    for name in settings.model_fields:
        shown = getattr(defaults, name)
        assert f"({variable_of(settings, name)}; default {shown})" in text
    assert "KOHOLINT_ROM" in text if command == "play" else "KOHOLINT_SERVE_PORT" in text

"""`koholint train-reward-model`: its flags, help and variables are the service's settings."""

from __future__ import annotations

import pytest

from koholint.cli import main
from koholint.flags import default_settings
from reward_model.cli import SERVER_ONLY
from reward_model.config import Settings


def test_the_help_names_every_settings_variable_and_default(capsys: pytest.CaptureFixture[str]):
    with pytest.raises(SystemExit):
        main(["train-reward-model", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    defaults = default_settings(Settings)
    shown = [name for name in Settings.model_fields if name not in SERVER_ONLY]
    assert {"accuracy_floor", "margin", "min_pairs", "seed", "tie_weight", "encoding"} <= set(shown)
    for name in shown:
        variable = f"KOHOLINT_REWARD_MODEL_{name.upper()}"
        assert f"({variable}; default {getattr(defaults, name)})" in text
    assert "--floor VALUE, --accuracy-floor VALUE" in text  # the short names kept


def test_bad_settings_are_refused_naming_the_flag(tmp_path, capsys: pytest.CaptureFixture[str]):
    assert main(["train-reward-model", "--store", str(tmp_path), "--floor", "2"]) == 2
    assert "--accuracy-floor: Input should be less than or equal to 1" in capsys.readouterr().err

"""`koholint evaluate`: a run's stored segments scored with a progress bar and a summary table."""

from __future__ import annotations

import pytest
from tests.services.evaluator.conftest import segment_prefixes

from koholint.cli import main
from koholint.store import LocalStore


def test_evaluate_scores_a_run_and_prints_a_summary(
    local_store: LocalStore, capsys: pytest.CaptureFixture[str]
):
    prefixes = segment_prefixes(local_store, "run-eval")
    assert (
        main(["evaluate", "--run", "run-eval", "--store", str(local_store.root), "--samples", "1"])
        == 0
    )
    out = capsys.readouterr().out
    assert f"{len(prefixes)}/{len(prefixes)} segments" in out
    assert f"run run-eval: {len(prefixes)} scored, 0 already scored, 0 rejected" in out
    assert "label" in out
    assert "judge" in out
    assert len(local_store.list("scores/run-eval/index/")) == len(prefixes)
    assert (
        main(["evaluate", "--run", "run-eval", "--store", str(local_store.root), "--samples", "1"])
        == 0
    )
    assert f"0 scored, {len(prefixes)} already scored" in capsys.readouterr().out


def test_evaluate_refuses_bad_settings_and_empty_runs(
    local_store: LocalStore, capsys: pytest.CaptureFixture[str]
):
    assert main(["evaluate", "--run", "nothing-here", "--store", str(local_store.root)]) == 1
    assert "has no stored segments" in capsys.readouterr().err
    assert (
        main(["evaluate", "--run", "run-eval", "--store", str(local_store.root), "--samples", "0"])
        == 2
    )
    assert "samples" in capsys.readouterr().err


def test_the_help_names_every_settings_variable_and_default(capsys: pytest.CaptureFixture[str]):
    from evaluator.cli import SERVER_ONLY
    from evaluator.config import Settings
    from koholint.flags import default_settings, is_secret

    with pytest.raises(SystemExit):
        main(["evaluate", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    defaults = default_settings(Settings)
    for name, field in Settings.model_fields.items():
        variable = f"KOHOLINT_EVALUATOR_{name.upper()}"
        if name in SERVER_ONLY:
            assert variable not in text
        elif is_secret(field):
            assert f"environment only: {variable}" in text
        else:
            assert f"({variable}; default {getattr(defaults, name)})" in text
    assert "(KOHOLINT_EVALUATOR_STATE_PAIRS; default 0)" in text
    assert "(KOHOLINT_EVALUATOR_GROUP; default evaluator)" not in text  # the consumer's


def test_a_flag_beats_the_environment(
    local_store: LocalStore, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("KOHOLINT_EVALUATOR_SAMPLES", "0")  # refused unless the flag wins
    run = ["evaluate", "--run", "run-eval", "--store", str(local_store.root)]
    assert main(run) == 2
    assert "samples" in capsys.readouterr().err
    segment_prefixes(local_store, "run-eval")
    assert main([*run, "--samples", "1"]) == 0

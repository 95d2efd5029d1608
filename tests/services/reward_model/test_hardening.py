"""The reward-model under Schemathesis: every route does what its OpenAPI says, and
bad requests are problem+json naming the field."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from reward_synthetic import export_synthetic, synthetic_segments
from tests.contracts import assert_problem, assert_problem_spec, check_openapi_contract

from koholint.bus import MemoryBus
from koholint.store import LocalStore
from reward_model.app import create_app
from reward_model.config import Settings
from reward_model.service import RewardModelService

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def settings(tmp_path: Path) -> Settings:
    # No Redis: nothing consumed; training on the (empty) store refuses quickly.
    return Settings(store_url=str(tmp_path / "store"), redis_url="", min_pairs=10, max_steps=50)


def publish_a_version(settings: Settings) -> None:
    """A version in the store, so that /v1/score and /v1/models/latest answer 200 too."""
    service = RewardModelService(settings, LocalStore(settings.store_url), MemoryBus())
    segments = synthetic_segments(40, steps=8, seed=4)
    prefixes = export_synthetic(service.store, segments)
    for prefix, scored in zip(prefixes, segments, strict=True):
        service.add_score(prefix, scored.record_key, scored.score)
    assert service.train().state == "published"


@pytest.mark.slow
def test_openapi_contract_holds_under_schemathesis(tmp_path: Path) -> None:
    publish_a_version(settings(tmp_path))
    # A drawn version may name nothing (404, allowed by default); observations of the wrong length are schema-valid
    # (the vector size is the encoder's, checked by the service: 422).
    check_openapi_contract(
        create_app(settings(tmp_path)), max_examples=10, opaque_bodies={"/v1/score": [422]},
        tmp_dir=tmp_path,
    )  # fmt: skip


def test_spec_documents_problem_json(tmp_path: Path) -> None:
    assert_problem_spec(create_app(settings(tmp_path)).openapi())


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/v1/score", {"observations": "many"}, "observations"),
        ("/v1/score", {"observations": [[0.0]], "version": "../../etc"}, "version"),
        ("/v1/train", {"reason": 7}, "reason"),
    ],
)
async def test_malformed_requests_get_problems_naming_the_field(
    tmp_path: Path, path: str, body: dict, field: str
) -> None:
    app = create_app(settings(tmp_path))
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://rm") as http,
    ):
        assert_problem(await http.post(path, json=body), 422, field)

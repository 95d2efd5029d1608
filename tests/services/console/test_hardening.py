"""The console under Schemathesis: every route does what its OpenAPI says, and bad
requests are problem+json naming the field."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from tests.contracts import assert_problem, assert_problem_spec, check_openapi_contract

from console.app import create_app
from console.config import Settings
from env_sim.app import create_app as create_env_sim
from env_sim.config import Settings as EnvSimSettings
from evaluator.app import create_app as create_evaluator
from evaluator.config import Settings as EvaluatorSettings
from koholint.bus import MemoryBus
from koholint.store import LocalStore
from reward_model.app import create_app as create_reward_model
from reward_model.config import Settings as RewardModelSettings
from trainer.app import create_app as create_trainer
from trainer.config import Settings as TrainerSettings
from trainer.ppo.run import TrainingRun
from trainer.service import Trainer

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def settings(map_cache_dir: Path) -> Settings:
    return Settings(map_cache_dir=str(map_cache_dir))


def _finish_at_once(run: TrainingRun, span: object) -> None:
    run.status.state = "finished"


@pytest.mark.slow
def test_openapi_contract_holds_under_schemathesis(
    serve, map_cache_dir: Path, tmp_path: Path, stream: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The console over a real fleet (each service served on loopback, Redis, a store): a
    proxied route answers what the service behind it does. The trainer's runs end as they
    start (no Ray, no PPO)."""
    monkeypatch.setattr(Trainer, "_run", staticmethod(_finish_at_once))
    store = tmp_path / "store"
    fleet = {
        "env_sim_url": serve(create_env_sim(EnvSimSettings(store_url=str(store), workers=2))),
        "trainer_url": serve(create_trainer(TrainerSettings(
            store_url=str(store), run_dir=str(tmp_path / "runs")))),
        "evaluator_url": serve(create_evaluator(
            EvaluatorSettings(consume=False), store=LocalStore(store), bus=MemoryBus())),
        "reward_model_url": serve(create_reward_model(
            RewardModelSettings(store_url=str(store), redis_url=""))),
    }  # fmt: skip
    console = Settings(
        map_cache_dir=str(map_cache_dir), store_url=str(store),
        redis_url="redis://127.0.0.1:6379/0", positions_stream=stream, **fleet,
    )  # fmt: skip
    check_openapi_contract(
        create_app(console), max_examples=10, tmp_dir=tmp_path,
        # Run settings are the trainer's TrainConfig, validated there: its 422 is passed on.
        # A play request is env-sim's PlayRequest (in this spec too); whether a policy can
        # play a session depends on the session, judged there: its 422 is passed on.
        opaque_bodies={"/v1/runs": [422], "/v1/watch/env-sim/{session_id}/play": [422]},
        # An event stream never ends: no answer within a request timeout (test_relay.py), nor
        # does a live frame stream (test_live.py).
        exclude_paths=["/v1/positions/stream", "/v1/watch/env-sim/{session_id}/live"],
    )  # fmt: skip


def test_spec_documents_problem_json(map_cache_dir: Path) -> None:
    assert_problem_spec(create_app(settings(map_cache_dir)).openapi())


@pytest.mark.parametrize(
    ("method", "path", "body", "field"),
    [
        ("GET", "/v1/judges/scores?run=../../etc", None, "query.run"),
        ("GET", "/v1/positions/recent?limit=lots", None, "query.limit"),
        ("GET", "/v1/checkpoints/best?metric=../x", None, "query.metric"),
    ],
)
async def test_malformed_requests_get_problems_naming_the_field(
    map_cache_dir: Path, method: str, path: str, body: object, field: str
) -> None:
    app = create_app(settings(map_cache_dir).model_copy(update={"trainer_url": "http://trainer"}))
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app, client=("127.0.0.1", 5000)),
            base_url="http://console",
        ) as http,
    ):
        assert_problem(await http.request(method, path, json=body), 422, field)


@pytest.mark.parametrize("path", ["/v1/archive/a:b", "/v1/archive/%2E%2E"])
async def test_archive_run_names_the_store_refuses_are_422_not_500(
    map_cache_dir: Path, tmp_path: Path, path: str
) -> None:
    """Found by Schemathesis: a name the store cannot hold (':', '..') raised StoreError: 500."""
    app = create_app(settings(map_cache_dir).model_copy(update={"store_url": str(tmp_path)}))
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://console"
        ) as http,
    ):
        assert_problem(await http.get(path), 422, "path.run")


async def test_run_names_the_trainer_refuses_are_the_consoles_own_422(map_cache_dir: Path) -> None:
    """The console checks run names with the trainer's pattern, before asking the trainer."""
    app = create_app(settings(map_cache_dir).model_copy(update={"trainer_url": "http://trainer"}))
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://console"
        ) as http,
    ):
        assert_problem(await http.get("/v1/runs/a:b"), 422, "path.run")
        assert_problem(await http.get("/v1/checkpoints", params={"run": "a:b"}), 422, "query.run")

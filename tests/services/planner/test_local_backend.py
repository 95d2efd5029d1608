"""The planner's `local` backend end to end: the real SmolLM2 model behind llm-local, the
planner service and a real env-sim session. Asserts validity and what validation guarantees
(a dialog without a question is advanced), never the model's judgement."""

from __future__ import annotations

import httpx
import pytest

from llm_local.app import create_app as create_llm_local
from llm_local.config import Settings as LlmSettings
from planner.config import Settings

from .conftest import planner_client
from .test_api import open_session

pytestmark = pytest.mark.anyio


@pytest.fixture
def local_url(serve) -> str:  # type: ignore[no-untyped-def]
    return serve(create_llm_local(LlmSettings(n_threads=1, n_ctx=2048)))  # type: ignore[no-any-return]


async def test_autopilot_with_the_local_model_clears_the_elder(
    local_url: str, env_sim_url: str, env_sim: httpx.Client
) -> None:
    settings = Settings(backend="local", llm_base_url=local_url, env_sim_url=env_sim_url)
    session = open_session(env_sim, "before_npc", press_a=True)
    async with planner_client(settings) as client:
        report = (await client.post(f"/v1/sessions/{session}/autopilot")).json()
        assert report["stopped"] == "cleared", report["reason"]
        calls = [c for step in report["steps"] for c in step["decision"]["llm_calls"]]
        assert calls
        assert {c["route"] for c in calls} == {"dialog"}
        assert all(c["outcome"] in ("valid", "repaired") for c in calls)
        exported = (await client.get("/v1/llm-calls.jsonl")).text.splitlines()
        assert len(exported) == len(calls)


async def test_local_decision_on_the_puzzle_is_a_legal_push(
    local_url: str, env_sim_url: str
) -> None:
    from .test_api import situation

    settings = Settings(backend="local", llm_base_url=local_url, env_sim_url=env_sim_url)
    async with planner_client(settings) as client:
        decision = (
            await client.post(
                "/v1/decide", json={"situation": situation("before_puzzle"), "seed": 7}
            )
        ).json()
    assert decision["backend"] == "local"
    assert decision["mode"] == "puzzle"
    if decision["macro"] is not None:  # the model may be rejected; then no macro at all
        assert decision["macro"]["direction"] in ("left", "right")  # the only safe pushes
    else:
        assert "rejected" in decision["reason"]

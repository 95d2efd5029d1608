"""The planner under hostile input: its spec says what it does, bad requests are
problem+json naming the field, and the client sends the same models the service validates."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.contracts import assert_problem, assert_problem_spec, check_openapi_contract

from koholint.clients.planner import PlannerClient
from koholint.game.emulator import GameBoy
from koholint.game.states import load_named_state
from koholint.planning.view import read_view
from koholint.schemas.planner import DecideRequest, Situation
from planner.app import create_app
from planner.config import Settings

pytestmark = pytest.mark.anyio


@pytest.mark.slow
def test_openapi_contract_holds_under_schemathesis(env_sim_url: str, tmp_path: Path) -> None:
    app = create_app(Settings(env_sim_url=env_sim_url))
    check_openapi_contract(app, max_examples=10, tmp_dir=tmp_path)


def test_spec_documents_problem_json_and_the_limits(settings: Settings) -> None:
    spec = create_app(settings).openapi()
    assert_problem_spec(spec)
    budget = spec["components"]["schemas"]["AutopilotRequest"]["properties"]
    assert budget["max_macros"]["maximum"] == settings.max_autopilot_macros
    autopilot = spec["paths"]["/v1/sessions/{session_id}/autopilot"]["post"]["responses"]
    assert set(autopilot) >= {"200", "404", "409", "413", "422", "500", "502", "503"}


def situation_body() -> dict[str, Any]:
    with GameBoy() as gameboy:
        gameboy.load_state(load_named_state("before_npc"))
        return read_view(gameboy).situation().model_dump(mode="json")


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (lambda body: body.update(seed="7"), "seed"),
        (lambda body: body["situation"]["state"].update(deaths="3"), "situation"),
        (lambda body: body.update(frame_png_base64="not base64!"), "frame_png_base64"),
    ],
)
async def test_malformed_requests_get_problems_naming_the_field(
    client: httpx.AsyncClient, change: Any, field: str
) -> None:
    body = {"situation": situation_body(), "seed": 1}
    change(body)
    assert_problem(await client.post("/v1/decide", json=body), 422, field)


def test_client_sends_the_service_models() -> None:
    """The client's body is a DecideRequest: what the service validates, field for field."""
    sent: list[bytes] = []

    def answer(request: httpx.Request) -> httpx.Response:
        sent.append(request.content)
        return httpx.Response(422, json={"detail": "stop here"})

    client = PlannerClient("http://planner", session="s-1", transport=httpx.MockTransport(answer))
    situation = Situation.model_validate(situation_body())
    with pytest.raises(Exception, match="stop here"):
        client.decide(situation, memory=None, seed=5, frame_png=b"\x89PNG")  # type: ignore[arg-type]
    request = DecideRequest.model_validate_json(sent[0])
    assert request.session == "s-1"
    assert request.seed == 5
    assert request.frame_png_base64 == "iVBORw=="
    assert request.situation == situation

"""PlannerClient against a planner really listening: decisions over HTTP drive the hybrid wrapper."""

from __future__ import annotations

import pytest

from koholint.clients.planner import PlannerClient, PlannerError
from koholint.env.wrappers import PlannerControlWrapper
from koholint.env.zelda import Action, ZeldaEnv
from planner.app import create_app
from planner.config import Settings


@pytest.fixture
def planner_url(serve, settings: Settings) -> str:  # type: ignore[no-untyped-def]
    return serve(create_app(settings))  # type: ignore[no-any-return]


def test_hybrid_wrapper_over_http(planner_url: str) -> None:
    client = PlannerClient(planner_url, session="hybrid-test")
    env = PlannerControlWrapper(
        ZeldaEnv(start_state="before_puzzle", sticky_action_probability=0.0), client, enter_after=1
    )
    env.reset(seed=0)
    _, _, _, _, info = env.step(Action.NOOP)
    assert info["planner"]["stopped"] == "cleared"
    assert info["planner"]["macros"] == 5
    client.close()


def test_client_errors_carry_the_problem(planner_url: str) -> None:
    client = PlannerClient(planner_url)
    with pytest.raises(PlannerError, match="404") as caught:
        client.autopilot("no-such-session")
    assert caught.value.problem["status"] == 404

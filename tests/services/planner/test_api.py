"""planner API: decide, autopilot on real env-sim sessions, bad input, health, metrics."""

from __future__ import annotations

import base64

import httpx
import pytest

from koholint.game.emulator import Button, GameBoy
from koholint.planning.view import read_view
from planner.config import Settings

from .conftest import planner_client

pytestmark = pytest.mark.anyio


def situation(name: str) -> dict:
    with GameBoy() as gameboy:
        gameboy.reset(name)
        return read_view(gameboy).situation().model_dump()


def open_session(env_sim: httpx.Client, state: str, press_a: bool = False) -> str:
    session = env_sim.post("/v1/sessions", json={}).json()["id"]
    assert env_sim.post(f"/v1/sessions/{session}/reset", json={"start_state": state}).is_success
    if press_a:  # talk: A for one frame, then release
        env_sim.post(f"/v1/sessions/{session}/tick", json={"buttons": int(Button.A), "frames": 1})
        env_sim.post(f"/v1/sessions/{session}/tick", json={"buttons": 0, "frames": 1})
    return session


async def test_decide_puzzle_with_session_memory(client: httpx.AsyncClient) -> None:
    body = {"situation": situation("before_puzzle"), "session": "run-1"}
    first = (await client.post("/v1/decide", json=body)).json()
    assert first["mode"] == "puzzle"
    assert first["macro"]["kind"] == "PUSH_BLOCK"
    assert first["macro"]["direction"] == "right"
    assert first["backend"] == "rules"
    second = (await client.post("/v1/decide", json=body)).json()
    assert second["memory"]["items"] == first["memory"]["items"] + 1
    assert second["memory"]["max_items"] == 16


async def test_decide_without_session_keeps_no_memory(client: httpx.AsyncClient) -> None:
    body = {"situation": situation("start_of_play")}
    decision = (await client.post("/v1/decide", json=body)).json()
    assert decision["macro"] is None
    assert decision["goal"] == "find the sword"
    assert decision["memory"]["items"] == 1


@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        (lambda b: b["situation"].update(tiles=[[0] * 10] * 7), "tiles"),
        (lambda b: b["situation"]["state"].update(health=-1), "health"),
        (lambda b: b.update(session="../etc"), "session"),
        (lambda b: b.update(unknown=1), "unknown"),
        (lambda b: b.update(frame_png_base64="***"), "frame_png_base64"),
    ],
)
async def test_decide_bad_input_is_422(client: httpx.AsyncClient, mutate, field: str) -> None:  # type: ignore[no-untyped-def]
    body = {"situation": situation("start_of_play")}
    mutate(body)
    response = await client.post("/v1/decide", json=body)
    assert response.status_code == 422
    assert response.headers["content-type"].startswith("application/problem+json")
    assert field in response.text


async def test_oversized_body_is_413(client: httpx.AsyncClient) -> None:
    frame = base64.b64encode(b"\0" * 100_000).decode()
    body = {"situation": situation("start_of_play"), "frame_png_base64": frame}
    response = await client.post("/v1/decide", json=body)
    assert response.status_code == 413
    assert response.headers["content-type"].startswith("application/problem+json")


@pytest.mark.parametrize(
    ("state", "press_a"), [("before_npc", True), ("before_shop", True), ("before_puzzle", False)]
)
async def test_autopilot_clears_dialog_and_puzzle_through_env_sim(
    client: httpx.AsyncClient, env_sim: httpx.Client, state: str, press_a: bool
) -> None:
    session = open_session(env_sim, state, press_a)
    response = await client.post(f"/v1/sessions/{session}/autopilot", json={"max_macros": 16})
    assert response.status_code == 200, response.text
    report = response.json()
    assert report["stopped"] == "cleared", report["reason"]
    after = env_sim.get(f"/v1/sessions/{session}/state").json()
    assert not after["dialog"]["open"]
    if state == "before_puzzle":
        assert after["room_status"] & 0x20
    if state == "before_shop":
        assert after["max_hearts"] == 4
    # the same session's memory holds the autopilot's decisions
    decision = (
        await client.post(
            "/v1/decide", json={"situation": situation("start_of_play"), "session": session}
        )
    ).json()
    assert any(e["kind"] == "result" for e in decision["memory"]["recent"])


async def test_autopilot_not_engaged_and_errors(
    client: httpx.AsyncClient, env_sim: httpx.Client
) -> None:
    session = open_session(env_sim, "start_of_play")
    report = (await client.post(f"/v1/sessions/{session}/autopilot")).json()
    assert report["stopped"] == "not_engaged"
    missing = await client.post("/v1/sessions/nope/autopilot")
    assert missing.status_code == 404
    assert "env-sim" in missing.json()["detail"]
    over = await client.post(f"/v1/sessions/{session}/autopilot", json={"max_macros": 100_000})
    assert over.status_code == 422
    assert [error["field"] for error in over.json()["errors"]] == ["max_macros"]
    over_setting = await client.post(f"/v1/sessions/{session}/autopilot", json={"max_macros": 257})
    assert over_setting.status_code == 422
    assert "limit 256" in over_setting.json()["detail"]


async def test_env_sim_unreachable_is_503() -> None:
    async with planner_client(Settings(env_sim_url="http://127.0.0.1:9")) as client:
        response = await client.post("/v1/sessions/abc/autopilot")
    assert response.status_code == 503
    assert "unreachable" in response.json()["detail"]


async def test_health_readiness_metrics(client: httpx.AsyncClient) -> None:
    assert (await client.get("/healthz")).json() == {"status": "ok"}
    assert (await client.get("/readyz")).json()["backend"] == "rules"
    await client.post("/v1/decide", json={"situation": situation("before_puzzle")})
    metrics = (await client.get("/metrics")).text
    assert (
        'planner_decisions_total{backend="rules",macro="PUSH_BLOCK",mode="puzzle"} 1.0' in metrics
    )


def test_settings_refuse_unknown_backends() -> None:
    with pytest.raises(ValueError, match="rules, local, llm-d"):
        Settings(backend="gpt")


async def test_session_memories_are_capped_lru(client: httpx.AsyncClient) -> None:
    body = {"situation": situation("before_puzzle")}
    for session in ("a", "b", "a", "c"):  # max_memories=2: "b" is the least recently used
        await client.post("/v1/decide", json={**body, "session": session})
    items = {
        s: (await client.post("/v1/decide", json={**body, "session": s})).json()["memory"]["items"]
        for s in ("a", "b")
    }
    assert items["a"] > items["b"]
    assert items["b"] == 1  # forgotten, then started afresh

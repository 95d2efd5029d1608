"""env-sim's HTTP API, through httpx against the app."""

from __future__ import annotations

import asyncio
import base64
from pathlib import Path

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from tests.services.env_sim.conftest import running_client

from koholint.game.emulator import GameBoy
from koholint.game.rom import TITLE_START, bundled_cartridge, header_checksum

pytestmark = pytest.mark.anyio
PROBLEM = "application/problem+json"


async def new_session(client, **settings) -> str:
    response = await client.post("/v1/sessions", json=settings)
    assert response.status_code == 201, response.text
    return response.json()["id"]


def other_rom_bytes() -> bytes:
    data = bytearray(bundled_cartridge().read_bytes())
    data[TITLE_START : TITLE_START + 5] = b"OTHER"
    data[0x14D] = header_checksum(bytes(data))
    return bytes(data)


async def test_session_lifecycle(client):
    session = await new_session(client)
    listed = (await client.get("/v1/sessions")).json()
    assert [s["id"] for s in listed["sessions"]] == [session]
    assert listed["max_sessions"] == 4
    assert (await client.get(f"/v1/sessions/{session}")).json()["settings"]["frame_skip"] == 4
    assert (await client.delete(f"/v1/sessions/{session}")).status_code == 204
    gone = await client.get(f"/v1/sessions/{session}/state")
    assert gone.status_code == 404
    assert gone.headers["content-type"] == PROBLEM
    assert "no session" in gone.json()["detail"]


async def test_step_returns_observation_state_and_reward_components(client):
    session = await new_session(client)
    body = (await client.post(f"/v1/sessions/{session}/step", json={"action": 1})).json()
    assert len(body["observation"]) == 128
    assert body["state"]["room"] == {"indoor": False, "map": 0, "room": 0x21}
    assert set(body["transition"]["reward_components"]) >= {"new_room", "coverage", "damage"}
    assert body["frame_png"] is None  # frames only when asked
    with_frame = (
        await client.post(f"/v1/sessions/{session}/step", json={"action": 0, "frame": True})
    ).json()
    assert base64.b64decode(with_frame["frame_png"]).startswith(b"\x89PNG")


@pytest.mark.parametrize(("observation", "size"), [("memory", 144), ("flags", 142)])
async def test_a_session_on_a_memory_observation_steps_with_its_width(client, observation, size):
    session = await new_session(client, observation=observation)
    body = (await client.post(f"/v1/sessions/{session}/step", json={"action": 1})).json()
    assert len(body["observation"]) == size
    refused = await client.post("/v1/sessions", json={"observation": "pixels"})
    assert refused.status_code == 422
    assert "observation" in refused.text


async def test_batch_steps_and_final_observation(client):
    session = await new_session(client)
    body = (await client.post(f"/v1/sessions/{session}/steps", json={"actions": [1] * 30})).json()
    assert len(body["steps"]) == 30
    assert body["frames_png"] is None
    assert body["state"]["room"]["room"] == 0x11  # walked north into the crossroads
    assert sum(step["reward_components"]["new_room"] for step in body["steps"]) == 1
    framed = (
        await client.post(f"/v1/sessions/{session}/steps", json={"actions": [0, 0], "frames": True})
    ).json()
    assert len(framed["frames_png"]) == 2


async def test_batch_stops_when_the_episode_ends(client):
    session = await new_session(client, max_episode_steps=5)
    body = (await client.post(f"/v1/sessions/{session}/steps", json={"actions": [0] * 20})).json()
    assert len(body["steps"]) == 5
    assert body["steps"][-1]["truncated"]


async def test_reset_from_another_named_state(client):
    session = await new_session(client)
    body = (
        await client.post(f"/v1/sessions/{session}/reset", json={"start_state": "dungeon_entrance"})
    ).json()
    assert body["state"]["room"] == {"indoor": True, "map": 0, "room": 0x10}
    unknown = await client.post(f"/v1/sessions/{session}/reset", json={"start_state": "castle"})
    assert unknown.status_code == 422
    assert [error["field"] for error in unknown.json()["errors"]] == ["start_state"]


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("step", {"action": 9}, "action"),
        ("step", {"action": "left"}, "action"),
        ("step", {}, "action"),
        ("steps", {"actions": []}, "actions"),
        ("steps", {"actions": [1, 2, 12]}, "actions.2"),
        ("reset", {"seed": -1}, "seed"),
    ],
)
async def test_malformed_bodies_get_422_naming_the_field(client, path, body, field):
    session = await new_session(client)
    response = await client.post(f"/v1/sessions/{session}/{path}", json=body)
    assert response.status_code == 422
    assert response.headers["content-type"] == PROBLEM
    problem = response.json()
    named = [error["field"] for error in problem.get("errors", [])] + [problem.get("field")]
    assert any(name and name.startswith(field) for name in named), problem


async def test_limits_answer_with_the_limit(client):
    session = await new_session(client)
    too_many = await client.post(f"/v1/sessions/{session}/steps", json={"actions": [0] * 65})
    assert too_many.status_code == 413
    assert too_many.json()["limit"] == 64
    skip = await client.post("/v1/sessions", json={"frame_skip": 61})
    assert skip.status_code == 422
    big = await client.post(
        f"/v1/sessions/{session}/steps",
        content=b"[" + b"0," * 40_000 + b"0]",
        headers={"content-type": "application/json"},
    )
    assert big.status_code == 413
    assert big.json()["limit_bytes"] == 64 * 1024


async def test_sessions_full_gets_429(client):
    for _ in range(4):
        await new_session(client)
    full = await client.post("/v1/sessions", json={})
    assert full.status_code == 429
    assert full.json()["limit"] == 4


async def test_idle_sessions_are_evicted(settings):
    settings.session_ttl_seconds = 0.2
    async with running_client(settings) as client:
        session = await new_session(client)
        await asyncio.sleep(0.6)
        assert (await client.get(f"/v1/sessions/{session}")).status_code == 404
        metrics = (await client.get("/metrics")).text
    assert "env_sim_evictions_total 1.0" in metrics


async def test_a_busy_session_answers_409(client):
    session = await new_session(client)
    manager = client.app.state.sessions
    lock = manager.get(session).lock
    lock.acquire()
    try:
        response = await client.post(f"/v1/sessions/{session}/step", json={"action": 0})
    finally:
        lock.release()
    assert response.status_code == 409
    assert "busy" in response.json()["detail"]


async def test_save_then_load_restores_the_state(client):
    session = await new_session(client)
    saved = (await client.post(f"/v1/sessions/{session}/save")).json()
    assert saved["key"] == f"states/{saved['id']}.state"
    before = (await client.get(f"/v1/sessions/{session}/state")).json()
    await client.post(f"/v1/sessions/{session}/steps", json={"actions": [4] * 10})
    loaded = (
        await client.post(f"/v1/sessions/{session}/load", json={"saved_state_id": saved["id"]})
    ).json()
    assert loaded["state"]["link"] == before["link"]
    other = await new_session(client, saved_state_id=saved["id"])
    assert (await client.get(f"/v1/sessions/{other}/state")).json()["link"] == before["link"]


async def test_bad_state_bytes_leave_the_session_untouched(client, tmp_path: Path):
    session = await new_session(client)
    await client.post(f"/v1/sessions/{session}/steps", json={"actions": [4] * 5})
    before = (
        await client.get(
            f"/v1/sessions/{session}/memory", params={"address": 0xC000, "count": 4096}
        )
    ).json()
    corrupt = await client.post(
        f"/v1/sessions/{session}/load",
        content=b"KHLSTATE-not-really",
        headers={"content-type": "application/octet-stream"},
    )
    assert corrupt.status_code == 422
    rom = tmp_path / "other.gb"
    rom.write_bytes(other_rom_bytes())
    with GameBoy(rom=rom) as gameboy:
        foreign = gameboy.save_state()
    wrong_rom = await client.post(
        f"/v1/sessions/{session}/load",
        content=foreign,
        headers={"content-type": "application/octet-stream"},
    )
    assert wrong_rom.status_code == 422
    assert "load it with the ROM it was made from" in wrong_rom.json()["detail"]
    after = (
        await client.get(
            f"/v1/sessions/{session}/memory", params={"address": 0xC000, "count": 4096}
        )
    ).json()
    assert after == before
    missing = await client.post(f"/v1/sessions/{session}/load", json={"saved_state_id": "0" * 32})
    assert missing.status_code == 404


async def test_uploaded_state_bytes_load(client):
    session = await new_session(client)
    with GameBoy() as gameboy:
        gameboy.reset("last_room")
        blob = gameboy.save_state()
    loaded = await client.post(
        f"/v1/sessions/{session}/load",
        content=blob,
        headers={"content-type": "application/octet-stream"},
    )
    assert loaded.status_code == 200
    assert loaded.json()["state"]["room"] == {"indoor": True, "map": 0, "room": 0x01}


async def test_frame_png_does_not_advance_the_game(client):
    session = await new_session(client)
    before = (
        await client.get(
            f"/v1/sessions/{session}/memory", params={"address": 0xC000, "count": 8192}
        )
    ).json()
    response = await client.get(f"/v1/sessions/{session}/frame.png")
    assert response.headers["content-type"] == "image/png"
    assert response.content.startswith(b"\x89PNG\r\n\x1a\n")
    after = (
        await client.get(
            f"/v1/sessions/{session}/memory", params={"address": 0xC000, "count": 8192}
        )
    ).json()
    assert after == before


async def test_tick_and_memory_for_frame_level_clients(client):
    session = await new_session(client)
    x = (await client.get(f"/v1/sessions/{session}/memory", params={"address": 0xFF98})).json()[
        "data_hex"
    ]
    frame = (
        await client.post(f"/v1/sessions/{session}/tick", json={"buttons": 0x01, "frames": 10})
    ).json()["frame"]
    moved = (await client.get(f"/v1/sessions/{session}/memory", params={"address": 0xFF98})).json()[
        "data_hex"
    ]
    assert int(moved, 16) > int(x, 16)
    assert frame > 0
    at_the_end = await client.get(
        f"/v1/sessions/{session}/memory", params={"address": 0xFFFE, "count": 4}
    )
    assert at_the_end.status_code == 200
    assert len(bytes.fromhex(at_the_end.json()["data_hex"])) == 2  # the read stops at 0xFFFF


async def test_roms_list_and_upload_switch(client, settings):
    roms = (await client.get("/v1/roms")).json()["roms"]
    assert [rom["source"] for rom in roms] == ["bundled"]
    assert roms[0]["title"] == "KOHOLINT"
    refused = await client.post(
        "/v1/roms", content=other_rom_bytes(), headers={"content-type": "application/octet-stream"}
    )
    assert refused.status_code == 403
    settings.allow_rom_upload = True
    uploaded = await client.post(
        "/v1/roms", content=other_rom_bytes(), headers={"content-type": "application/octet-stream"}
    )
    assert uploaded.status_code == 201
    rom_id = uploaded.json()["id"]
    junk = await client.post(
        "/v1/roms", content=b"\x00" * 40_000, headers={"content-type": "application/octet-stream"}
    )
    assert junk.status_code == 422
    named = await client.post("/v1/sessions", json={"rom_id": rom_id, "start_state": "before_npc"})
    assert named.status_code == 422  # a mark of the default world's route, not the opening's
    assert "start_of_play" in named.json()["detail"]
    session = await new_session(client, rom_id=rom_id, start_state=None)
    assert (await client.get(f"/v1/sessions/{session}")).json()["rom_id"] == rom_id
    assert (await client.post("/v1/sessions", json={"rom_id": "f" * 64})).status_code == 404


async def test_health_readiness_and_metrics(client):
    assert (await client.get("/healthz")).json() == {"status": "ok"}
    assert (await client.get("/readyz")).status_code == 200
    session = await new_session(client)
    await client.post(f"/v1/sessions/{session}/steps", json={"actions": [0] * 3})
    metrics = (await client.get("/metrics")).text
    assert "env_sim_steps_total 3.0" in metrics
    assert "env_sim_sessions 1.0" in metrics
    assert 'env_sim_operation_seconds_count{operation="steps"} 1.0' in metrics
    assert "http_requests_total" in metrics


async def test_readiness_fails_when_the_store_cannot_write(settings, tmp_path: Path):
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    settings.store_url = str(blocker)
    async with running_client(settings) as client:
        response = await client.get("/readyz")
    assert response.status_code == 503
    assert "object store not ready" in response.json()["detail"]


async def test_tracing_records_spans_when_an_exporter_is_set(settings):
    exporter = InMemorySpanExporter()
    async with running_client(settings, span_exporter=exporter) as client:
        await client.get("/healthz")
    assert any("/healthz" in span.name for span in exporter.get_finished_spans())


async def test_hot_path_responses_follow_the_contract(client):
    """step and steps build their JSON without pydantic; the schemas must still accept it."""
    from koholint.schemas.env_sim import BatchResult, StepResult

    session = await new_session(client)
    StepResult.model_validate(
        (
            await client.post(f"/v1/sessions/{session}/step", json={"action": 5, "frame": True})
        ).json()
    )
    BatchResult.model_validate(
        (
            await client.post(
                f"/v1/sessions/{session}/steps", json={"actions": [1, 2, 5], "frames": True}
            )
        ).json()
    )


async def test_a_world_from_the_worlds_folder_plays_from_its_own_start_of_play(settings, tmp_path):
    from koholint.game.worldgen import generate, write_world

    engine = bundled_cartridge().read_bytes()
    world = generate(seed=3, size="medium")
    write_world(world, engine, tmp_path / "worlds" / "medium-3")
    settings.worlds_dir = str(tmp_path / "worlds")
    async with running_client(settings) as client:
        roms = (await client.get("/v1/roms")).json()["roms"]
        assert [rom["source"] for rom in roms] == ["bundled", "world"]
        rom_id = roms[1]["id"]
        session = await new_session(client, rom_id=rom_id, start_state="start_of_play")
        state = (await client.get(f"/v1/sessions/{session}/state")).json()
        assert state["gameplay_type"] == 0x0B  # in the world, not at the title
        start_room = world.world.room(world.world.start[0])
        assert state["room"]["room"] == start_room.room_id
        refused = await client.post(
            "/v1/sessions", json={"rom_id": rom_id, "start_state": "dungeon_entrance"}
        )
        assert refused.status_code == 422
        assert refused.json()["field"] == "start_state"


async def test_a_missing_worlds_folder_stops_startup_naming_the_setting(settings, tmp_path):
    settings.worlds_dir = str(tmp_path / "nowhere")
    with pytest.raises(ValueError, match="KOHOLINT_ENV_SIM_WORLDS_DIR"):
        async with running_client(settings):
            pass

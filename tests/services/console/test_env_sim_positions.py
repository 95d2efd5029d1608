"""env-sim sessions publish their positions on step; the console relays them as `env-sim` dots."""

from __future__ import annotations

import time

import httpx

from console.app import create_app
from console.config import Settings
from env_sim.app import create_app as create_env_sim
from env_sim.config import Settings as EnvSimSettings
from koholint.schemas.positions import PositionEvent

REDIS = "redis://127.0.0.1:6379/0"


def test_session_steps_reach_the_console(serve, map_cache_dir, tmp_path, redis_client, stream):
    env_sim = serve(
        create_env_sim(
            EnvSimSettings(
                store_url=str(tmp_path / "store"),
                workers=1,
                redis_url=REDIS,
                positions_stream=stream,
                positions_every=4,
            )  # fmt: skip
        )
    )
    console = serve(
        create_app(
            Settings(
                redis_url=REDIS,
                positions_stream=stream,
                env_sim_url=env_sim,
                map_cache_dir=str(map_cache_dir),
            )  # fmt: skip
        )
    )
    session = httpx.post(env_sim + "/v1/sessions", json={"seed": 2}).json()["id"]
    for _ in range(3):
        httpx.post(env_sim + f"/v1/sessions/{session}/steps", json={"actions": [4] * 8})
    deadline = time.monotonic() + 10
    while redis_client.xlen(stream) < 6 and time.monotonic() < deadline:
        time.sleep(0.05)
    events = [
        PositionEvent.model_validate_json(fields[b"payload"])
        for _, fields in redis_client.xrange(stream)
    ]
    assert [event.episode_step for event in events] == [4, 8, 12, 16, 20, 24]
    assert {(event.source, event.run, event.env) for event in events} == {
        ("env-sim", "env-sim", session)
    }
    state = httpx.get(env_sim + f"/v1/sessions/{session}/state").json()
    assert (events[-1].x, events[-1].y) == (state["link"]["x"], state["link"]["y"])
    while time.monotonic() < deadline:
        recent = httpx.get(console + "/v1/positions/recent").json()["events"]
        if len(recent) == 6:
            break
        time.sleep(0.05)
    assert [event["env"] for event in recent] == [session] * 6

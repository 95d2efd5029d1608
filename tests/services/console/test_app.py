"""The console's API: page, map from the ROM, live stream from Redis, watch, run control, fleet."""

from __future__ import annotations

import json
import struct
import time
from pathlib import Path

import httpx
import pytest

from console.app import create_app
from console.config import Settings
from env_sim.app import create_app as create_env_sim
from env_sim.config import Settings as EnvSimSettings
from koholint.bus import POSITIONS_MAX_LENGTH, RedisBus
from koholint.schemas.positions import frame_key, position_event, watch_key


def _settings(map_cache_dir: Path, **overrides: object) -> Settings:
    return Settings(map_cache_dir=str(map_cache_dir), **overrides)  # type: ignore[arg-type]


def _client(app: object, client_host: str = "127.0.0.1") -> httpx.Client:
    return httpx.Client(
        base_url="http://console",
        transport=httpx.ASGITransport(app=app, client=(client_host, 5000)),
    )  # type: ignore[arg-type]


async def _call(
    app: object, method: str, path: str, client_host: str = "127.0.0.1", **kwargs: object
) -> httpx.Response:
    transport = httpx.ASGITransport(app=app, client=(client_host, 5000))  # type: ignore[arg-type]
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=transport, base_url="http://console") as client,
    ):  # type: ignore[attr-defined]
        return await client.request(method, path, **kwargs)  # type: ignore[arg-type]


def _served(serve, settings: Settings, **kwargs: object) -> str:
    return serve(create_app(settings, **kwargs))  # type: ignore[arg-type]


def test_page_and_its_static_files(serve, map_cache_dir):
    url = _served(serve, _settings(map_cache_dir))
    page = httpx.get(url + "/")
    assert page.status_code == 200
    assert '<script src="/static/console.js">' in page.text
    assert "cdn" not in page.text.lower()
    assert httpx.get(url + "/static/console.js").status_code == 200
    assert httpx.get(url + "/static/%2e%2e/config.py").status_code == 404  # only its own files


def test_map_is_rendered_from_the_rom_and_cached(serve, map_cache_dir):
    url = _served(serve, _settings(map_cache_dir))
    world = httpx.get(url + "/v1/map", timeout=120).json()
    keys = {room["key"] for room in world["rooms"]}
    # Every room of the cartridge: the overworld's 9 and the dungeon's 4.
    assert len(keys) == 13
    assert {"0-0-33", "0-0-0", "0-0-16", "1-0-1"} <= keys
    png = httpx.get(url + "/v1/map/rooms/0-0-33.png").content
    assert png.startswith(b"\x89PNG")
    assert struct.unpack(">II", png[16:24]) == (160, 128)
    assert httpx.get(url + "/v1/map/rooms/0-0-200.png").status_code == 404
    bad = httpx.get(url + "/v1/map/rooms/..%2fetc.png")
    assert bad.status_code in (404, 422)
    rom = world["rom_sha256"]
    assert (map_cache_dir / rom / "rooms.json").exists()
    # A room's cached picture, marked: a new app serves the mark only if it reads the cache
    # instead of rendering the rooms again.
    marked = png + b"from the cache"
    (map_cache_dir / rom / "0-0-33.png").write_bytes(marked)
    again_url = _served(serve, _settings(map_cache_dir))
    assert len(httpx.get(again_url + "/v1/map").json()["rooms"]) == 13
    assert httpx.get(again_url + "/v1/map/rooms/0-0-33.png").content == marked


def test_stream_relays_history_then_live_events_from_redis(
    serve, map_cache_dir, redis_client, stream
):
    bus = RedisBus(redis_client, max_length=POSITIONS_MAX_LENGTH)
    bus.publish(
        stream,
        position_event(
            "env-sim", "env-sim", "s1", (0, 0, 33), 40, 50, progress=0, episode_step=3, rooms=1
        ),
    )
    redis_client.xadd(
        stream, {"payload": '{"schema_version": 1, "run": "bad"}'}
    )  # invalid: skipped
    url = _served(
        serve,
        _settings(map_cache_dir, redis_url="redis://127.0.0.1:6379/0", positions_stream=stream),
    )
    events: dict[str, list] = {"history": [], "positions": []}
    with httpx.stream("GET", url + "/v1/positions/stream", timeout=10) as response:
        assert response.headers["content-type"].startswith("text/event-stream")
        name = None
        for line in response.iter_lines():
            if line.startswith("event: "):
                name = line[7:]
            elif line.startswith("data: "):
                events[name].extend(json.loads(line[6:]))
                if name == "history":
                    bus.publish(
                        stream,
                        position_event(
                            "trainer",
                            "r1",
                            "3",
                            (1, 0, 8),
                            70,
                            80,
                            progress=2,
                            episode_step=64,
                            rooms=4,
                        ),
                    )
                if events["positions"]:
                    break
    assert [event["env"] for event in events["history"]] == ["s1"]
    live = events["positions"][0]
    assert (live["run"], live["env"], live["room"], live["x"], live["progress"]) == (
        "r1",
        "3",
        8,
        70,
        2,
    )
    recent = httpx.get(url + "/v1/positions/recent").json()
    assert recent["connected"] is True
    assert [event["env"] for event in recent["events"]] == ["s1", "3"]
    assert "console_positions_invalid_total 1.0" in httpx.get(url + "/metrics").text


def test_streams_over_the_limit_get_429(serve, map_cache_dir):
    url = _served(serve, _settings(map_cache_dir, max_clients=1))
    with httpx.stream("GET", url + "/v1/positions/stream", timeout=10) as first:
        lines = first.iter_lines()  # held: dropping the iterator would close the stream
        assert next(lines) == "event: history"
        refused = httpx.get(url + "/v1/positions/stream", timeout=10)
    assert refused.status_code == 429
    assert refused.headers["content-type"] == "application/problem+json"
    assert refused.json()["limit"] == 1
    deadline = time.monotonic() + 10  # the browser left: its place is free again
    while httpx.get(url + "/v1/positions/recent").json()["clients"] and time.monotonic() < deadline:
        time.sleep(0.05)
    with httpx.stream("GET", url + "/v1/positions/stream", timeout=10) as again:
        assert again.status_code == 200


def _trainer_transport(calls: list[httpx.Request]) -> httpx.MockTransport:
    """Stands in for the trainer in tests of the console's own rules (token, error mapping)."""

    def answer(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        if request.url.path == "/v1/runs" and request.method == "POST":
            return httpx.Response(201, json={"run": "r", "state": "starting"})
        if request.url.path == "/v1/runs/busy/stop":
            return httpx.Response(500, json={"detail": "boom"})
        return httpx.Response(
            404, json={"title": "Not found", "status": 404, "detail": "no run 'x'"}
        )

    return httpx.MockTransport(answer)


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_run_control_needs_the_token_beyond_localhost(map_cache_dir, anyio_backend):
    calls: list[httpx.Request] = []
    open_app = create_app(
        _settings(map_cache_dir, trainer_url="http://trainer"), transport=_trainer_transport(calls)
    )
    assert (await _call(open_app, "POST", "/v1/runs", json={"run": "r"})).status_code == 201
    remote = await _call(open_app, "POST", "/v1/runs", client_host="10.1.2.3", json={"run": "r"})
    assert remote.status_code == 401
    assert "KOHOLINT_CONSOLE_CONTROL_TOKEN" in remote.json()["detail"]
    token_app = create_app(
        _settings(map_cache_dir, trainer_url="http://trainer", control_token="s3cret-7f2a"),
        transport=_trainer_transport(calls),
    )
    for host in ("127.0.0.1", "10.1.2.3"):
        assert (
            await _call(token_app, "POST", "/v1/runs/x/stop", client_host=host)
        ).status_code == 401
        wrong = {"Authorization": "Bearer nope"}
        assert (
            await _call(token_app, "POST", "/v1/runs", client_host=host, json={}, headers=wrong)
        ).status_code == 401
    good = {"Authorization": "Bearer s3cret-7f2a"}
    created = await _call(
        token_app, "POST", "/v1/runs", client_host="10.1.2.3", json={"run": "r"}, headers=good
    )
    assert created.status_code == 201
    assert [request.method for request in calls] == [
        "POST",
        "POST",
    ]  # refused calls never reached it
    assert json.loads(calls[-1].content) == {"run": "r"}


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_errors_of_the_fleet_come_back_as_problems(map_cache_dir, anyio_backend):
    app = create_app(
        _settings(map_cache_dir, trainer_url="http://trainer"), transport=_trainer_transport([])
    )
    missing = await _call(app, "GET", "/v1/runs/x")
    assert missing.status_code == 404
    assert missing.json()["service"] == "trainer"
    assert missing.json()["detail"] == "no run 'x'"
    failed = await _call(app, "POST", "/v1/runs/busy/stop")
    assert failed.status_code == 503
    bad = await _call(app, "GET", "/v1/runs/a%2Fb")
    assert bad.status_code in (404, 422)
    too_many = await _call(app, "POST", "/v1/runs", json={f"field{i}": i for i in range(65)})
    assert too_many.status_code == 422
    undeployed = await _call(create_app(_settings(map_cache_dir)), "GET", "/v1/checkpoints")
    assert undeployed.status_code == 503
    assert "KOHOLINT_CONSOLE_TRAINER_URL" in undeployed.json()["detail"]
    unreachable = await _call(
        create_app(_settings(map_cache_dir, trainer_url="http://127.0.0.1:9")), "GET", "/v1/runs"
    )
    assert unreachable.status_code == 503
    spec = (await _call(app, "GET", "/openapi.json")).json()
    assert "401" in spec["paths"]["/v1/runs"]["post"]["responses"]
    assert "429" in spec["paths"]["/v1/positions/stream"]["get"]["responses"]


def test_watch_an_env_sim_session_and_the_fleet(serve, map_cache_dir, tmp_path):
    env_sim = serve(create_env_sim(EnvSimSettings(store_url=str(tmp_path / "store"), workers=2)))
    url = _served(serve, _settings(map_cache_dir, env_sim_url=env_sim))
    session = httpx.post(env_sim + "/v1/sessions", json={"seed": 1}).json()["id"]
    sessions = httpx.get(url + "/v1/watch/env-sim").json()["sessions"]
    assert [s["id"] for s in sessions] == [session]
    frame = httpx.get(url + f"/v1/watch/env-sim/{session}/frame.png")
    assert frame.status_code == 200
    assert frame.content.startswith(b"\x89PNG")
    state = httpx.get(url + f"/v1/watch/env-sim/{session}/state").json()
    assert state["room"]["room"] == 0x21
    assert httpx.get(url + "/v1/watch/env-sim/nope/state").status_code == 404
    assert httpx.get(url + "/v1/watch/env-sim/..%2F..%2Fadmin/state").status_code in (404, 422)
    fleet = {s["service"]: s for s in httpx.get(url + "/v1/fleet").json()["services"]}
    assert fleet["env-sim"]["alive"] is True
    assert fleet["env-sim"]["ready"] is True
    assert fleet["trainer"]["deployed"] is False
    assert fleet["evaluator"]["detail"] == "not deployed"


def test_watch_a_trainer_env_through_its_frame_key(serve, map_cache_dir, redis_client, stream):
    run = stream.rsplit(".", 1)[1][:12]
    url = _served(
        serve,
        _settings(map_cache_dir, redis_url="redis://127.0.0.1:6379/0", positions_stream=stream),
    )
    try:
        first = httpx.get(url + f"/v1/watch/trainer/{run}/0/frame.png")
        assert first.status_code == 404
        assert redis_client.get(watch_key(run, "0")) is not None  # the env is now asked for frames
        redis_client.set(frame_key(run, "0"), b"\x89PNG fake", ex=5)
        assert httpx.get(url + f"/v1/watch/trainer/{run}/0/frame.png").content == b"\x89PNG fake"
    finally:
        redis_client.delete(watch_key(run, "0"), frame_key(run, "0"))
    no_redis = _served(serve, _settings(map_cache_dir))
    assert httpx.get(no_redis + "/v1/watch/trainer/r/0/frame.png").status_code == 503


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_archive_heat_from_the_trainers_store(map_cache_dir, tmp_path, anyio_backend):
    from koholint.explore.archive import Archive
    from koholint.store import LocalStore

    store = LocalStore(str(tmp_path / "store"))
    archive = Archive(store=store, prefix="archives/r1")
    for cell, steps in [
        (((0, 0, 33), 2, 3, 0), 5),
        (((0, 0, 33), 2, 3, 1), 9),
        (((1, 0, 8), 4, 1, 2), 7),
    ]:
        archive.observe(cell, steps, 0.0, lambda: b"state")
    archive.observe(((0, 0, 33), 2, 3, 0), 4, 0.0, lambda: b"state")  # visited again
    archive.save()
    app = create_app(_settings(map_cache_dir, store_url=str(tmp_path / "store")))
    heat = (await _call(app, "GET", "/v1/archive/r1")).json()
    assert heat["bin"] == 16
    assert heat["cells_total"] == 2  # progress levels summed per room cell
    assert heat["cells"][0] == {"indoor": 0, "map": 0, "room": 33, "x": 2, "y": 3, "visits": 3}
    assert (await _call(app, "GET", "/v1/archive/nope")).status_code == 404
    assert (await _call(app, "GET", "/v1/archive/..%2Fx")).status_code in (404, 422)
    assert (
        await _call(create_app(_settings(map_cache_dir)), "GET", "/v1/archive/r1")
    ).status_code == 503


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_judges_and_reward_models_are_proxied(map_cache_dir, anyio_backend):
    calls: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        if request.url.host == "evaluator":
            return httpx.Response(200, json=[{"prefix": "episodes/r1/e/0", "score": 6.0}])
        return httpx.Response(200, json={"models": [], "segments": 3})

    settings = _settings(
        map_cache_dir, evaluator_url="http://evaluator", reward_model_url="http://rm"
    )
    app = create_app(settings, transport=httpx.MockTransport(answer))
    scores = (await _call(app, "GET", "/v1/judges/scores", params={"run": "r1", "limit": 5})).json()
    assert scores["scores"][0]["score"] == 6.0
    assert str(calls[-1].url) == "http://evaluator/v1/scores?run=r1&limit=5"
    assert (await _call(app, "GET", "/v1/reward-models")).json()["segments"] == 3
    assert (await _call(app, "GET", "/v1/judges/scores", params={"run": "a&b"})).status_code == 422
    assert (
        await _call(app, "GET", "/v1/judges/scores", params={"run": "r1", "limit": 500})
    ).status_code == 422
    undeployed = await _call(create_app(_settings(map_cache_dir)), "GET", "/v1/reward-models")
    assert "KOHOLINT_CONSOLE_REWARD_MODEL_URL" in undeployed.json()["detail"]


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_judges_accuracy_is_the_newest_measured_batch(map_cache_dir, anyio_backend):
    measured = [{"judge": "progress", "pairs": 80, "correct": 60, "accuracy": 0.75,
                 "lower_bound": 0.64, "measured": True, "votes": True}]  # fmt: skip
    records = [
        {
            "prefix": "episodes/r1/e/0",
            "score": 6.0,
            "judge_accuracy": [{**measured[0], "pairs": 1}],
        },
        {"prefix": "episodes/r1/e/1", "score": 5.0, "judge_accuracy": measured},
        {"prefix": "episodes/r1/e/2", "score": 4.0},  # a version 1 record: none
    ]

    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json=records)

    app = create_app(
        _settings(map_cache_dir, evaluator_url="http://evaluator"),
        transport=httpx.MockTransport(answer),
    )
    scores = (await _call(app, "GET", "/v1/judges/scores", params={"run": "r1"})).json()
    assert scores["judge_accuracy"] == measured

"""The watch panel's new feeds through the console, over real HTTP: an env-sim session's live
frames at the game's real speed (its player driven through the console), the planner's
takeovers of a trainer env (real hybrid control publishing through Redis), and a scored
segment's frames read from the trainer's store."""

from __future__ import annotations

import contextlib
import re
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from tests.contracts import assert_problem
from tests.services.evaluator.conftest import make_segments

from console.app import create_app
from console.config import Settings
from env_sim.app import create_app as create_env_sim
from env_sim.config import Settings as EnvSimSettings
from env_sim.live import GAME_FPS
from koholint.bus import POSITIONS_MAX_LENGTH, RedisBus
from koholint.env.wrappers import PlannerControlWrapper, PositionPublisher, PositionPublisherWrapper
from koholint.env.wrappers.positions import RedisFrameChannel
from koholint.env.zelda import Action, ZeldaEnv
from koholint.planning.backends import RulesBackend
from koholint.schemas.positions import PlannerTakeover, takeovers_key
from koholint.store import LocalStore

# The game's pace on the wall clock, within 15%: other jobs share this machine's two cores.
TOLERANCE = 0.15
PART_HEAD = re.compile(rb"Content-Length: (\d+)\r\nX-Game-Frame: (\d+)\r\n\r\n")


def read_parts(url: str, seconds: float, parts: list[tuple[float, int, bytes]]) -> None:
    """Read a multipart frame stream for `seconds`: (wall time, game frame, PNG) per part."""
    deadline = time.monotonic() + seconds
    with (
        contextlib.suppress(httpx.ReadTimeout),
        httpx.stream("GET", url, timeout=httpx.Timeout(30, read=3)) as response,
    ):
        assert response.status_code == 200, response.read()
        buffer = b""
        for chunk in response.iter_bytes():
            buffer += chunk
            while (head := PART_HEAD.search(buffer)) and len(buffer) >= head.end() + int(head[1]):
                end = head.end() + int(head[1])
                parts.append((time.monotonic(), int(head[2]), buffer[head.end() : end]))
                buffer = buffer[end:]
            if time.monotonic() > deadline:
                return


@pytest.fixture
def fleet(serve, map_cache_dir: Path, tmp_path: Path) -> Iterator[tuple[str, str]]:
    """(console URL, env-sim URL): both really listening; the console proxies to env-sim."""
    env_sim = serve(create_env_sim(EnvSimSettings(store_url=str(tmp_path / "sim"), workers=2)))
    console = serve(create_app(Settings(
        map_cache_dir=str(map_cache_dir), env_sim_url=env_sim, max_live_clients=1,
    )))  # fmt: skip
    return console, env_sim


@pytest.mark.slow
def test_a_session_plays_at_real_speed_through_the_console(fleet) -> None:
    console, env_sim = fleet
    with httpx.Client(base_url=console, timeout=30) as http:
        session = httpx.post(f"{env_sim}/v1/sessions", json={"frame_skip": 1}).json()["id"]
        watch = f"/v1/watch/env-sim/{session}"
        parts: list[tuple[float, int, bytes]] = []
        reader = threading.Thread(target=read_parts, args=(console + watch + "/live", 6.0, parts))
        reader.start()
        deadline = time.monotonic() + 10
        while not parts and time.monotonic() < deadline:
            time.sleep(0.05)
        assert parts, "the idle session's screen comes first"
        # One live viewer at a time here (max_live_clients=1): the next is refused.
        assert assert_problem(http.get(watch + "/live"), 429)["limit"] == 1
        played = http.post(watch + "/play", json={"policy": "explorer"})
        assert played.status_code == 202, played.text
        time.sleep(1.0)
        start = len(parts)
        reader.join(20)
        status = http.get(watch + "/play").json()
        stopped = http.delete(watch + "/play").json()
    window = parts[start:]
    seconds = window[-1][0] - window[0][0]
    game_fps = (window[-1][1] - window[0][1]) / seconds
    assert abs(game_fps - GAME_FPS) < TOLERANCE * GAME_FPS, game_fps
    assert (len(window) - 1) / seconds > 0.6 * GAME_FPS
    assert status["state"] == "playing"
    assert status["policy"] == "explorer"
    assert stopped["state"] == "stopped"


def test_bad_watch_and_play_requests_are_problems(fleet) -> None:
    console, env_sim = fleet
    with httpx.Client(base_url=console, timeout=30) as http:
        session = httpx.post(f"{env_sim}/v1/sessions", json={}).json()["id"]
        watch = f"/v1/watch/env-sim/{session}"
        # A play request is env-sim's PlayRequest, judged here already: 422 naming the field.
        assert_problem(http.post(watch + "/play", json={"policy": "chess"}), 422, "policy")
        assert_problem(http.post(watch + "/play", json={"speed": 9}), 422, "speed")
        assert_problem(http.post("/v1/watch/env-sim/nope/play", json={}), 404)
        assert_problem(http.get("/v1/watch/env-sim/nope/live"), 404)
        assert_problem(http.get("/v1/watch/env-sim/a%20b/live"), 422)
        assert_problem(http.get(watch + "/live?fps=61"), 422, "query.fps")
        too_many = {f"f{index}": index for index in range(9)}
        assert_problem(http.post(watch + "/play", json=too_many), 422)
        spec = http.get("/openapi.json").json()["paths"]
    assert {"401", "404", "409", "422", "429", "503"} <= set(
        spec["/v1/watch/env-sim/{session_id}/play"]["post"]["responses"]
    )
    live = spec["/v1/watch/env-sim/{session_id}/live"]["get"]["responses"]
    assert {"404", "422", "429", "503"} <= set(live)


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_play_control_needs_the_token_beyond_localhost(map_cache_dir, anyio_backend):
    app = create_app(Settings(map_cache_dir=str(map_cache_dir), env_sim_url="http://env-sim"))
    transport = httpx.ASGITransport(app=app, client=("10.1.2.3", 5000))  # type: ignore[arg-type]
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=transport, base_url="http://console") as client,
    ):
        for method in ("POST", "DELETE"):
            response = await client.request(method, "/v1/watch/env-sim/s1/play", json={})
            assert response.status_code == 401
            assert "KOHOLINT_CONSOLE_CONTROL_TOKEN" in response.json()["detail"]


class HybridEnv:
    """A trainer env with the planner on: before the puzzle, the switch fires on its 2nd step."""

    def __init__(self, run: str, env_id: str) -> None:
        import redis

        self.client = redis.Redis()
        self.publisher = PositionPublisher(
            RedisBus(self.client, max_length=POSITIONS_MAX_LENGTH),
            frames=RedisFrameChannel(self.client),
            stream=f"test.console.positions.{uuid.uuid4().hex}",
        )
        zelda = ZeldaEnv(start_state="before_puzzle", sticky_action_probability=0.0)
        self.env = PositionPublisherWrapper(
            PlannerControlWrapper(zelda, RulesBackend(), enter_after=2), self.publisher,
            run=run, env_id=env_id, every=1,
        )  # fmt: skip
        self.key = takeovers_key(run, env_id)

    def play(self, steps: int) -> None:
        self.env.reset(seed=0)
        for _ in range(steps):
            self.env.step(Action.NOOP)

    def close(self) -> None:
        self.publisher.close()
        self.client.delete(self.key, self.publisher.stream)
        self.client.close()


def test_the_planners_takeovers_of_a_trainer_env(serve, map_cache_dir) -> None:
    run, env_id = f"hybrid-{uuid.uuid4().hex[:8]}", "0"
    hybrid = HybridEnv(run, env_id)
    try:
        hybrid.play(4)
        hybrid.publisher.close()
        stored = [
            PlannerTakeover.model_validate_json(raw)
            for raw in hybrid.client.lrange(hybrid.key, 0, -1)
        ]
        assert len(stored) == 1
        assert 0 < hybrid.client.ttl(hybrid.key) <= 600
        console = serve(create_app(Settings(
            map_cache_dir=str(map_cache_dir), redis_url="redis://127.0.0.1:6379/0",
        )))  # fmt: skip
        takeovers = httpx.get(f"{console}/v1/watch/trainer/{run}/{env_id}/takeovers").json()
        missing = httpx.get(f"{console}/v1/watch/trainer/{run}/9/takeovers").json()
        bad = httpx.get(f"{console}/v1/watch/trainer/{run}/a%20b/takeovers")
    finally:
        hybrid.close()
    [takeover] = takeovers["takeovers"]
    assert takeover["started_in"] == "puzzle"
    assert takeover["stopped"] == "cleared"
    assert takeover["macros"] == len(takeover["decisions"]) == 5
    assert {d["macro"] for d in takeover["decisions"]} <= {"MOVE_TO", "PUSH_BLOCK"}
    assert all(d["backend"] == "rules" and d["reason"] for d in takeover["decisions"])
    assert missing["takeovers"] == []
    assert_problem(bad, 422)


@pytest.fixture(scope="module")
def segments(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, list[str]]:
    root = tmp_path_factory.mktemp("segments")
    run = "seg-run"
    return root, run, sorted(make_segments(root, run=run, episodes=1))


def test_a_scored_segments_frames_come_from_the_store(serve, map_cache_dir, segments) -> None:
    root, run, prefixes = segments
    _, _, episode, segment = prefixes[0].split("/")
    console = serve(create_app(Settings(map_cache_dir=str(map_cache_dir), store_url=str(root))))
    base = f"{console}/v1/judges/segments/{run}/{episode}/{segment}"
    listed = httpx.get(base).json()
    assert listed["prefix"] == prefixes[0]
    assert len(listed["frames"]) == listed["steps"] == 24
    frame = httpx.get(f"{base}/frames/{listed['frames'][3]}.png")
    assert frame.content.startswith(b"\x89PNG")
    assert frame.content == LocalStore(root).get(
        f"{prefixes[0]}/frames/{listed['frames'][3]:06d}.png"
    )
    # Only what the manifest lists, under validated ids: never another path of the store.
    assert_problem(httpx.get(f"{base}/frames/999999.png"), 404)
    assert_problem(httpx.get(f"{console}/v1/judges/segments/{run}/nope/00000"), 404)
    # An encoded '/' stays inside its segment (the scaffold's SegmentsAsSent): the id is refused.
    assert_problem(
        httpx.get(f"{console}/v1/judges/segments/{run}/..%2F..%2Fx/00000"), 422, "path.episode"
    )
    assert_problem(httpx.get(f"{console}/v1/judges/segments/{run}/%2E%2E/00000"), 422)
    assert_problem(httpx.get(f"{console}/v1/judges/segments/{run}/..x/00000"), 422)
    assert_problem(httpx.get(f"{console}/v1/judges/segments/.hidden/{episode}/{segment}"), 422)
    assert_problem(httpx.get(f"{base[: -len(segment)]}0a/frames/1.png"), 422)
    assert_problem(httpx.get(f"{base}/frames/-1.png"), 422)
    unconfigured = serve(create_app(Settings(map_cache_dir=str(map_cache_dir))))
    assert (
        "KOHOLINT_CONSOLE_STORE_URL"
        in httpx.get(f"{unconfigured}/v1/judges/segments/{run}/{episode}/{segment}").json()[
            "detail"
        ]
    )

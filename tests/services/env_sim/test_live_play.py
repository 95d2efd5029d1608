"""A session at the game's real speed: its player (a baseline policy paced to 59.73 frames/s)
and its live frame stream, over a real port with real PyBoy: the measured pace, the bounded
fan-out, slow viewers dropped, and bad input as problem+json documented in the spec."""

from __future__ import annotations

import contextlib
import re
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from tests.conftest import ServedApp
from tests.contracts import assert_problem

from env_sim.app import create_app
from env_sim.config import Settings
from env_sim.live import GAME_FPS

# The game's pace on the wall clock, within 15%: other jobs share this machine's two cores.
TOLERANCE = 0.15
PART_HEAD = re.compile(rb"Content-Length: (\d+)\r\nX-Game-Frame: (\d+)\r\n\r\n")


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ServedApp]:
    settings = Settings(
        store_url=str(tmp_path / "store"), rom_dir=str(tmp_path / "roms"), workers=2,
        max_live_clients=2, max_players=1, live_send_timeout_seconds=1.0,
    )  # fmt: skip
    with ServedApp(create_app(settings)) as served:
        yield served


def _session(http: httpx.Client, **settings: object) -> str:
    response = http.post("/v1/sessions", json={"start_state": "start_of_play", **settings})
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


class Viewer:
    """Reads a live stream in a thread: (wall time, game frame, PNG bytes) of each part."""

    def __init__(self, url: str) -> None:
        self.url, self.parts = url, []  # type: ignore[var-annotated]
        self.status = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._read, daemon=True)

    def _read(self) -> None:
        # A short read timeout: an idle session sends nothing, and the thread must end.
        with (
            contextlib.suppress(httpx.ReadTimeout),
            httpx.stream("GET", self.url, timeout=httpx.Timeout(30, read=2)) as response,
        ):
            self.status = response.status_code
            buffer = b""
            for chunk in response.iter_bytes():
                buffer += chunk
                while (match := PART_HEAD.search(buffer)) and len(buffer) >= match.end() + int(
                    match[1]
                ):
                    end = match.end() + int(match[1])
                    self.parts.append((time.monotonic(), int(match[2]), buffer[match.end() : end]))
                    buffer = buffer[end:]
                if self.stop.is_set():
                    return

    def __enter__(self) -> Viewer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(10)


@pytest.mark.slow
def test_a_playing_session_streams_at_the_games_real_speed(server: ServedApp) -> None:
    with httpx.Client(base_url=server.url, timeout=30) as http:
        session = _session(http, frame_skip=1)
        with Viewer(f"{server.url}/v1/sessions/{session}/live") as viewer:
            deadline = time.monotonic() + 10
            while not viewer.parts and time.monotonic() < deadline:
                time.sleep(0.05)
            assert viewer.parts, "an idle session's stream sends its screen first"
            idle = len(viewer.parts)
            played = http.post(f"/v1/sessions/{session}/play", json={"policy": "random"})
            assert played.status_code == 202, played.text
            assert played.json()["state"] == "playing"
            time.sleep(1.0)  # past the start
            first = len(viewer.parts)
            time.sleep(4.0)
            window = viewer.parts[first:]
            # Stepping it now would race the player: 409 names the way to stop it.
            busy = assert_problem(
                http.post(f"/v1/sessions/{session}/step", json={"action": 1}), 409
            )
            assert f"DELETE /v1/sessions/{session}/play" in busy["detail"]
            # Its state and screen stay readable while it plays.
            assert http.get(f"/v1/sessions/{session}/state").status_code == 200
            assert http.get(f"/v1/sessions/{session}/frame.png").content.startswith(b"\x89PNG")
            status = http.get(f"/v1/sessions/{session}/play").json()
        assert idle >= 1
        seconds = window[-1][0] - window[0][0]
        game_fps = (window[-1][1] - window[0][1]) / seconds
        images_per_second = (len(window) - 1) / seconds
        assert all(part[2].startswith(b"\x89PNG") for part in window)
        # The game's own pace on the wall clock; every frame shown but a few.
        assert abs(game_fps - GAME_FPS) < TOLERANCE * GAME_FPS, game_fps
        assert images_per_second > 0.7 * GAME_FPS, images_per_second
        assert status["state"] == "playing"
        assert status["policy"] == "random"
        assert abs(status["game_fps"] - GAME_FPS) < TOLERANCE * GAME_FPS, status
        stopped = http.delete(f"/v1/sessions/{session}/play").json()
        assert stopped["state"] == "stopped"
        assert stopped["stopped_reason"] == "stopped by a request"
        # Stopped, the session is the client's again.
        assert http.post(f"/v1/sessions/{session}/step", json={"action": 1}).status_code == 200


@pytest.mark.slow
def test_streams_are_bounded_and_follow_client_steps(server: ServedApp) -> None:
    with httpx.Client(base_url=server.url, timeout=30) as http:
        session = _session(http)
        url = f"{server.url}/v1/sessions/{session}/live"
        with Viewer(url) as one, Viewer(url) as two:
            deadline = time.monotonic() + 10
            while not (one.parts and two.parts) and time.monotonic() < deadline:
                time.sleep(0.05)
            assert one.status == two.status == 200
            problem = assert_problem(http.get(f"/v1/sessions/{session}/live"), 429)
            assert problem["limit"] == 2
            # Steps of a client show on the stream (nothing plays this session).
            before = one.parts[-1][1]
            for _ in range(30):
                http.post(f"/v1/sessions/{session}/step", json={"action": 4})
                time.sleep(0.02)
            time.sleep(0.5)
            assert one.parts[-1][1] > before
            assert two.parts[-1][1] == one.parts[-1][1]
        # Closed streams free their places.
        deadline = time.monotonic() + 10
        while True:
            with http.stream("GET", f"/v1/sessions/{session}/live") as response:
                if response.status_code == 200:
                    break
            assert time.monotonic() < deadline, "closed streams were not released"
            time.sleep(0.2)


@pytest.mark.slow
def test_a_viewer_that_does_not_read_is_dropped(server: ServedApp) -> None:
    with httpx.Client(base_url=server.url, timeout=30) as http:
        session = _session(http, frame_skip=1)
        stuck = socket.socket()
        stuck.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        stuck.connect(("127.0.0.1", server.port))
        stuck.sendall(f"GET /v1/sessions/{session}/live HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        try:
            state = server.server.config.app.state  # type: ignore[attr-defined]
            deadline = time.monotonic() + 30
            while (feed := state.sessions.get(session).feed) is None or feed.latest is None:
                assert time.monotonic() < deadline, "the stream did not start"
                time.sleep(0.05)
            assert http.post(f"/v1/sessions/{session}/play", json={"speed": 4}).status_code == 202
            live = state.live
            deadline = time.monotonic() + 60
            while live.dropped < 1:
                assert time.monotonic() < deadline, "a viewer that never reads was not dropped"
                time.sleep(0.2)
            # The player never waited for it: the game kept its pace.
            status = http.get(f"/v1/sessions/{session}/play").json()
            assert status["game_fps"] > 0.8 * 4 * GAME_FPS, status
        finally:
            stuck.close()
            http.delete(f"/v1/sessions/{session}/play")


def test_bad_play_requests_are_problems(server: ServedApp) -> None:
    with httpx.Client(base_url=server.url, timeout=30) as http:
        session = _session(http)  # frame_skip 4, start_of_play
        play = f"/v1/sessions/{session}/play"
        assert_problem(http.post(play, json={"policy": "chess"}), 422, "policy")
        assert_problem(http.post(play, json={"speed": 100}), 422, "speed")
        assert_problem(http.post(play, json={"max_seconds": -1}), 422, "max_seconds")
        assert_problem(http.post(play, json={"tempo": 2}), 422, "tempo")
        walkthrough = assert_problem(http.post(play, json={"policy": "walkthrough"}), 422, "policy")
        assert "frame_skip" in walkthrough["detail"]
        assert_problem(http.post("/v1/sessions/nope/play", json={}), 404)
        assert_problem(http.get("/v1/sessions/nope/live"), 404)
        assert_problem(http.get(f"/v1/sessions/{session}/live?fps=0"), 422, "query.fps")
        assert http.get(play).json()["state"] == "idle"
        assert http.post(play, json={"max_seconds": 30}).status_code == 202
        assert_problem(http.post(play, json={}), 409)
        other = _session(http)
        assert assert_problem(http.post(f"/v1/sessions/{other}/play", json={}), 429)["limit"] == 1
        # Closing a playing session ends its play.
        assert http.delete(f"/v1/sessions/{session}").status_code == 204
        assert http.post(f"/v1/sessions/{other}/play", json={}).status_code == 202
        http.delete(f"/v1/sessions/{other}/play")
        spec = http.get("/openapi.json").json()
    for method, statuses in (("post", {"404", "409", "422", "429"}), ("delete", {"404"})):
        assert statuses <= set(spec["paths"]["/v1/sessions/{session_id}/play"][method]["responses"])
    live = spec["paths"]["/v1/sessions/{session_id}/live"]["get"]["responses"]
    assert {"404", "422", "429"} <= set(live)
    assert "multipart/x-mixed-replace; boundary=frame" in live["200"]["content"]


def test_the_player_ends_at_max_seconds(server: ServedApp) -> None:
    with httpx.Client(base_url=server.url, timeout=30) as http:
        session = _session(http)
        assert (
            http.post(f"/v1/sessions/{session}/play", json={"max_seconds": 0.5}).status_code == 202
        )
        deadline = time.monotonic() + 20
        while (status := http.get(f"/v1/sessions/{session}/play").json())["state"] == "playing":
            assert time.monotonic() < deadline
            time.sleep(0.1)
        assert status["stopped_reason"] == "played max_seconds (0.5 s)"
        assert status["steps"] > 0
        assert http.post(f"/v1/sessions/{session}/step", json={"action": 0}).status_code == 200

"""The console in a real browser (Debian's chromium, driven by Playwright): live dots that move
while real envs publish, a click on a dot opens that env's live frames, a run started from the
page appears in the runs list and stops from the page. Screenshots are kept as test artifacts
(in $KOHOLINT_TEST_ARTIFACTS/console, else the test's temporary folder)."""

from __future__ import annotations

import os
import shutil
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import redis
from tests.services.evaluator.conftest import make_segments

from console.app import create_app
from console.config import Settings
from env_sim.app import create_app as create_env_sim
from env_sim.config import Settings as EnvSimSettings
from env_sim.live import GAME_FPS
from evaluator.app import create_app as create_evaluator
from evaluator.config import Settings as EvaluatorSettings
from koholint.bus import POSITIONS_MAX_LENGTH, STREAM_POSITIONS, RedisBus
from koholint.env.wrappers import PlannerControlWrapper, PositionPublisher, PositionPublisherWrapper
from koholint.env.wrappers.positions import RedisFrameChannel
from koholint.env.zelda import Action, ZeldaEnv
from koholint.planning.backends import RulesBackend
from koholint.schemas.positions import takeovers_key
from trainer.app import create_app as create_trainer
from trainer.config import Settings as TrainerSettings

CHROMIUM = "/usr/bin/chromium"
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not Path(CHROMIUM).exists(), reason="needs Debian's chromium: apt-get install chromium"
    ),
]
# A tiny run that keeps going until the page stops it.
RUN_FIELDS = {
    "total_env_steps": "1000000", "num_env_runners": "0", "envs_per_env_runner": "1",
    "train_batch_size": "256", "minibatch_size": "64", "num_epochs": "1",
    "rollout_fragment_length": "128", "env": '{"max_episode_steps": 128}', "export_every_episodes": "0",
    "checkpoint_every_iterations": "1", "archive_restart_every": "0",
}  # fmt: skip


@pytest.fixture
def artifacts(tmp_path: Path) -> Path:
    folder = Path(os.environ.get("KOHOLINT_TEST_ARTIFACTS", tmp_path)) / "console"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


class LiveEnvs:
    """Real envs stepping with random actions and publishing their positions, in a thread."""

    def __init__(self, stream: str, run: str, count: int = 2) -> None:
        self.client = redis.Redis()
        self.publisher = PositionPublisher(
            RedisBus(self.client, max_length=POSITIONS_MAX_LENGTH),
            frames=RedisFrameChannel(self.client),
            stream=stream,
        )
        self.envs = [
            PositionPublisherWrapper(
                ZeldaEnv(start_state="start_of_play", latch_steps=4),
                self.publisher,
                run=run,
                env_id=str(index),
                every=4,
            )  # fmt: skip
            for index in range(count)
        ]
        self.stop = threading.Event()
        self.running = threading.Event()
        self.running.set()
        self.thread = threading.Thread(target=self._play, daemon=True)

    def _play(self) -> None:
        random = np.random.default_rng(0)
        for index, env in enumerate(self.envs):
            env.reset(seed=index)
        while not self.stop.is_set():
            self.running.wait(0.1)
            if not self.running.is_set():
                continue
            for env in self.envs:
                _, _, terminated, truncated, _ = env.step(int(random.integers(1, 5)))
                if terminated or truncated:
                    env.reset()
            self.stop.wait(0.004)  # about real time: leave the CPU to the browser and servers

    def __enter__(self) -> LiveEnvs:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(10)
        self.publisher.close()
        self.client.close()


@pytest.fixture
def browser_page() -> Iterator[object]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        # Generous: other tests and benchmarks share this machine's two cores.
        page.set_default_timeout(60_000)
        errors: list[str] = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        yield page
        assert not errors, f"the page's script failed: {errors}"
        browser.close()


def _wait_until_moved(page: object, run: str, timeout: float = 60_000) -> None:
    """Wait until one of the run's dots stands elsewhere than now (or a dot came or went)."""
    before = {dot[0]: dot[1:] for dot in _dots(page, run)}
    page.wait_for_function(  # type: ignore[attr-defined]
        """([run, before]) => {
             const now = window.koholint.dots().filter(d => d.id.split('/')[1] === run);
             return now.some(d => !before[d.id] || before[d.id][0] !== d.cx || before[d.id][1] !== d.cy)
               || Object.keys(before).some(id => !now.find(d => d.id === id));
           }""",
        arg=[run, before],
        timeout=timeout,
    )


def _dots(page: object, run: str) -> list[list[object]]:
    """The dots of one run's envs: [id, x, y] on the canvas (other tests may publish too)."""
    script = f"window.koholint.dots().filter(d => d.id.split('/')[1] === {run!r}).map(d => [d.id, d.cx, d.cy])"
    return sorted(page.evaluate(script))  # type: ignore[attr-defined]


def test_live_map_watch_and_run_control(serve, browser_page, map_cache_dir, tmp_path, artifacts):
    page = browser_page
    # The trainer's envs publish on the fleet's stream: runs are told apart by their unique names.
    stream = STREAM_POSITIONS
    trainer = serve(create_trainer(TrainerSettings(store_url=str(tmp_path / "store"), run_dir=str(tmp_path / "runs"),
                                                   redis_url="redis://127.0.0.1:6379/0")))  # fmt: skip
    env_sim = serve(create_env_sim(EnvSimSettings(store_url=str(tmp_path / "sim"), workers=1)))
    console = serve(
        create_app(
            Settings(
                redis_url="redis://127.0.0.1:6379/0",
                positions_stream=stream,
                trainer_url=trainer,
                env_sim_url=env_sim,
                map_cache_dir=str(map_cache_dir),
            )  # fmt: skip
        )
    )
    run = f"live-{uuid.uuid4().hex[:8]}"
    with LiveEnvs(stream, run) as envs:
        page.goto(console + "/")
        # The map: every room drawn from the ROM, and the envs' dots.
        page.wait_for_function("window.koholint.world.rooms.size >= 13", timeout=120_000)
        page.wait_for_function(
            f"window.koholint.dots().filter(d => d.id.includes({run!r})).length >= 2"
        )
        # Rooms an agent reported before the map loaded get the ROM's image too.
        page.wait_for_function(
            "[...window.koholint.world.rooms.values()].every(room => room.image)"
        )
        assert {dot[0] for dot in _dots(page, run)} == {f"trainer/{run}/0", f"trainer/{run}/1"}
        # The dots move while the envs play (waiting on the move, not on a fixed time).
        _wait_until_moved(page, run)
        page.screenshot(path=str(artifacts / "map.png"))

        # Clicking a dot opens its live frames: the envs pause so that the dot stays where the
        # click goes (on a loaded machine a moving dot could be elsewhere by then).
        envs.running.clear()
        page.wait_for_timeout(300)  # the last positions in flight reach the page
        dot = page.evaluate(f"window.koholint.dots().find(d => d.id === 'trainer/{run}/0')")
        page.mouse.click(dot["x"], dot["y"])
        page.wait_for_selector("#watch:not([hidden])")
        assert page.inner_text("#watch-name") == dot["id"]
        envs.running.set()
        page.wait_for_function(
            "Number(document.querySelector('#watch-frame').dataset.frames || 0) >= 3"
        )
        assert page.evaluate("document.querySelector('#watch-frame').naturalWidth") == 160
        page.screenshot(path=str(artifacts / "watch.png"))

    # Runs: the form comes from the trainer's schema; start, see it listed, stop it.
    page.click("nav button[data-tab=runs]")
    page.wait_for_selector("#run-fields input[name=total_env_steps]")
    run_name = f"page-{uuid.uuid4().hex[:8]}"
    page.fill("#run-fields input[name=run]", run_name)
    for name, value in RUN_FIELDS.items():
        page.fill(f"#run-fields input[name={name}]", value)
    page.click("#run-start")
    page.wait_for_selector(f"#runs-table tr[data-run={run_name}]")
    assert page.inner_text("#run-error") == ""
    page.wait_for_selector(
        f"#runs-table tr[data-run={run_name}][data-state=running]", timeout=180_000
    )
    page.screenshot(path=str(artifacts / "runs.png"))
    # The run's own envs on the map: their dots move while it trains.
    page.click("nav button[data-tab=map]")
    page.wait_for_function(
        f"window.koholint.dots().filter(d => d.id.includes({run_name!r})).length >= 1",
        timeout=120_000,
    )
    _wait_until_moved(page, run_name, timeout=120_000)
    page.screenshot(path=str(artifacts / "training.png"))
    page.click("nav button[data-tab=runs]")
    page.click(f"#runs-table tr[data-run={run_name}] button.stop")
    page.wait_for_selector(
        f"#runs-table tr[data-run={run_name}][data-state=finished], "
        f"#runs-table tr[data-run={run_name}][data-state=stopped]",
        timeout=180_000,
    )
    page.wait_for_selector("#checkpoints-table tbody tr")
    page.screenshot(path=str(artifacts / "runs-stopped.png"))

    page.click("nav button[data-tab=fleet]")
    page.wait_for_selector("#fleet-table tr[data-service=trainer]")
    assert "true" in page.inner_text("#fleet-table tr[data-service=trainer]")
    assert "not deployed" in page.inner_text("#fleet-table tr[data-service=evaluator]")
    page.click("nav button[data-tab=map]")
    if os.environ.get("KOHOLINT_DOCS_SCREENSHOT"):
        shutil.copy(artifacts / "watch.png", os.environ["KOHOLINT_DOCS_SCREENSHOT"])


class HybridEnvs:
    """A trainer env with the planner on, from before the puzzle (the switch fires on its 2nd
    step), reset every few steps so that takeovers keep coming, in a thread."""

    def __init__(self, stream: str, run: str) -> None:
        self.client = redis.Redis()
        self.publisher = PositionPublisher(
            RedisBus(self.client, max_length=POSITIONS_MAX_LENGTH),
            frames=RedisFrameChannel(self.client),
            stream=stream,
        )
        zelda = ZeldaEnv(start_state="before_puzzle", sticky_action_probability=0.0)
        self.env = PositionPublisherWrapper(
            PlannerControlWrapper(zelda, RulesBackend(), enter_after=2), self.publisher,
            run=run, env_id="0", every=1,
        )  # fmt: skip
        self.key = takeovers_key(run, "0")
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._play, daemon=True)

    def _play(self) -> None:
        while not self.stop.is_set():
            self.env.reset(seed=0)
            for _ in range(8):
                self.env.step(Action.NOOP)
                self.stop.wait(0.1)

    def __enter__(self) -> HybridEnvs:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(30)
        self.publisher.close()
        self.client.delete(self.key)
        self.client.close()


def _scored_run(serve, root: Path) -> tuple[str, str]:
    """A run's real segments in a store, scored by a real evaluator (rules judges): its URL."""
    import httpx

    run = f"judged-{uuid.uuid4().hex[:8]}"
    make_segments(root, run=run, episodes=1)
    evaluator = serve(create_evaluator(EvaluatorSettings(store_url=str(root), consume=False)))
    job = httpx.post(f"{evaluator}/v1/evaluations", json={"run": run}).json()["id"]
    deadline = time.monotonic() + 120
    while httpx.get(f"{evaluator}/v1/evaluations/{job}").json()["state"] not in (
        "succeeded",
        "failed",
    ):
        assert time.monotonic() < deadline, "the evaluation did not finish"
        time.sleep(0.2)
    return evaluator, run


def test_live_play_planner_decisions_and_segment_frames(
    serve, browser_page, map_cache_dir, tmp_path, artifacts
):
    import httpx

    page = browser_page
    stream = f"test.console.positions.{uuid.uuid4().hex}"
    redis_url = "redis://127.0.0.1:6379/0"
    env_sim = serve(create_env_sim(EnvSimSettings(
        store_url=str(tmp_path / "sim"), workers=1, redis_url=redis_url, positions_stream=stream,
        positions_every=1,
    )))  # fmt: skip
    evaluator, judged = _scored_run(serve, tmp_path / "store")
    console = serve(create_app(Settings(
        redis_url=redis_url, positions_stream=stream, env_sim_url=env_sim,
        evaluator_url=evaluator, store_url=str(tmp_path / "store"), map_cache_dir=str(map_cache_dir),
    )))  # fmt: skip
    session = httpx.post(f"{env_sim}/v1/sessions", json={"frame_skip": 1}).json()["id"]
    for _ in range(3):  # its position reaches the map
        httpx.post(f"{env_sim}/v1/sessions/{session}/step", json={"action": 0})
    hybrid_run = f"hybrid-{uuid.uuid4().hex[:8]}"
    try:
        with HybridEnvs(stream, hybrid_run):
            page.goto(console + "/")
            page.wait_for_function("window.koholint.world.rooms.size >= 13", timeout=120_000)
            # An env-sim session: its live frames, then played at the game's real speed.
            page.click(f"#env-list button[data-env='env-sim/env-sim/{session}']")
            page.wait_for_function(
                "Number(document.querySelector('#watch-live').dataset.frames || 0) >= 1"
            )
            page.select_option("#play-policy", "random")
            page.click("#play-start")
            page.wait_for_selector("#play-status[data-state=playing]")
            page.wait_for_timeout(2500)  # the page measures over its last 2 s
            page.wait_for_function(
                f"(() => {{ const r = window.koholint.liveRates();"
                f" return Math.abs(r.gameFps - {GAME_FPS}) < {0.15 * GAME_FPS} && r.fps > 20; }})()"
            )
            assert "x real speed" in page.inner_text("#watch-rate")
            page.screenshot(path=str(artifacts / "live.png"), full_page=True)
            page.click("#play-stop")
            page.wait_for_selector("#play-status[data-state=stopped]")

            # A trainer env under hybrid control: the planner's decisions beside its frames.
            page.click(f"#env-list button[data-env='trainer/{hybrid_run}/0']")
            page.wait_for_selector("#watch-planner:not([hidden]) li.takeover")
            assert not page.is_visible("#watch-play"), "play controls are for env-sim sessions"
            decisions = page.inner_text("#planner-takeovers")
            assert "puzzle → cleared" in decisions
            assert "PUSH_BLOCK" in decisions or "MOVE_TO" in decisions
            assert "(rules)" in decisions
            page.wait_for_function(
                "Number(document.querySelector('#watch-frame').dataset.frames || 0) >= 1"
            )
            page.screenshot(path=str(artifacts / "planner.png"), full_page=True)
    finally:
        httpx.delete(f"{env_sim}/v1/sessions/{session}")
        redis.Redis().delete(stream)

    # The judges: a scored segment's frames open beside its votes.
    page.evaluate(f"window.koholint.selectRun({judged!r})")
    page.click("nav button[data-tab=judges]")
    # Each judge against the RAM ground truth, from the newest scored batch.
    page.wait_for_function("document.querySelector('#judge-accuracy table') !== null")
    assert "progress" in page.inner_text("#judge-accuracy")
    page.click("#judges button.frames")
    page.wait_for_selector("#segment:not([hidden])")
    page.wait_for_function("document.querySelector('#segment-frame').naturalWidth === 160")
    first = page.get_attribute("#segment-frame", "data-step")
    page.wait_for_function(f"document.querySelector('#segment-frame').dataset.step !== {first!r}")
    votes = page.inner_text("#segment-votes")
    assert votes.count("\n") >= 2, votes  # one line per judge
    assert page.inner_text("#segment-name").startswith(f"episodes/{judged}/")
    # The frames open beside the votes. Measured in one go in the page: the fleet refresh
    # (every 5 s) rebuilds the judges' table, so a table found by one call may be gone
    # (or an error text in its place, under load) by the next.
    page.wait_for_function(
        "(() => { const table = document.querySelector('#judges table'),"
        " panel = document.querySelector('#segment');"
        " if (!table || !panel || panel.hidden) return false;"
        " const votes = table.getBoundingClientRect(), frames = panel.getBoundingClientRect();"
        " return votes.width > 0 && frames.width > 0 && frames.left >= votes.right; })()"
    )
    page.screenshot(path=str(artifacts / "segment.png"), full_page=True)

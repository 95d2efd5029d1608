"""The console in a real browser (Debian's chromium, driven by Playwright): live dots that move
while real envs publish, a click on a dot opens that env's live frames, a run started from the
page appears in the runs list and stops from the page. Screenshots are kept as test artifacts
(in $KOHOLINT_TEST_ARTIFACTS/console, else the test's temporary folder)."""

from __future__ import annotations

import os
import shutil
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from console.app import create_app
from console.config import Settings
from env_sim.app import create_app as create_env_sim
from env_sim.config import Settings as EnvSimSettings
from koholint.bus import POSITIONS_MAX_LENGTH, STREAM_POSITIONS, RedisBus
from koholint.env.wrappers import PositionPublisher, PositionPublisherWrapper
from koholint.env.wrappers.positions import RedisFrameChannel
from koholint.env.zelda import ZeldaEnv
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
        import redis

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
        self.thread = threading.Thread(target=self._play, daemon=True)

    def _play(self) -> None:
        random = np.random.default_rng(0)
        for index, env in enumerate(self.envs):
            env.reset(seed=index)
        while not self.stop.is_set():
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
        errors: list[str] = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        yield page
        assert not errors, f"the page's script failed: {errors}"
        browser.close()


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
    with LiveEnvs(stream, run):
        page.goto(console + "/")
        # The map: every room drawn from the ROM, and the envs' dots.
        page.wait_for_function("window.koholint.world.rooms.size >= 13", timeout=120_000)
        page.wait_for_function(
            f"window.koholint.dots().filter(d => d.id.includes({run!r})).length >= 2",
            timeout=30_000,
        )
        # Rooms an agent reported before the map loaded get the ROM's image too.
        page.wait_for_function(
            "[...window.koholint.world.rooms.values()].every(room => room.image)", timeout=30_000
        )
        first = _dots(page, run)
        page.wait_for_timeout(3000)
        later = _dots(page, run)
        assert {dot[0] for dot in first} == {f"trainer/{run}/0", f"trainer/{run}/1"}
        moved = [a for a, b in zip(first, later, strict=True) if a[1:] != b[1:]]
        assert moved, "no dot moved in 3 s while the envs played"
        page.screenshot(path=str(artifacts / "map.png"))

        # Clicking a dot opens its live frames.
        dot = page.evaluate(f"window.koholint.dots().find(d => d.id === 'trainer/{run}/0')")
        page.mouse.click(dot["x"], dot["y"])
        page.wait_for_selector("#watch:not([hidden])")
        assert page.inner_text("#watch-name") == dot["id"]
        page.wait_for_function(
            "Number(document.querySelector('#watch-frame').dataset.frames || 0) >= 3",
            timeout=30_000,
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
    page.wait_for_selector(f"#runs-table tr[data-run={run_name}]", timeout=20_000)
    assert page.inner_text("#run-error") == ""
    page.wait_for_selector(
        f"#runs-table tr[data-run={run_name}][data-state=running]", timeout=180_000
    )
    page.screenshot(path=str(artifacts / "runs.png"))
    # The run's own envs on the map: their dots move while it trains.
    page.click("nav button[data-tab=map]")
    page.wait_for_function(
        f"window.koholint.dots().filter(d => d.id.includes({run_name!r})).length >= 1",
        timeout=60_000,
    )
    training = _dots(page, run_name)
    page.wait_for_timeout(4000)
    assert _dots(page, run_name) != training, "the training run's dots did not move"
    page.screenshot(path=str(artifacts / "training.png"))
    page.click("nav button[data-tab=runs]")
    page.click(f"#runs-table tr[data-run={run_name}] button.stop")
    page.wait_for_selector(
        f"#runs-table tr[data-run={run_name}][data-state=finished], "
        f"#runs-table tr[data-run={run_name}][data-state=stopped]",
        timeout=180_000,
    )
    page.wait_for_selector("#checkpoints-table tbody tr", timeout=30_000)
    page.screenshot(path=str(artifacts / "runs-stopped.png"))

    page.click("nav button[data-tab=fleet]")
    page.wait_for_selector("#fleet-table tr[data-service=trainer]")
    assert "true" in page.inner_text("#fleet-table tr[data-service=trainer]")
    assert "not deployed" in page.inner_text("#fleet-table tr[data-service=evaluator]")
    page.click("nav button[data-tab=map]")
    if os.environ.get("KOHOLINT_DOCS_SCREENSHOT"):
        shutil.copy(artifacts / "watch.png", os.environ["KOHOLINT_DOCS_SCREENSHOT"])

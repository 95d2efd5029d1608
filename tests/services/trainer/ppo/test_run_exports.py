"""A run's exports through a stalled Redis: every segment the store holds is announced once,
and the run's status counts what the store and the stream hold."""

from __future__ import annotations

import collections
import json
from pathlib import Path

import pytest
from tests.redis_server import private_redis
from tests.services.trainer.ppo.test_run import TINY

from koholint.bus import STREAM_SEGMENTS, connect_redis
from koholint.schemas.trainer import RunStatus
from koholint.store import LocalStore
from trainer.config import Deployment
from trainer.ppo.config import TrainConfig
from trainer.ppo.run import TrainingRun


@pytest.mark.slow
def test_a_run_with_redis_paused_for_writes_announces_every_segment_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    with private_redis(tmp_path) as server:
        deployment = Deployment(
            store_url=str(tmp_path / "store"), run_dir=str(tmp_path / "runs"),
            redis_url=server.url, redis_timeout_s=0.5,
        )  # fmt: skip
        admin = connect_redis(server.url)

        def pause_once(status: RunStatus) -> None:
            if status.iterations == 1:  # mid-run: segments are being written and announced
                admin.execute_command("CLIENT", "PAUSE", "3000", "WRITE")

        config = TrainConfig.load({**TINY, "run": "paused", "total_env_steps": 1024}, {})
        status = TrainingRun(config, deployment).run(on_iteration=pause_once)
        streamed = [json.loads(fields[b"payload"])["prefix"]
                    for _, fields in admin.xrange(STREAM_SEGMENTS)]  # fmt: skip
    assert status.state == "finished", status.error
    manifests = LocalStore(tmp_path / "store").list("episodes/paused/")
    stored = len([key for key in manifests if key.endswith("/manifest.json")])
    assert stored > 0
    export = status.export
    assert export["written"] == export["announced"] == stored, export
    assert export["unannounced"] == export["lost"] == 0, export
    assert status.other_work["planner_macros"] == 0  # ended episodes counted; no planner here
    announced = collections.Counter(streamed)
    assert len(announced) == stored
    assert set(announced.values()) == {1}

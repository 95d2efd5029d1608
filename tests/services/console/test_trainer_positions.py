"""A training run with Redis configured puts its envs' positions on koholint.positions."""

from __future__ import annotations

import time
import uuid

import httpx
import pytest

from koholint.bus import STREAM_POSITIONS
from koholint.schemas.positions import PositionEvent
from trainer.app import create_app as create_trainer
from trainer.config import Settings as TrainerSettings

TINY = {
    "total_env_steps": 512, "num_env_runners": 0, "envs_per_env_runner": 2, "train_batch_size": 256,
    "minibatch_size": 64, "num_epochs": 1, "rollout_fragment_length": 128,
    "env": {"max_episode_steps": 128}, "export_every_episodes": 0, "archive_restart_every": 0,
}  # fmt: skip


@pytest.mark.slow
def test_training_envs_publish_positions(serve, tmp_path, redis_client):
    # The trainer publishes on the fleet's stream; this test finds its own run's events by name.
    trainer = serve(
        create_trainer(
            TrainerSettings(
                store_url=str(tmp_path / "store"),
                run_dir=str(tmp_path / "runs"),
                redis_url="redis://127.0.0.1:6379/0",
            )  # fmt: skip
        )
    )
    run = f"positions-{uuid.uuid4().hex[:8]}"
    started = httpx.post(trainer + "/v1/runs", json={**TINY, "run": run}, timeout=30)
    assert started.status_code == 201, started.text
    deadline = time.monotonic() + 240
    while httpx.get(trainer + f"/v1/runs/{run}").json()["state"] not in ("finished", "failed"):
        assert time.monotonic() < deadline, "the tiny run did not finish"
        time.sleep(0.5)
    assert httpx.get(trainer + f"/v1/runs/{run}").json()["state"] == "finished"
    time.sleep(1.0)  # the publisher thread drains its queue
    entries = redis_client.xrevrange(STREAM_POSITIONS, count=5000)
    events = [PositionEvent.model_validate_json(fields[b"payload"]) for _, fields in entries]
    ours = [event for event in events if event.run == run]
    assert {event.source for event in ours} == {"trainer"}
    assert len({event.env for event in ours}) == 2  # both envs of the runner
    assert all(event.episode_step % 32 == 0 for event in ours)
    assert len(ours) >= 512 // 32 - 2

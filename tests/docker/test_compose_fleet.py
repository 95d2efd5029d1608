"""`docker compose up` for real: compose.yaml with compose.test.yaml's stand-ins, every image
from `make images`, driven through the containers' published ports only.

One scenario, step by step on one fleet (a fleet takes minutes to come up on 2 cores): every
service healthy; a training burst in the trainer container exports segments, the evaluator
container scores every one exactly once, the reward-model container publishes a version and
the trainer container's next burst hot-loads it; the console's live map has envs from the
trainer and from env-sim; Prometheus scrapes every service; `down` and `up` again keeps the
store and the scores."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from compose_support import Fleet, auth, require_engine_and_images, wait_for

BURST = {
    "num_env_runners": 0, "envs_per_env_runner": 2, "train_batch_size": 512,
    "minibatch_size": 128, "num_epochs": 2, "segment_steps": 64, "curiosity_weight": 0,
    "archive_restart_every": 0, "checkpoint_every_iterations": 1,
    "env": {"max_episode_steps": 128},
}  # fmt: skip
"""a burst of a minute: 2 envs in the driver, 128-step episodes, two 64-step segments each"""
LONG_RUNNING = {"redis", "minio", "env-sim", "trainer", "planner", "llm-local", "evaluator",
                "reward-model", "console", "prometheus"}  # fmt: skip


@pytest.fixture(scope="module")
def fleet() -> Iterator[Fleet]:
    require_engine_and_images()
    fleet = Fleet(project=f"koholint-test-{os.getpid()}")
    try:
        fleet.up()
        yield fleet
    finally:
        fleet.down(volumes=True)


def train(fleet: Fleet, run: str, **settings: object) -> dict[str, Any]:
    """Start a run in the trainer container and wait for it to finish; its last status."""
    client = httpx.Client(base_url=fleet.url("trainer"), timeout=30)
    started = client.post("/v1/runs", json={"run": run, **BURST, **settings}, headers=auth())
    assert started.status_code == 201, started.text

    def finished() -> dict | None:
        status = client.get(f"/v1/runs/{run}").json()
        assert status["state"] not in ("failed", "stopped"), status
        return status if status["state"] == "finished" else None

    return wait_for(f"run {run} to finish", finished, timeout=600)


def scores(fleet: Fleet, run: str) -> list[dict]:
    response = httpx.get(f"{fleet.url('evaluator')}/v1/scores", params={"run": run, "limit": 1000},
                         timeout=30)  # fmt: skip
    response.raise_for_status()
    return list(response.json())


def published(fleet: Fleet) -> list[str]:
    models = httpx.get(f"{fleet.url('reward-model')}/v1/models", timeout=30).json()["models"]
    return [model["version"] for model in models]


@pytest.mark.slow  # ~10 minutes on 2 cores: ten containers, two bursts, a restart
@pytest.mark.timeout(2400)
def test_the_fleet_in_containers_closes_the_loop_and_keeps_its_data(fleet: Fleet) -> None:
    assert set(fleet.states()) >= LONG_RUNNING
    assert not fleet.unhealthy()

    # Burst 1 in the trainer container, every episode exported to the S3 stand-in.
    first = train(fleet, "fleet-b1", total_env_steps=1024, export_every_episodes=1)
    written = first["export"]["written"]
    assert written > 0, first
    assert first["export"]["failed"] == 0, first

    # The evaluator container scores every segment, exactly once.
    every = wait_for("the evaluator to score every segment",
                     lambda: (found := scores(fleet, "fleet-b1")) and len(found) >= written and found,
                     timeout=300)  # fmt: skip
    keys = [record["record_key"] for record in every]
    assert len(keys) == len(set(keys)) == written

    # The reward-model container publishes a version (asked to train if the burst gave fewer
    # new pairs than its automatic threshold).
    def version() -> str | None:
        versions = published(fleet)
        if not versions:
            httpx.post(f"{fleet.url('reward-model')}/v1/train", headers=auth(),
                       json={"reason": "compose test: burst 1 is scored"}, timeout=120)  # fmt: skip
        return versions[-1] if versions else None

    first_version = wait_for("a published reward-model version", version, timeout=300, every=5)

    # Burst 2 in the trainer container hot-loads it and shapes with it.
    second = train(fleet, "fleet-b2", total_env_steps=1024, export_every_episodes=0,
                   reward={"model": "latest", "mode": "bonus"})  # fmt: skip
    used = second["shaped_steps"]
    assert used, second
    assert set(used) <= set(published(fleet)), second
    assert first_version in published(fleet)

    # The console's live map: envs of the trainer's runs and of an env-sim session.
    env_sim = httpx.Client(base_url=fleet.url("env-sim"), timeout=60, headers=auth())
    session = env_sim.post("/v1/sessions", json={})
    assert session.status_code == 201, session.text
    session_id = session.json()["id"]
    stepped = env_sim.post(f"/v1/sessions/{session_id}/steps", json={"actions": [0] * 32})
    assert stepped.status_code == 200, stepped.text

    def sources() -> set[str] | None:
        events = httpx.get(f"{fleet.url('console')}/v1/positions/recent", timeout=30).json()
        found = {str(event.get("source", "")) for event in events["events"]}
        return found if {"trainer", "env-sim"} <= found else None

    wait_for("the console's live map to show trainer and env-sim envs", sources, timeout=60)

    # Prometheus scrapes every service of the fleet.
    def targets_up() -> dict[str, str] | None:
        active = httpx.get(f"{fleet.url('prometheus')}/api/v1/targets", timeout=30).json()
        health = {t["labels"]["job"]: t["health"] for t in active["data"]["activeTargets"]}
        return health if health and set(health.values()) == {"up"} else None

    jobs = wait_for("every Prometheus target up", targets_up, timeout=120, every=5)
    assert {"env-sim", "trainer", "planner", "evaluator", "reward-model", "console",
            "llm-local"} <= set(jobs)  # fmt: skip

    # down and up again: the store (segments, checkpoints, versions) and the scores stay.
    fleet.down()
    started = time.monotonic()
    fleet.up()
    print(f"fleet up again in {time.monotonic() - started:.0f} s")
    assert sorted(r["record_key"] for r in scores(fleet, "fleet-b1")) == sorted(keys)
    assert first_version in published(fleet)
    runs = httpx.get(f"{fleet.url('trainer')}/v1/checkpoints", params={"run": "fleet-b2"},
                     timeout=30)  # fmt: skip
    assert runs.status_code == 200, runs.text
    assert runs.json()["checkpoints"], runs.text

"""The trainer service: start a run, 409 while active, live status, checkpoints, stop."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import pytest
from tests.services.trainer.ppo.test_run import TINY

from trainer.app import create_app
from trainer.config import Settings

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.slow
async def test_run_lifecycle_over_http(tmp_path: Path):
    app = create_app(Settings(store_url=str(tmp_path / "store"), run_dir=str(tmp_path / "runs")))
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://trainer"
        ) as client,
    ):
        bad = await client.post("/v1/runs", json={"batch": 3})
        assert bad.status_code == 422
        assert "unknown settings" in bad.json()["detail"]
        created = await client.post("/v1/runs", json={**TINY, "run": "api", "total_env_steps": 768})
        assert created.status_code == 201
        busy = await client.post("/v1/runs", json={**TINY, "run": "other"})
        assert busy.status_code == 409
        assert busy.json()["active_run"] == "api"
        for _ in range(240):
            status = (await client.get("/v1/runs/api")).json()
            if status["state"] in ("finished", "failed"):
                break
            await asyncio.sleep(0.5)
        assert status["state"] == "finished", status
        assert status["env_steps"] >= 768
        assert status["steps_per_second"] > 0
        assert status["export"]["written"] > 0
        assert status["export"]["dropped"] == status["export"]["failed"] == 0
        metrics = (await client.get("/metrics")).text
        assert f'trainer_env_steps_total{{run="api"}} {float(status["env_steps"])}' in metrics
        assert 'trainer_export_segments_total{outcome="dropped",run="api"} 0.0' in metrics
        assert 'trainer_archive_cells{run="api"}' in metrics
        checkpoints = (await client.get("/v1/checkpoints", params={"run": "api"})).json()[
            "checkpoints"
        ]
        assert checkpoints
        best = (
            await client.get(
                "/v1/checkpoints/best", params={"run": "api", "metric": "archive_cells"}
            )
        ).json()
        assert best["run"] == "api"
        missing = await client.get(
            "/v1/checkpoints/best", params={"run": "api", "metric": "nonsense"}
        )
        assert missing.status_code == 404
        assert (await client.get("/v1/runs/nope")).status_code == 404
        stopped = await client.post("/v1/runs/api/stop")
        assert stopped.json()["state"] == "finished"
        assert (await client.get("/readyz")).status_code == 200

"""/v1/runs and /v1/checkpoints: the trainer's runs and checkpoint ledger, through its API."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body, Path, Query

from console.deps import ControlDep, FleetDep
from koholint.schemas.trainer import METRIC_PATTERN, RUN_NAME_PATTERN
from koholint.web.problems import problem_responses

router = APIRouter(tags=["runs"])
# The trainer's own patterns: a name it would refuse is the console's 422, not the trainer's.
RunName = Annotated[str, Query(pattern=RUN_NAME_PATTERN)]
RunPath = Annotated[str, Path(pattern=RUN_NAME_PATTERN)]
MAX_SETTINGS = 64


@router.get("/v1/runs", responses=problem_responses(503))
async def list_runs(fleet: FleetDep) -> dict[str, Any]:
    """The trainer's runs with their live status."""
    return {"runs": await fleet.require_trainer().list_runs()}


@router.get("/v1/train-config/schema", responses=problem_responses(503))
async def get_train_config_schema(fleet: FleetDep) -> dict[str, Any]:
    """The JSON Schema of a run's settings, from the trainer (the page builds its form from it)."""
    return await fleet.require_trainer().config_schema()


@router.post(
    "/v1/runs", status_code=201, dependencies=[ControlDep],
    responses=problem_responses(401, 409, 422, 503),
)  # fmt: skip
async def create_run(
    fleet: FleetDep,
    settings: Annotated[dict[str, Any], Body(max_length=MAX_SETTINGS)],
) -> dict[str, Any]:
    """Start a training run (TrainConfig fields); needs the token beyond localhost."""
    return await fleet.require_trainer().start_run(settings)


@router.get("/v1/runs/{run}", responses=problem_responses(404, 422, 503))
async def get_run(run: RunPath, fleet: FleetDep) -> dict[str, Any]:
    """One run's live status."""
    return await fleet.require_trainer().get_run(run)


@router.post(
    "/v1/runs/{run}/stop", dependencies=[ControlDep],
    responses=problem_responses(401, 404, 422, 503),
)  # fmt: skip
async def stop_run(run: RunPath, fleet: FleetDep) -> dict[str, Any]:
    """Stop a run after its current iteration; needs the token beyond localhost."""
    return await fleet.require_trainer().stop_run(run)


@router.get("/v1/checkpoints", responses=problem_responses(404, 422, 503))
async def list_checkpoints(fleet: FleetDep, run: RunName | None = None) -> dict[str, Any]:
    """A run's checkpoint ledger (the latest run by default)."""
    return await fleet.require_trainer().checkpoints(run)


@router.get("/v1/checkpoints/best", responses=problem_responses(404, 422, 503))
async def best_checkpoint(
    fleet: FleetDep,
    metric: Annotated[str, Query(pattern=METRIC_PATTERN)],
    run: RunName | None = None,
) -> dict[str, Any]:
    """The checkpoint with the highest value of a metric."""
    return await fleet.require_trainer().best_checkpoint(metric, run)

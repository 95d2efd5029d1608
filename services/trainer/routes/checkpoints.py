"""The checkpoint ledger of a run."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query
from starlette.concurrency import run_in_threadpool

from koholint.schemas.trainer import (
    METRIC_PATTERN,
    RUN_NAME_PATTERN,
    CheckpointList,
    CheckpointRecord,
)
from koholint.web.problems import problem_responses
from trainer.deps import TrainerDep

router = APIRouter(prefix="/v1/checkpoints", tags=["checkpoints"])
RunQuery = Annotated[
    str | None, Query(pattern=RUN_NAME_PATTERN, description="a run; the latest by default")
]


@router.get("", responses=problem_responses(422, 503))
async def list_checkpoints(trainer: TrainerDep, run: RunQuery = None) -> CheckpointList:
    """The checkpoint ledger of a run (the latest run by default; empty before any)."""
    return await run_in_threadpool(trainer.checkpoints, run)


@router.get("/best", responses=problem_responses(404, 422, 503))
async def best_checkpoint(
    trainer: TrainerDep,
    metric: Annotated[str, Query(pattern=METRIC_PATTERN)],
    run: RunQuery = None,
) -> CheckpointRecord:
    """The checkpoint with the highest value of a metric (e.g. rooms, cells, win_rate)."""
    return await run_in_threadpool(trainer.best, run, metric)

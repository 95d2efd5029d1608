"""Training runs: start, status, stop."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body
from starlette.concurrency import run_in_threadpool

from trainer.deps import TrainerDep

router = APIRouter(prefix="/v1/runs", tags=["runs"])


@router.post("", status_code=201)
async def create_run(
    trainer: TrainerDep, body: Annotated[dict[str, Any], Body()]
) -> dict[str, Any]:
    """Start a training run (409 while another is active); fields as in TrainConfig."""
    run = await run_in_threadpool(trainer.start, body)
    return run.status.public()


@router.get("/{run}")
async def get_run(run: str, trainer: TrainerDep) -> dict[str, Any]:
    """Live status: steps, steps/s, return, rooms, cells, win rate, archive size."""
    return trainer.get(run).status.public()


@router.post("/{run}/stop")
async def stop_run(run: str, trainer: TrainerDep) -> dict[str, Any]:
    """Stop after the current iteration (a final checkpoint is saved)."""
    training = trainer.get(run)
    training.stop()
    return training.status.public()

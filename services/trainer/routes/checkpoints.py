"""The checkpoint ledger of a run."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query
from starlette.concurrency import run_in_threadpool

from trainer.deps import TrainerDep

router = APIRouter(prefix="/v1/checkpoints", tags=["checkpoints"])


@router.get("")
async def list_checkpoints(
    trainer: TrainerDep, run: Annotated[str | None, Query(max_length=128)] = None
) -> dict[str, Any]:
    """The checkpoint ledger of a run (the latest run by default)."""
    ledger = await run_in_threadpool(trainer.ledger, run)
    return {"run": ledger.run, "checkpoints": await run_in_threadpool(ledger.as_json)}


@router.get("/best")
async def best_checkpoint(
    trainer: TrainerDep,
    metric: Annotated[str, Query(max_length=64)],
    run: Annotated[str | None, Query(max_length=128)] = None,
) -> dict[str, Any]:
    """The checkpoint with the highest value of a metric (e.g. rooms, cells, win_rate)."""
    return await run_in_threadpool(trainer.best, run, metric)

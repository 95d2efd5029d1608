"""Training runs: start, list, status, stop."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path
from starlette.concurrency import run_in_threadpool

from koholint.schemas.trainer import RUN_NAME_PATTERN, RunList, RunStatus
from koholint.web.problems import problem_responses
from trainer.deps import TokenDep, TrainerDep
from trainer.ppo.config import TrainConfig

router = APIRouter(prefix="/v1/runs", tags=["runs"])
RunName = Annotated[str, Path(pattern=RUN_NAME_PATTERN)]


@router.post(
    "", status_code=201, dependencies=[TokenDep], responses=problem_responses(401, 409, 413, 422)
)
async def create_run(body: TrainConfig, trainer: TrainerDep) -> RunStatus:
    """Start a run (409 while one is active); unset fields: the service's environment, then defaults."""
    # The fields the caller set (nested ones key by key) go over the service's environment.
    run = await run_in_threadpool(trainer.start, body.model_dump(exclude_unset=True))
    return run.status


@router.get("")
async def list_runs(trainer: TrainerDep) -> RunList:
    """The runs this service knows: active first, then the newest."""
    return RunList(runs=[run.status for run in trainer.listed()])


@router.get("/{run}", responses=problem_responses(404, 422))
async def get_run(run: RunName, trainer: TrainerDep) -> RunStatus:
    """Live status: steps, steps/s, return, rooms, cells, win rate, archive size."""
    return trainer.get(run).status


@router.post("/{run}/stop", dependencies=[TokenDep], responses=problem_responses(401, 404, 422))
async def stop_run(run: RunName, trainer: TrainerDep) -> RunStatus:
    """Stop after the current iteration (a final checkpoint is saved)."""
    training = trainer.get(run)
    training.stop()
    return training.status

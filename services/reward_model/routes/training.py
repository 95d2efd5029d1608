"""/v1/train: fit R_phi now."""

from __future__ import annotations

from fastapi import APIRouter
from starlette.concurrency import run_in_threadpool

from koholint.schemas.reward_model import TrainRequest, TrainStatus
from koholint.web.auth import ControlDep
from koholint.web.problems import problem_responses
from reward_model.deps import ServiceDep

router = APIRouter(prefix="/v1", tags=["training"])


@router.post("/train", dependencies=[ControlDep], responses=problem_responses(401, 409))
async def train_now(service: ServiceDep, body: TrainRequest | None = None) -> TrainStatus:
    """Fit R_phi on the preference dataset; published, or refused with the reason (409: a
    training is already running)."""
    return await run_in_threadpool(service.train, (body or TrainRequest()).reason)

"""/v1/models: the published versions and their metrics."""

from __future__ import annotations

from fastapi import APIRouter
from starlette.concurrency import run_in_threadpool

from koholint.schemas.reward_model import ModelList, RewardModelCard
from koholint.web.problems import problem_responses
from reward_model.deps import ServiceDep

router = APIRouter(prefix="/v1/models", tags=["models"])


@router.get("")
async def list_models(service: ServiceDep) -> ModelList:
    """Every stored version's card (oldest first), the last training's outcome, the dataset size."""
    return await run_in_threadpool(service.models)


@router.get("/latest", responses=problem_responses(404, 409))
async def get_latest_model(service: ServiceDep) -> RewardModelCard:
    """The newest published version (404: none yet; 409: it fails verification, naming why)."""
    model = await run_in_threadpool(service.latest)
    return model.card

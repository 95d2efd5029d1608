"""/v1/score: R_phi of given observations, for debugging."""

from __future__ import annotations

from fastapi import APIRouter
from starlette.concurrency import run_in_threadpool

from koholint.schemas.reward_model import ScoreRequest, ScoreResponse
from koholint.web.auth import ControlDep
from koholint.web.problems import problem_responses
from reward_model.deps import ServiceDep

router = APIRouter(prefix="/v1", tags=["scoring"])


@router.post("/score", dependencies=[ControlDep], responses=problem_responses(401, 404, 409))
async def score_observations(body: ScoreRequest, service: ServiceDep) -> ScoreResponse:
    """R_phi (raw) of each observation with the latest or a named version, and their mean
    (404: no such version or none yet; 409: the version fails verification). It loads the
    version into the service's memory, so it needs the token beyond localhost."""
    return await run_in_threadpool(service.score, body)

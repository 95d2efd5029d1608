"""Evaluation jobs: score given segment prefixes, or a whole run, now."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path
from starlette.concurrency import run_in_threadpool

from evaluator.deps import ServiceDep
from koholint.schemas.evaluator import EvaluateRun, EvaluationRequest, EvaluationStatus
from koholint.web.auth import ControlDep
from koholint.web.problems import NotFoundError, problem_responses

router = APIRouter(prefix="/v1", tags=["evaluations"])


@router.post(
    "/evaluations",
    status_code=202,
    dependencies=[ControlDep],
    responses=problem_responses(401, 404, 422, 429),
)
async def create_evaluation(body: EvaluationRequest, service: ServiceDep) -> EvaluationStatus:
    """Start scoring the prefixes (or the run's segments; 404 if it has none); poll the job id."""
    if isinstance(body, EvaluateRun):
        return await run_in_threadpool(service.jobs.start, None, body.run)
    return await run_in_threadpool(service.jobs.start, body.prefixes, None)


@router.get("/evaluations/{evaluation_id}", responses=problem_responses(404))
async def get_evaluation(
    evaluation_id: Annotated[str, Path(pattern=r"^[0-9a-f]{32}$")], service: ServiceDep
) -> EvaluationStatus:
    """A job's state and counts: scored, already scored, rejected (why), deferred."""
    status = service.jobs.get(evaluation_id)
    if status is None:
        raise NotFoundError(f"no evaluation {evaluation_id} (finished jobs are kept a while)")
    return status

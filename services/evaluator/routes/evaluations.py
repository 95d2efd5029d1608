"""Evaluation jobs: score given segment prefixes, or a whole run, now."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path
from pydantic import BaseModel, Field, StringConstraints, model_validator
from starlette.concurrency import run_in_threadpool

from evaluator.deps import ServiceDep
from evaluator.jobs import EvaluationStatus
from evaluator.segments import NAME
from evaluator.segments import PREFIX_PATTERN as SEGMENT_PREFIX
from koholint.web.problems import NotFoundError, problem_responses

router = APIRouter(prefix="/v1", tags=["evaluations"])
RUN_PATTERN = rf"^{NAME}$"
PREFIX_PATTERN = SEGMENT_PREFIX.pattern
MAX_PREFIXES = 256
Prefix = Annotated[str, StringConstraints(pattern=PREFIX_PATTERN, max_length=400)]


class EvaluationRequest(BaseModel):
    """Exactly one of `prefixes` or `run`."""

    prefixes: list[Prefix] | None = Field(
        None, min_length=1, max_length=MAX_PREFIXES,
        description="segment prefixes, episodes/<run>/<episode>/<segment>",
    )  # fmt: skip
    run: str | None = Field(None, pattern=RUN_PATTERN, description="score every stored segment")

    @model_validator(mode="after")
    def one_target(self) -> EvaluationRequest:
        if (self.prefixes is None) == (self.run is None):
            raise ValueError("give either prefixes or run, not both and not neither")
        return self


@router.post("/evaluations", status_code=202, responses=problem_responses(422, 429))
async def create_evaluation(body: EvaluationRequest, service: ServiceDep) -> EvaluationStatus:
    """Start scoring the prefixes (or the run's segments); poll the returned job id."""
    return await run_in_threadpool(service.jobs.start, body.prefixes, body.run)


@router.get("/evaluations/{evaluation_id}", responses=problem_responses(404))
async def get_evaluation(
    evaluation_id: Annotated[str, Path(pattern=r"^[0-9a-f]{32}$")], service: ServiceDep
) -> EvaluationStatus:
    """A job's state and counts: scored, already scored, rejected (why), deferred."""
    status = service.jobs.get(evaluation_id)
    if status is None:
        raise NotFoundError(f"no evaluation {evaluation_id} (finished jobs are kept a while)")
    return status

"""Score records: a run's newest, or one segment's."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query
from starlette.concurrency import run_in_threadpool

from evaluator.deps import ServiceDep
from evaluator.output import MAX_LIST_RECORDS
from evaluator.segments import parse_prefix
from koholint.schemas.evaluator import RUN_PATTERN, SEGMENT_PREFIX_PATTERN, ScoreRecord
from koholint.web.problems import NotFoundError, problem_responses

router = APIRouter(prefix="/v1", tags=["scores"])


@router.get("/scores", responses=problem_responses(422))
async def list_scores(
    service: ServiceDep,
    run: Annotated[str, Query(pattern=RUN_PATTERN)],
    limit: Annotated[int, Query(ge=1, le=MAX_LIST_RECORDS)] = 100,
) -> list[ScoreRecord]:
    """The run's newest score records (all judge configurations), oldest first."""
    return await run_in_threadpool(service.evaluator.scores.newest, run, limit)


@router.get("/segments/{prefix:path}/score", responses=problem_responses(404, 422))
async def get_segment_score(
    service: ServiceDep, prefix: Annotated[str, Path(pattern=SEGMENT_PREFIX_PATTERN)]
) -> ScoreRecord:
    """The segment's record under the service's current judge configuration."""
    evaluator = service.evaluator
    stored = await run_in_threadpool(
        evaluator.scores.find, parse_prefix(prefix), evaluator.config.hash
    )
    if stored is None:
        raise NotFoundError(f"{prefix} has no score under judge config {evaluator.config.hash}")
    return stored.record

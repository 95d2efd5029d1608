"""/v1/judges and /v1/reward-models: the evaluator's scores (and the scored segments' frames,
from the trainer's store) and the reward model's versions."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path, Query, Request, Response
from starlette.concurrency import run_in_threadpool

from console.deps import FleetDep
from console.segments import NAME, SEGMENT, segment_frame, segment_frames
from koholint.schemas.evaluator import RUN_PATTERN
from koholint.web.problems import UnavailableError, problem_responses

router = APIRouter(tags=["judges"])


@router.get("/v1/judges/scores", responses=problem_responses(404, 422, 503))
async def list_scores(
    fleet: FleetDep,
    run: Annotated[str, Query(pattern=RUN_PATTERN)],  # the evaluator's
    limit: Annotated[int, Query(ge=1, le=100)] = 20,
) -> dict[str, Any]:
    """A run's newest segment scores: the ensemble's label and score, each judge's vote, and
    each judge's accuracy against the RAM ground truth in the newest batch that measured it."""
    scores = await fleet.scores(run, limit)
    return {"run": run, "scores": scores, "judge_accuracy": newest_accuracy(scores)}


def newest_accuracy(scores: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The judge accuracies of the newest record that carries them (records before schema
    version 2 carry none)."""
    measured = [record for record in scores if record.get("judge_accuracy")]
    return measured[-1]["judge_accuracy"] if measured else []


@router.get("/v1/reward-models", responses=problem_responses(503))
async def list_reward_models(fleet: FleetDep) -> dict[str, Any]:
    """The reward model's published versions with their held-out accuracy."""
    return await fleet.reward_models()


Name = Annotated[str, Path(pattern=NAME)]
SegmentId = Annotated[str, Path(pattern=SEGMENT)]
SEGMENT_PATH = "/v1/judges/segments/{run}/{episode}/{segment}"


def _store(request: Request) -> Any:
    if request.app.state.store is None:
        raise UnavailableError("no object store: set KOHOLINT_CONSOLE_STORE_URL (the trainer's)")
    return request.app.state.store


@router.get(SEGMENT_PATH, responses=problem_responses(404, 503))
async def get_segment_frames(
    run: Name, episode: Name, segment: SegmentId, request: Request
) -> dict[str, Any]:
    """A scored segment's frames (their steps), read from the trainer's store."""
    store = _store(request)
    return await run_in_threadpool(segment_frames, store, run, episode, segment)


@router.get(
    SEGMENT_PATH + "/frames/{step}.png",
    response_class=Response,
    responses={200: {"content": {"image/png": {}}}, **problem_responses(404, 503)},
)
async def get_segment_frame(
    run: Name,
    episode: Name,
    segment: SegmentId,
    step: Annotated[int, Path(ge=0, le=999_999)],
    request: Request,
) -> Response:
    """One frame of a scored segment (PNG)."""
    store = _store(request)
    png = await run_in_threadpool(segment_frame, store, run, episode, segment, step)
    return Response(png, media_type="image/png", headers={"cache-control": "max-age=3600"})

"""/v1/judges and /v1/reward-models: the evaluator's scores and the reward model's versions."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query

from console.deps import FleetDep
from koholint.schemas.evaluator import RUN_PATTERN
from koholint.web.problems import problem_responses

router = APIRouter(tags=["judges"])


@router.get("/v1/judges/scores", responses=problem_responses(404, 422, 503))
async def list_scores(
    fleet: FleetDep,
    run: Annotated[str, Query(pattern=RUN_PATTERN)],  # the evaluator's
    limit: Annotated[int, Query(ge=1, le=100)] = 20,
) -> dict[str, Any]:
    """A run's newest segment scores: the ensemble's label and score, each judge's vote."""
    return {"run": run, "scores": await fleet.scores(run, limit)}


@router.get("/v1/reward-models", responses=problem_responses(503))
async def list_reward_models(fleet: FleetDep) -> dict[str, Any]:
    """The reward model's published versions with their held-out accuracy."""
    return await fleet.reward_models()

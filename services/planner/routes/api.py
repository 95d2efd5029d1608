"""Decisions, autopilot on env-sim sessions, and the recorded language-model calls."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path
from fastapi.responses import PlainTextResponse
from starlette.concurrency import run_in_threadpool

from koholint.planning.autopilot import AutopilotReport
from koholint.planning.backends import Decision
from koholint.schemas.fields import PATH_ID_PATTERN
from koholint.schemas.planner import AutopilotRequest, DecideRequest
from koholint.web.auth import ControlDep
from koholint.web.problems import problem_responses
from planner.deps import PlannerDep

router = APIRouter(prefix="/v1", tags=["planner"])


@router.post("/decide", dependencies=[ControlDep], responses=problem_responses(401, 502, 503))
async def decide(body: DecideRequest, planner: PlannerDep) -> Decision:
    """A macro for the situation (structured state + room tiles, optional frame), or none
    with the reason; the session's memory is updated and shown in the record (so it needs the
    token beyond localhost)."""
    return await run_in_threadpool(planner.decide, body)


@router.post(
    "/sessions/{session_id}/autopilot",
    dependencies=[ControlDep],
    responses=problem_responses(401, 404, 409, 422, 502, 503),
)
async def autopilot(
    # env-sim's session: the library's rule for an id in another service's path.
    session_id: Annotated[str, Path(pattern=PATH_ID_PATTERN)],
    planner: PlannerDep,
    body: AutopilotRequest | None = None,
) -> AutopilotReport:
    """Drive an env-sim session with switch + macros until it leaves dialog/puzzle or the
    budget runs out. 404: no such env-sim session; 409: one autopilot per session at a time."""
    return await run_in_threadpool(planner.autopilot, session_id, body or AutopilotRequest())


@router.get(
    "/llm-calls.jsonl",
    response_class=PlainTextResponse,
    responses={200: {"content": {"application/x-ndjson": {"schema": {"type": "string"}}}}},
)
async def llm_calls(planner: PlannerDep, outcome: str = "valid,repaired") -> PlainTextResponse:
    """Recorded language-model calls as chat-format JSONL (for fine-tuning the models)."""
    import json

    wanted = set(outcome.split(","))
    lines = [json.dumps(r.to_chat()) for r in planner.calls.records() if r.outcome in wanted]
    return PlainTextResponse(
        "".join(line + "\n" for line in lines), media_type="application/x-ndjson"
    )

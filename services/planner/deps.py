"""FastAPI dependencies of the planner: the objects the lifespan made, as Annotated aliases."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from planner.service import Planner


async def get_planner(request: Request) -> Planner:
    return request.app.state.planner  # type: ignore[no-any-return]


PlannerDep = Annotated[Planner, Depends(get_planner)]

"""Liveness and readiness."""

from __future__ import annotations

from fastapi import APIRouter

from koholint.planning.backends import LlmBackend
from koholint.problems import UnavailableError
from planner.routes.api import PlannerDep

router = APIRouter(tags=["health"])


@router.get("/healthz")
async def healthz() -> dict[str, str]:
    """The process is alive."""
    return {"status": "ok"}


@router.get("/readyz")
async def readyz(planner: PlannerDep) -> dict[str, str]:
    """Ready unless every language-model route's circuit is open."""
    backend = planner.backend
    if isinstance(backend, LlmBackend):
        states = {route: b.state for route, b in backend.client.breakers.items()}
        if all(state == "open" for state in states.values()):
            raise UnavailableError(f"every route's circuit is open: {states}")
    return {"status": "ready", "backend": backend.name}

"""Liveness and readiness."""

from __future__ import annotations

from fastapi import APIRouter

from llm_local.deps import ModelDep

router = APIRouter(tags=["health"])


@router.get("/healthz")
async def healthz() -> dict[str, str]:
    """The process is alive."""
    return {"status": "ok"}


@router.get("/readyz")
async def readyz(model: ModelDep) -> dict[str, str]:
    """The model is loaded (503 until then)."""
    return {"status": "ready", "model": model.path.name}

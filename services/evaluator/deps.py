"""FastAPI dependencies of the evaluator: the objects the lifespan made, as Annotated aliases."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from evaluator.service import EvaluatorService


async def get_service(request: Request) -> EvaluatorService:
    return request.app.state.evaluator  # type: ignore[no-any-return]


ServiceDep = Annotated[EvaluatorService, Depends(get_service)]

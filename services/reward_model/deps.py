"""FastAPI dependencies of reward-model: the objects the lifespan made, as Annotated aliases."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from reward_model.service import RewardModelService


async def get_service(request: Request) -> RewardModelService:
    return request.app.state.service  # type: ignore[no-any-return]


ServiceDep = Annotated[RewardModelService, Depends(get_service)]

"""FastAPI dependencies of the trainer: the objects the lifespan made, as Annotated aliases."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from trainer.service import Trainer


async def get_trainer(request: Request) -> Trainer:
    return request.app.state.trainer  # type: ignore[no-any-return]


TrainerDep = Annotated[Trainer, Depends(get_trainer)]

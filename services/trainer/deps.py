"""FastAPI dependencies of the trainer: the objects the lifespan made, and run control's rule."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from koholint.web.auth import ControlDep, UnauthorizedError
from trainer.config import Settings
from trainer.service import Trainer

__all__ = ["SettingsDep", "TokenDep", "TrainerDep", "UnauthorizedError"]


async def get_trainer(request: Request) -> Trainer:
    return request.app.state.trainer  # type: ignore[no-any-return]


async def get_settings(request: Request) -> Settings:
    return request.app.state.settings  # type: ignore[no-any-return]


TrainerDep = Annotated[Trainer, Depends(get_trainer)]
SettingsDep = Annotated[Settings, Depends(get_settings)]


TokenDep = ControlDep
"""Run control: koholint.web.auth's rule (a bearer token beyond loopback)."""

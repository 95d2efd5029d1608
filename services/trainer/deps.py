"""FastAPI dependencies of the trainer: the objects the lifespan made, and run control's rule."""

from __future__ import annotations

from typing import Annotated

from koholint.web.auth import ControlDep, UnauthorizedError
from koholint.web.state import from_state
from trainer.config import Settings
from trainer.service import Trainer

__all__ = ["SettingsDep", "TokenDep", "TrainerDep", "UnauthorizedError"]


TrainerDep = Annotated[Trainer, from_state("trainer")]
SettingsDep = Annotated[Settings, from_state("settings")]


TokenDep = ControlDep
"""Run control: koholint.web.auth's rule (a bearer token beyond loopback)."""

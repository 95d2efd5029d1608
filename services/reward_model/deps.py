"""FastAPI dependencies of reward-model: the objects the lifespan made, as Annotated aliases."""

from __future__ import annotations

from typing import Annotated

from koholint.web.state import from_state
from reward_model.service import RewardModelService

ServiceDep = Annotated[RewardModelService, from_state("service")]

"""FastAPI dependencies of llm-local: the objects the lifespan made, as Annotated aliases."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from koholint.web.problems import UnavailableError
from koholint.web.state import from_state
from llm_local.config import Settings
from llm_local.metrics import Metrics
from llm_local.model import ChatModel


async def get_model(request: Request) -> ChatModel:
    model = getattr(request.app.state, "model", None)
    if model is None:
        raise UnavailableError("the model is not loaded yet")
    return model  # type: ignore[no-any-return]


SettingsDep = Annotated[Settings, from_state("settings")]
MetricsDep = Annotated[Metrics, from_state("metrics")]
ModelDep = Annotated[ChatModel, Depends(get_model)]

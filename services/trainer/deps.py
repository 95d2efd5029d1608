"""FastAPI dependencies of the trainer: the objects the lifespan made, and run control's token."""

from __future__ import annotations

import hmac
from typing import Annotated

from fastapi import Depends, Request

from koholint.web.problems import ProblemError
from trainer.config import Settings, is_loopback
from trainer.service import Trainer


class UnauthorizedError(ProblemError):
    status_code = 401
    title = "Unauthorized"


async def get_trainer(request: Request) -> Trainer:
    return request.app.state.trainer  # type: ignore[no-any-return]


async def get_settings(request: Request) -> Settings:
    return request.app.state.settings  # type: ignore[no-any-return]


TrainerDep = Annotated[Trainer, Depends(get_trainer)]
SettingsDep = Annotated[Settings, Depends(get_settings)]


async def require_token(request: Request, settings: SettingsDep) -> None:
    """Run control: `Authorization: Bearer <token>` when a token is set; without one, only
    from loopback (the service refuses to start beyond loopback without a token)."""
    expected = settings.token.get_secret_value()
    if not expected:
        client = request.client.host if request.client else ""
        if not is_loopback(client):
            raise UnauthorizedError(
                "run control from beyond localhost needs a token: set KOHOLINT_TRAINER_TOKEN"
            )
        return
    scheme, _, given = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not hmac.compare_digest(given.encode(), expected.encode()):
        raise UnauthorizedError("missing or wrong token: send Authorization: Bearer <token>")


TokenDep = Depends(require_token)

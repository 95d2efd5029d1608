"""FastAPI dependencies of the console: the objects the lifespan made, as Annotated aliases."""

from __future__ import annotations

import hmac
import ipaddress
from typing import Annotated, Any

from fastapi import Depends, Request

from console.config import Settings
from console.fleet import Fleet
from console.relay import PositionHub
from console.worldmap import MapCache
from koholint.web.problems import ProblemError
from koholint.web.streaming import StreamSlots


async def get_settings(request: Request) -> Settings:
    return request.app.state.settings  # type: ignore[no-any-return]


async def get_hub(request: Request) -> PositionHub:
    return request.app.state.hub  # type: ignore[no-any-return]


async def get_fleet(request: Request) -> Fleet:
    return request.app.state.fleet  # type: ignore[no-any-return]


async def get_map(request: Request) -> MapCache:
    return request.app.state.map  # type: ignore[no-any-return]


async def get_live(request: Request) -> StreamSlots:
    return request.app.state.live  # type: ignore[no-any-return]


async def get_redis(request: Request) -> Any:
    return request.app.state.redis


def _is_loopback(host: str | None) -> bool:
    try:
        return host is not None and ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


async def require_control(request: Request) -> None:
    """Run control: the bearer token when one is configured; else loopback clients only."""
    settings: Settings = request.app.state.settings
    token = settings.control_token.get_secret_value()
    given = request.headers.get("authorization", "").removeprefix("Bearer ").strip()
    if token:
        if not hmac.compare_digest(given.encode(), token.encode()):
            raise ProblemError("run control needs the console's token as 'Authorization: Bearer "
                               "<token>'", status_code=401, title="Unauthorized")  # fmt: skip
    elif not _is_loopback(request.client.host if request.client else None):
        raise ProblemError(
            "run control from beyond localhost needs a token: the operator sets "
            "KOHOLINT_CONSOLE_CONTROL_TOKEN and the page sends it",
            status_code=401, title="Unauthorized",
        )  # fmt: skip


SettingsDep = Annotated[Settings, Depends(get_settings)]
HubDep = Annotated[PositionHub, Depends(get_hub)]
FleetDep = Annotated[Fleet, Depends(get_fleet)]
MapDep = Annotated[MapCache, Depends(get_map)]
RedisDep = Annotated[Any, Depends(get_redis)]
LiveDep = Annotated[StreamSlots, Depends(get_live)]
ControlDep = Depends(require_control)

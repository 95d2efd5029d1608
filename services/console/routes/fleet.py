"""/v1/fleet: each service's health and readiness, as the console sees it."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from console.deps import FleetDep, HubDep, SettingsDep

router = APIRouter(prefix="/v1/fleet", tags=["fleet"])


@router.get("")
async def get_fleet(fleet: FleetDep, hub: HubDep, settings: SettingsDep) -> dict[str, Any]:
    """Each service: deployed, alive (/healthz), ready (/readyz); and the positions stream."""
    return {
        "services": await fleet.health(),
        "positions": {"configured": bool(settings.redis_url), "connected": hub.connected,
                      "stream": settings.positions_stream, "clients": len(hub.subscribers)},
        "control_token": bool(settings.control_token.get_secret_value()),
    }  # fmt: skip

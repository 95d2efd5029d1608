"""/v1/positions: the live stream of every env's position (Server-Sent Events) and its history."""

from __future__ import annotations

import json
from typing import Annotated, Any

from fastapi import APIRouter, Query, Response

from console.deps import HubDep, SettingsDep
from console.relay import PositionStream
from koholint.web.problems import problem_responses

router = APIRouter(prefix="/v1/positions", tags=["positions"])


class _StreamResponse(Response):
    """Hands the connection to the relay's own sender (paced, dropped when slow)."""

    def __init__(self, stream: PositionStream) -> None:
        super().__init__(media_type="text/event-stream")
        self.stream = stream

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        await self.stream(scope, receive, send)


@router.get(
    "/stream",
    response_class=Response,
    responses={200: {"content": {"text/event-stream": {}}}, **problem_responses(429)},
)
async def stream_positions(hub: HubDep, settings: SettingsDep) -> Response:
    """SSE: `history` (recent events) first, then `positions` batches (newest per env)."""
    stream = PositionStream(
        hub, max_events_per_second=settings.max_events_per_second, flush_hz=settings.flush_hz,
        send_timeout=settings.send_timeout_seconds,
    )  # fmt: skip
    return _StreamResponse(stream)


@router.get("/recent")
async def list_recent_positions(
    hub: HubDep, limit: Annotated[int, Query(ge=1, le=10_000)] = 500
) -> dict[str, Any]:
    """The most recent position events (oldest first) and whether the stream is connected."""
    events = [json.loads(text) for text in list(hub.history)[-limit:]]
    return {"connected": hub.connected, "clients": len(hub.subscribers), "events": events}

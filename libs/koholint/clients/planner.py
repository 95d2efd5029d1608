"""Client of the planner service; ``PlannerClient`` is a ``Backend`` (decisions over HTTP)."""

from __future__ import annotations

import base64
from typing import Any

import httpx

from koholint.clients import ServiceError, check_response
from koholint.planning.autopilot import AutopilotReport
from koholint.planning.backends import Decision
from koholint.planning.memory import SessionMemory
from koholint.planning.view import Situation


class PlannerError(ServiceError):
    """The planner answered with an error; `problem` holds its problem+json body."""

    service = "planner"


def _json(response: httpx.Response) -> Any:
    return check_response(response, PlannerError).json()


class PlannerClient:
    """Decisions from a planner service. Memory lives server-side under `session`; the
    `memory` argument of ``decide`` is ignored."""

    name = "planner-http"

    def __init__(
        self, base_url: str, *, session: str | None = None, timeout: float = 120.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:  # fmt: skip
        self.session = session
        self.http = httpx.Client(base_url=base_url, timeout=timeout, transport=transport)

    def close(self) -> None:
        self.http.close()

    def decide(
        self,
        situation: Situation,
        memory: SessionMemory,
        *,
        seed: int = 0,
        frame_png: bytes | None = None,
    ) -> Decision:
        body: dict[str, Any] = {"situation": situation.model_dump(), "seed": seed}
        if self.session:
            body["session"] = self.session
        if frame_png is not None:
            body["frame_png_base64"] = base64.b64encode(frame_png).decode()
        return Decision.model_validate(_json(self.http.post("/v1/decide", json=body)))

    def autopilot(self, session_id: str, **budget: int) -> AutopilotReport:
        response = self.http.post(f"/v1/sessions/{session_id}/autopilot", json=budget)
        return AutopilotReport.model_validate(_json(response))

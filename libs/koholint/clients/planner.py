"""Client of the planner service; ``PlannerClient`` is a ``Backend`` (decisions over HTTP)."""

from __future__ import annotations

import base64
from typing import Any

import httpx
from pydantic import BaseModel

from koholint.clients import ServiceError, check_response
from koholint.planning.autopilot import AutopilotReport
from koholint.planning.backends import Decision
from koholint.planning.memory import SessionMemory
from koholint.schemas.fields import path_segment
from koholint.schemas.planner import AutopilotRequest, DecideRequest, Situation
from koholint.web.telemetry import tracing_event_hooks


class PlannerError(ServiceError):
    """The planner answered with an error; `problem` holds its problem+json body."""

    service = "planner"


def _json(response: httpx.Response) -> Any:
    return check_response(response, PlannerError).json()


class PlannerClient:
    """Decisions from a planner service. Memory lives server-side under `session`; the
    `memory` argument of ``decide`` is ignored. `token`: the planner's (KOHOLINT_PLANNER_TOKEN),
    which decisions and the autopilot need beyond the planner's loopback."""

    name = "planner-http"

    def __init__(
        self, base_url: str, *, session: str | None = None, timeout: float = 120.0,
        token: str = "", transport: httpx.BaseTransport | None = None,
    ) -> None:  # fmt: skip
        self.session = session
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.http = httpx.Client(
            base_url=base_url, timeout=timeout, transport=transport, headers=headers,
            event_hooks=tracing_event_hooks(),
        )  # fmt: skip

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
        frame = None if frame_png is None else base64.b64encode(frame_png).decode()
        request = DecideRequest(
            situation=situation, session=self.session, frame_png_base64=frame, seed=seed
        )
        return Decision.model_validate(_json(self._post("/v1/decide", request)))

    def autopilot(
        self, session_id: str, *, max_macros: int = 64, max_frames: int = 20_000, seed: int = 0
    ) -> AutopilotReport:
        request = AutopilotRequest(max_macros=max_macros, max_frames=max_frames, seed=seed)
        path = f"/v1/sessions/{path_segment(session_id, 'session_id')}/autopilot"
        response = self._post(path, request)
        return AutopilotReport.model_validate(_json(response))

    def _post(self, path: str, request: BaseModel) -> httpx.Response:
        """POST the request model as the service's schema has it (unset optionals left out)."""
        body = request.model_dump_json(exclude_none=True)
        return self.http.post(path, content=body, headers={"content-type": "application/json"})

"""The fleet's own APIs, as the console reaches them: fixed paths on configured base URLs only.

Nothing here takes a URL or a path from a request: handlers pass ids, which the routes check
against the library's one rule (``koholint.schemas.fields.PATH_ID``: never '.', '..', '/' or
'%') and which are checked again here before they become a segment of a configured service's
fixed path.
"""

from __future__ import annotations

import asyncio
from typing import Any
from urllib.parse import quote

import httpx

from console.config import SERVICES, Settings
from koholint.clients import ServiceError
from koholint.clients.trainer import AsyncTrainerClient
from koholint.schemas.fields import path_segment
from koholint.web.problems import UnavailableError


class UpstreamError(ServiceError):
    """A fleet service answered a proxied call with an error."""

    def __init__(self, service: str, status: int, problem: dict[str, Any]) -> None:
        self.service = service
        super().__init__(status, problem)


class Fleet:
    def __init__(
        self, settings: Settings, transport: httpx.AsyncBaseTransport | None = None
    ) -> None:
        self.urls = settings.service_urls()
        env_sim_token = settings.env_sim_token.get_secret_value()
        self.control_headers = {
            "env-sim": {"Authorization": f"Bearer {env_sim_token}"} if env_sim_token else {}
        }
        timeout = httpx.Timeout(settings.proxy_timeout_seconds, connect=2.0)
        self.http = httpx.AsyncClient(timeout=timeout, transport=transport)
        trainer_url = self.urls["trainer"]
        self.trainer = (
            AsyncTrainerClient(
                trainer_url,
                token=settings.trainer_token.get_secret_value(),
                timeout=timeout,
                transport=transport,
            )  # fmt: skip
            if trainer_url
            else None
        )

    async def aclose(self) -> None:
        await self.http.aclose()
        if self.trainer is not None:
            await self.trainer.aclose()

    def url(self, service: str) -> str:
        """A deployed service's base URL; 503 naming the setting when it is not deployed."""
        url = self.urls[service]
        if not url:
            setting = "KOHOLINT_CONSOLE_" + service.upper().replace("-", "_") + "_URL"
            raise UnavailableError(f"{service} is not deployed: set {setting}", service=service)
        return url.rstrip("/")

    def require_trainer(self) -> AsyncTrainerClient:
        self.url("trainer")
        assert self.trainer is not None
        return self.trainer

    async def get(self, service: str, path: str) -> httpx.Response:
        """GET a fixed path of a service; its errors become ServiceError (rendered by the app)."""
        response = await self.http.get(self.url(service) + path)
        _raise_for(service, response)
        return response

    async def send(
        self, service: str, method: str, path: str, body: dict[str, Any] | None = None
    ) -> Any:
        """Send to a fixed path of a service; its JSON answer, or its error as UpstreamError."""
        headers = self.control_headers.get(service, {}) if method != "GET" else {}
        response = await self.http.request(
            method, self.url(service) + path, json=body, headers=headers
        )
        _raise_for(service, response)
        return response.json()

    async def open_live(self, session_id: str, fps: int) -> httpx.Response:
        """env-sim's live frames of a session, streaming (the caller closes it). No read
        timeout: an idle session sends nothing until something steps it."""
        url = f"{self.url('env-sim')}{_session_path(session_id)}/live?fps={fps}"
        timeout = httpx.Timeout(None, connect=self.http.timeout.connect)
        response = await self.http.send(
            self.http.build_request("GET", url, timeout=timeout), stream=True
        )
        if response.is_error:
            await response.aread()
            await response.aclose()
            _raise_for("env-sim", response)
        return response

    def play_path(self, session_id: str) -> str:
        return f"{_session_path(session_id)}/play"

    async def session_frame(self, session_id: str) -> bytes:
        return (await self.get("env-sim", f"{_session_path(session_id)}/frame.png")).content

    async def session_state(self, session_id: str) -> dict[str, Any]:
        return (await self.get("env-sim", f"{_session_path(session_id)}/state")).json()  # type: ignore[no-any-return]

    async def sessions(self) -> dict[str, Any]:
        return (await self.get("env-sim", "/v1/sessions")).json()  # type: ignore[no-any-return]

    async def scores(self, run: str, limit: int) -> Any:
        path = f"/v1/scores?run={quote(run)}&limit={limit}"
        return (await self.get("evaluator", path)).json()

    async def reward_models(self) -> dict[str, Any]:
        return (await self.get("reward-model", "/v1/models")).json()  # type: ignore[no-any-return]

    async def health(self) -> list[dict[str, Any]]:
        """Each service's liveness and readiness (not deployed when it has no URL)."""
        return list(await asyncio.gather(*(self._health(name) for name in SERVICES)))

    async def _health(self, service: str) -> dict[str, Any]:
        if not self.urls[service]:
            return {"service": service, "deployed": False, "alive": False, "ready": False,
                    "detail": "not deployed"}  # fmt: skip
        base = self.urls[service].rstrip("/")
        result: dict[str, Any] = {"service": service, "deployed": True, "url": base}
        for probe, field in (("/healthz", "alive"), ("/readyz", "ready")):
            try:
                response = await self.http.get(base + probe)
                result[field] = response.status_code == 200
                if response.status_code != 200:
                    result["detail"] = _detail(response)
            except httpx.HTTPError as error:
                result[field] = False
                result["detail"] = f"unreachable: {type(error).__name__}"
        return result


def _session_path(session_id: str) -> str:
    return f"/v1/sessions/{path_segment(session_id, 'session_id')}"


def _raise_for(service: str, response: httpx.Response) -> None:
    if response.is_error:
        try:
            problem = response.json()
        except ValueError:
            problem = {"detail": response.text[:500]}
        raise UpstreamError(service, response.status_code, problem)


def _detail(response: httpx.Response) -> str:
    try:
        return str(response.json().get("detail", response.status_code))
    except ValueError:
        return f"HTTP {response.status_code}"

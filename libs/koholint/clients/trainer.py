"""Client of the trainer's HTTP API (async): runs (list, start, status, stop) and checkpoints."""

from __future__ import annotations

from typing import Any

import httpx

from koholint.clients import ServiceError, check_response
from koholint.schemas.fields import path_segment

DEFAULT_TIMEOUT = httpx.Timeout(10.0, connect=3.0)


class TrainerError(ServiceError):
    """The trainer answered with an error; `problem` holds its problem+json body."""

    service = "trainer"


def _check(response: httpx.Response) -> httpx.Response:
    return check_response(response, TrainerError)


def _run_path(run: str) -> str:
    """The run's path; ValueError when the name is no safe path segment ('..', '/', '%')."""
    return f"/v1/runs/{path_segment(run, 'run')}"


class AsyncTrainerClient:
    """One trainer server; every call returns the trainer's JSON as it answered it."""

    def __init__(
        self,
        base_url: str,
        *,
        token: str = "",
        timeout: httpx.Timeout = DEFAULT_TIMEOUT,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.http = httpx.AsyncClient(base_url=base_url, timeout=timeout, transport=transport)
        # Run control needs the trainer's token when it listens beyond loopback.
        self._control = {"Authorization": f"Bearer {token}"} if token else {}

    async def aclose(self) -> None:
        await self.http.aclose()

    async def list_runs(self) -> list[dict[str, Any]]:
        """Every run the trainer knows, with its live status."""
        document = _check(await self.http.get("/v1/runs")).json()
        runs = document["runs"] if isinstance(document, dict) else document
        return list(runs)

    async def get_run(self, run: str) -> dict[str, Any]:
        return _check(await self.http.get(_run_path(run))).json()  # type: ignore[no-any-return]

    async def start_run(self, settings: dict[str, Any]) -> dict[str, Any]:
        """Start a run with TrainConfig fields (409 while another is active, 422 on bad fields)."""
        response = await self.http.post("/v1/runs", json=settings, headers=self._control)
        return _check(response).json()  # type: ignore[no-any-return]

    async def stop_run(self, run: str) -> dict[str, Any]:
        response = await self.http.post(_run_path(run) + "/stop", headers=self._control)
        return _check(response).json()  # type: ignore[no-any-return]

    async def checkpoints(self, run: str | None = None) -> dict[str, Any]:
        params = {"run": run} if run else {}
        return _check(await self.http.get("/v1/checkpoints", params=params)).json()  # type: ignore[no-any-return]

    async def best_checkpoint(self, metric: str, run: str | None = None) -> dict[str, Any]:
        params = {"metric": metric, **({"run": run} if run else {})}
        return _check(await self.http.get("/v1/checkpoints/best", params=params)).json()  # type: ignore[no-any-return]

    async def config_schema(self) -> dict[str, Any]:
        """The JSON Schema of POST /v1/runs's body (TrainConfig), from the trainer's OpenAPI."""
        spec = _check(await self.http.get("/openapi.json")).json()
        body = spec["paths"]["/v1/runs"]["post"]["requestBody"]["content"]["application/json"]
        reference = body["schema"].get("$ref", "")
        if reference.startswith("#/components/schemas/"):
            return spec["components"]["schemas"][reference.rsplit("/", 1)[1]]  # type: ignore[no-any-return]
        return body["schema"]  # type: ignore[no-any-return]

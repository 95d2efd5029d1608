"""Clients of env-sim: the HTTP API (sync and async), and a remote session that drives like a
local one — ``RemoteEmulator`` implements the ``Emulator`` protocol, ``RemoteEnv`` the
reset/step of ``koholint/Zelda-v1`` — so the same code runs a local emulator or a session.
"""

from __future__ import annotations

from typing import Any

import httpx
import numpy as np

from koholint.clients import ServiceError, check_response
from koholint.game.state import GameState
from koholint.schemas.env_sim import (
    BatchResult,
    MemoryRead,
    Observation,
    RomList,
    SavedState,
    SessionInfo,
    SessionList,
    StepResult,
    TickResult,
)
from koholint.schemas.fields import path_segment

DEFAULT_TIMEOUT = httpx.Timeout(30.0, connect=5.0)


class EnvSimError(ServiceError):
    """env-sim answered with an error; `problem` holds its problem+json body."""

    service = "env-sim"


def _check(response: httpx.Response) -> httpx.Response:
    return check_response(response, EnvSimError)


def _session(session_id: str) -> str:
    """The session's path; ValueError when the id is no safe path segment ('..', '/', '%')."""
    return f"/v1/sessions/{path_segment(session_id, 'session_id')}"


def _settings(settings: dict[str, Any]) -> dict[str, Any]:
    return {
        name: value
        for name, value in settings.items()
        if value is not None or name == "start_state"
    }


class EnvSimClient:
    """Synchronous client of one env-sim server."""

    def __init__(
        self,
        base_url: str,
        *,
        token: str = "",
        timeout: httpx.Timeout = DEFAULT_TIMEOUT,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.http = httpx.Client(
            base_url=base_url, timeout=timeout, transport=transport, headers=headers
        )

    def close(self) -> None:
        self.http.close()

    def __enter__(self) -> EnvSimClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def create_session(self, **settings: Any) -> SessionInfo:
        return SessionInfo.model_validate(
            _check(self.http.post("/v1/sessions", json=_settings(settings))).json()
        )

    def list_sessions(self) -> SessionList:
        return SessionList.model_validate(_check(self.http.get("/v1/sessions")).json())

    def delete_session(self, session_id: str) -> None:
        _check(self.http.delete(_session(session_id)))

    def reset(self, session_id: str, **request: Any) -> Observation:
        return Observation.model_validate(
            _check(self.http.post(f"{_session(session_id)}/reset", json=request)).json()
        )

    def step(self, session_id: str, action: int, *, frame: bool = False) -> StepResult:
        body = {"action": int(action), "frame": frame}
        return StepResult.model_validate(
            _check(self.http.post(f"{_session(session_id)}/step", json=body)).json()
        )

    def steps(self, session_id: str, actions: list[int], *, frames: bool = False) -> BatchResult:
        body = {"actions": [int(a) for a in actions], "frames": frames}
        return BatchResult.model_validate(
            _check(self.http.post(f"{_session(session_id)}/steps", json=body)).json()
        )

    def state(self, session_id: str) -> GameState:
        return GameState.model_validate(
            _check(self.http.get(f"{_session(session_id)}/state")).json()
        )

    def frame_png(self, session_id: str) -> bytes:
        return _check(self.http.get(f"{_session(session_id)}/frame.png")).content

    def save(self, session_id: str) -> SavedState:
        return SavedState.model_validate(
            _check(self.http.post(f"{_session(session_id)}/save")).json()
        )

    def load(
        self,
        session_id: str,
        *,
        saved_state_id: str | None = None,
        state_bytes: bytes | None = None,
    ) -> Observation:
        url = f"{_session(session_id)}/load"
        if state_bytes is not None:
            response = self.http.post(
                url, content=state_bytes, headers={"content-type": "application/octet-stream"}
            )
        else:
            response = self.http.post(url, json={"saved_state_id": saved_state_id})
        return Observation.model_validate(_check(response).json())

    def tick(self, session_id: str, buttons: int, frames: int) -> int:
        body = {"buttons": int(buttons), "frames": frames}
        return TickResult.model_validate(
            _check(self.http.post(f"{_session(session_id)}/tick", json=body)).json()
        ).frame

    def read_memory(self, session_id: str, address: int, count: int = 1) -> bytes:
        response = self.http.get(
            f"{_session(session_id)}/memory", params={"address": address, "count": count}
        )
        return bytes.fromhex(MemoryRead.model_validate(_check(response).json()).data_hex)

    def roms(self) -> RomList:
        return RomList.model_validate(_check(self.http.get("/v1/roms")).json())


class RemoteEmulator:
    """An env-sim session behind the ``Emulator`` protocol (hold, tick, read_memory, states)."""

    def __init__(self, client: EnvSimClient, session_id: str) -> None:
        self.client = client
        self.session_id = path_segment(session_id, "session_id")
        self.held = 0
        self._frame = 0

    @property
    def frame(self) -> int:
        return self._frame

    def hold(self, buttons: int) -> None:
        self.held = int(buttons) & 0xFF

    def tick(self, frames: int = 1, *, render: bool = False) -> None:
        self._frame = self.client.tick(self.session_id, self.held, frames)

    def read_memory(self, address: int, count: int = 1) -> bytes:
        return self.client.read_memory(self.session_id, address, count)

    def save_state(self) -> bytes:
        saved = self.client.save(self.session_id)
        return saved.id.encode()  # the state stays server-side; its id stands for it

    def load_state(self, blob: bytes) -> None:
        self.client.load(self.session_id, saved_state_id=blob.decode())


class RemoteEnv:
    """reset/step of koholint/Zelda-v1 on an env-sim session: numpy observations, GameState in info."""

    def __init__(self, client: EnvSimClient, session_id: str) -> None:
        self.client = client
        self.session_id = path_segment(session_id, "session_id")

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        request: dict[str, Any] = {"seed": seed}
        if options and "start_state" in options:
            request["start_state"] = options["start_state"]
        result = self.client.reset(
            self.session_id, **{k: v for k, v in request.items() if v is not None}
        )
        return np.asarray(result.observation, dtype=np.float32), {
            "state": result.state.model_dump()
        }

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        result = self.client.step(self.session_id, action)
        t = result.transition
        info = {
            "state": result.state.model_dump(),
            "reward_components": t.reward_components,
            "action": t.applied_action,
        }
        return (
            np.asarray(result.observation, dtype=np.float32),
            t.reward,
            t.terminated,
            t.truncated,
            info,
        )

"""The planner's state: one backend, bounded per-session memories, one autopilot per session."""

from __future__ import annotations

import base64
import threading
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager

import httpx

from koholint.clients.env_sim import EnvSimClient, EnvSimError, RemoteEmulator
from koholint.llm.client import CallLog
from koholint.planning.autopilot import AutopilotReport, Budget, run_autopilot
from koholint.planning.backends import Decision, LlmBackend, make_backend
from koholint.planning.memory import SessionMemory
from koholint.schemas.planner import AutopilotRequest, DecideRequest
from koholint.web.problems import (
    ConflictError,
    NotFoundError,
    ProblemError,
    UnavailableError,
    UnprocessableError,
)
from planner.config import Settings
from planner.metrics import Metrics


class Planner:
    def __init__(self, settings: Settings, metrics: Metrics) -> None:
        self.settings, self.metrics = settings, metrics
        self.calls = CallLog(limit=settings.call_log_limit)
        self.backend = make_backend(
            settings.backend, base_url=settings.llm_base_url, models=settings.models(),
            timeout_s=settings.llm_timeout_s, attempts=settings.llm_attempts,
            vision=settings.vision, log=self.calls, api_key=settings.llm_token.get_secret_value(),
        )  # fmt: skip
        self.env_sim = EnvSimClient(
            settings.env_sim_url, token=settings.env_sim_token.get_secret_value()
        )
        self._memories: OrderedDict[str, SessionMemory] = OrderedDict()
        self._running: set[str] = set()
        self._lock = threading.Lock()

    def close(self) -> None:
        self.env_sim.close()
        if isinstance(self.backend, LlmBackend):
            self.backend.client.close()

    def memory(self, session: str | None) -> SessionMemory:
        """The session's memory (least recently used ones are dropped past the cap)."""
        fresh = SessionMemory(self.settings.memory_max_items, self.settings.memory_max_chars)
        if session is None:
            return fresh
        with self._lock:
            memory = self._memories.pop(session, None) or fresh
            self._memories[session] = memory
            while len(self._memories) > self.settings.max_memories:
                self._memories.popitem(last=False)
            return memory

    def decide(self, request: DecideRequest) -> Decision:
        # The schema's pattern admits only well-formed base64.
        frame = None
        if request.frame_png_base64 is not None:
            frame = base64.b64decode(request.frame_png_base64, validate=True)
        total = self.calls.total
        decision = self.backend.decide(
            request.situation, self.memory(request.session), seed=request.seed, frame_png=frame
        )
        self._count(decision)
        self._count_calls(total)
        return decision

    def _count(self, decision: Decision) -> None:
        macro = decision.macro.kind if decision.macro else "none"
        self.metrics.decisions.labels(decision.backend, decision.mode, macro).inc()
        self.metrics.decision_seconds.labels(decision.backend).observe(decision.latency_ms / 1000)

    def _count_calls(self, calls_before: int) -> None:
        for record in self.calls.since(calls_before):
            self.metrics.llm_calls.labels(record.route, record.outcome).inc()

    def autopilot(self, session_id: str, request: AutopilotRequest) -> AutopilotReport:
        limits = self.settings
        if request.max_macros > limits.max_autopilot_macros:
            raise UnprocessableError(
                f"max_macros is over the limit {limits.max_autopilot_macros}", field="max_macros"
            )
        if request.max_frames > limits.max_autopilot_frames:
            raise UnprocessableError(
                f"max_frames is over the limit {limits.max_autopilot_frames}", field="max_frames"
            )
        with self._exclusive(session_id), _env_sim_errors(self.settings.env_sim_url):
            self.env_sim.state(session_id)  # 404 before anything else
            total = self.calls.total
            report = run_autopilot(
                RemoteEmulator(self.env_sim, session_id), self.backend, self.memory(session_id),
                budget=Budget(request.max_macros, request.max_frames),
                enter_after=limits.enter_after, leave_after=limits.leave_after, seed=request.seed,
            )  # fmt: skip
        self.metrics.autopilot_runs.labels(report.stopped).inc()
        for step in report.steps:
            self._count(step.decision)
        self._count_calls(total)
        return report

    @contextmanager
    def _exclusive(self, session_id: str) -> Iterator[None]:
        with self._lock:
            if session_id in self._running:
                raise ConflictError(f"an autopilot is already running on session {session_id}")
            self._running.add(session_id)
        try:
            yield
        finally:
            with self._lock:
                self._running.discard(session_id)


@contextmanager
def _env_sim_errors(url: str) -> Iterator[None]:
    """env-sim's answers as the planner's problems: 404 and 409 pass through, the rest is 502."""
    try:
        yield
    except EnvSimError as error:
        detail = str(error.problem.get("detail", error))
        if error.status == 404:
            raise NotFoundError(f"env-sim: {detail}") from None
        if error.status == 409:
            raise ConflictError(f"env-sim: {detail}") from None
        raise ProblemError(
            f"env-sim failed: {detail}", status_code=502, title="Bad gateway"
        ) from None
    except httpx.TransportError as error:
        raise UnavailableError(f"env-sim is unreachable at {url}: {error!r}") from None

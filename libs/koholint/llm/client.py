"""Client for the language models behind an llm-d gateway (or anything speaking its contract).

Contract: OpenAI chat completions at ``{base}/{route}/v1/chat/completions`` for the routes
``vision``, ``dialog``, ``puzzle`` and ``state``, one model name per route; structured output
through ``response_format: {type: json_schema}`` built from a pydantic model; a ``seed`` per
request.

What happens to a call, in order:

1. The route's circuit breaker must be closed (or half-open for one trial), else
   ``CircuitOpenError`` at once.
2. Timeouts, transport errors, 429 and 5xx are retried with exponential backoff and full
   jitter (``Retry-After`` honoured, capped); when retries run out: ``LlmUnavailableError``
   and a failure on the breaker. Other 4xx are not retried.
3. The answer is parsed as JSON and validated against the model, then by the caller's
   ``check`` (e.g. "that push is not legal here"). On failure the model is asked once more
   with the validation error appended (the repair round); a second failure is
   ``LlmRejectedError``. Nothing unvalidated ever leaves this module.

Every call is recorded (``CallLog``) and exportable as chat-format JSONL for fine-tuning.
"""

from __future__ import annotations

import json
import random
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Generic, Literal, TypeVar

import httpx
from pydantic import BaseModel, ValidationError

from koholint.web.telemetry import tracing_event_hooks

ROUTES = ("vision", "dialog", "puzzle", "state")
"""The llm-d gateway's routes, one model behind each; defined here only."""
TEXT_ROUTES = ("dialog", "puzzle", "state")
"""The routes a text-only model can answer."""
MAX_RESPONSE_CHARS = 64 * 1024
MAX_PROMPT_CHARS = 64 * 1024
Outcome = Literal["valid", "repaired", "rejected", "unavailable", "circuit_open"]
T = TypeVar("T", bound=BaseModel)


class LlmError(RuntimeError):
    """A call that produced no validated answer; `route` says which route."""

    def __init__(self, route: str, message: str) -> None:
        super().__init__(f"/{route}: {message}")
        self.route = route


class LlmUnavailableError(LlmError):
    """The gateway did not answer usefully (unreachable, timeouts, 429/5xx after retries, 4xx)."""


class CircuitOpenError(LlmError):
    """The route failed repeatedly; calls are refused until `retry_after_s` has passed."""

    def __init__(self, route: str, retry_after_s: float) -> None:
        super().__init__(route, f"circuit open, retry in {retry_after_s:.1f} s")
        self.retry_after_s = retry_after_s


class LlmRejectedError(LlmError):
    """The model's answer failed validation twice (the first answer and the repair)."""

    def __init__(self, route: str, errors: list[str]) -> None:
        super().__init__(route, f"answer rejected after one repair: {errors[-1]}")
        self.errors = errors


@dataclass(frozen=True)
class RouteSettings:
    model: str
    timeout_s: float = 30.0
    max_tokens: int = 128
    temperature: float = 0.0


@dataclass(frozen=True)
class RetryPolicy:
    attempts: int = 4
    base_s: float = 0.25
    max_s: float = 4.0

    def delay(self, attempt: int, rng: random.Random, retry_after: float | None = None) -> float:
        """Full jitter: uniform in [0, min(max, base * 2^attempt)]; Retry-After wins, capped."""
        if retry_after is not None:
            return min(max(retry_after, 0.0), self.max_s)
        return rng.uniform(0.0, min(self.max_s, self.base_s * 2**attempt))


class CircuitBreaker:
    """Closed -> open after `threshold` consecutive failures; half-open after `reset_s`
    lets one trial call through; its success closes the circuit, its failure reopens it."""

    def __init__(
        self, threshold: int = 5, reset_s: float = 30.0, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.threshold, self.reset_s, self._clock = threshold, reset_s, clock
        self.failures = 0
        self.opened_at: float | None = None
        self._trial = False
        self._lock = threading.Lock()

    @property
    def state(self) -> Literal["closed", "open", "half_open"]:
        if self.opened_at is None:
            return "closed"
        return "half_open" if self._clock() - self.opened_at >= self.reset_s else "open"

    def allow(self) -> float | None:
        """None if a call may go ahead, else seconds until it may."""
        with self._lock:
            state = self.state
            if state == "closed":
                return None
            if state == "half_open" and not self._trial:
                self._trial = True
                return None
            assert self.opened_at is not None
            return max(self.reset_s - (self._clock() - self.opened_at), 0.0)

    def success(self) -> None:
        with self._lock:
            self.failures, self.opened_at, self._trial = 0, None, False

    def failure(self) -> None:
        with self._lock:
            self.failures += 1
            if self._trial or self.failures >= self.threshold:
                self.opened_at, self._trial = self._clock(), False


@dataclass
class CallRecord:
    route: str
    model: str
    seed: int
    messages: list[dict[str, Any]]
    response: str | None
    outcome: Outcome
    latency_ms: float
    prompt_tokens: int = 0
    completion_tokens: int = 0
    attempts: int = 0
    validation_errors: list[str] = field(default_factory=list)
    time: float = field(default_factory=time.time)

    def to_chat(self) -> dict[str, Any]:
        """One fine-tuning example: the conversation with the final answer, and metadata."""
        metadata = {k: v for k, v in asdict(self).items() if k not in ("messages", "response")}
        return {
            "messages": [*self.messages, {"role": "assistant", "content": self.response or ""}],
            "metadata": metadata,
        }


class CallLog:
    """The most recent `limit` call records, thread-safe."""

    def __init__(self, limit: int = 10_000) -> None:
        self._records: deque[CallRecord] = deque(maxlen=limit)
        self._lock = threading.Lock()

        self.total = 0  # records ever added; `since(total)` returns the newer ones

    def add(self, record: CallRecord) -> None:
        with self._lock:
            self._records.append(record)
            self.total += 1

    def since(self, total: int) -> list[CallRecord]:
        with self._lock:
            newer = self.total - total
            return list(self._records)[-newer:] if newer > 0 else []

    def records(self) -> list[CallRecord]:
        with self._lock:
            return list(self._records)

    def export_jsonl(
        self, path: str | Path, outcomes: Sequence[str] = ("valid", "repaired")
    ) -> int:
        """Write accepted calls as chat-format JSONL; returns how many lines were written."""
        lines = [r.to_chat() for r in self.records() if r.outcome in outcomes]
        Path(path).write_text("".join(json.dumps(line) + "\n" for line in lines))
        return len(lines)


@dataclass(frozen=True)
class Answer(Generic[T]):
    value: T
    record: CallRecord


class _Failure(Exception):
    def __init__(self, message: str, *, retry: bool, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry, self.retry_after = retry, retry_after


def response_format(output: type[BaseModel]) -> dict[str, Any]:
    return {
        "type": "json_schema",
        "json_schema": {
            "name": output.__name__,
            "schema": output.model_json_schema(),
            "strict": True,
        },
    }


def validate_answer(
    content: str, output: type[T], check: Callable[[T], str | None] | None
) -> tuple[T | None, str | None]:
    """(value, None) for a valid answer, (None, error) otherwise."""
    try:
        value = output.model_validate_json(content)
    except ValidationError as error:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'answer'}: {e['msg']}" for e in error.errors()
        )
        return None, f"not valid against the schema: {problems}"[:1000]
    problem = check(value) if check else None
    return (None, problem) if problem else (value, None)


class LlmClient:
    """Structured, validated answers from the gateway's routes. Thread-safe."""

    def __init__(
        self,
        base_url: str,
        routes: Mapping[str, RouteSettings],
        *,
        retry: RetryPolicy | None = None,
        breaker_threshold: int = 5,
        breaker_reset_s: float = 30.0,
        log: CallLog | None = None,
        api_key: str | None = None,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
        rng: random.Random | None = None,
    ) -> None:
        unknown = sorted(set(routes) - set(ROUTES))
        if unknown:
            raise ValueError(f"unknown routes {unknown}; the gateway serves {list(ROUTES)}")
        self.base_url = base_url.rstrip("/")
        self.routes = dict(routes)
        self.retry = retry or RetryPolicy()
        self.breakers = {r: CircuitBreaker(breaker_threshold, breaker_reset_s) for r in routes}
        self.log = log if log is not None else CallLog()
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._http = httpx.Client(
            headers=headers, transport=transport, event_hooks=tracing_event_hooks()
        )
        self._sleep = sleep
        self._rng = rng or random.Random()

    def close(self) -> None:
        self._http.close()

    def ask(
        self,
        route: str,
        messages: list[dict[str, Any]],
        output: type[T],
        *,
        seed: int,
        check: Callable[[T], str | None] | None = None,
    ) -> Answer[T]:
        """A validated answer from `route`, or one of the LlmError subclasses."""
        if route not in self.routes:
            raise ValueError(f"route {route!r} is not configured; configured: {list(self.routes)}")
        if sum(len(str(m.get("content", ""))) for m in messages) > MAX_PROMPT_CHARS:
            raise ValueError(f"prompt is over {MAX_PROMPT_CHARS} characters")
        settings = self.routes[route]
        record = CallRecord(route, settings.model, seed, list(messages), None, "valid", 0.0)
        started = time.perf_counter()
        try:
            return self._ask(route, settings, record, output, check)
        finally:
            record.latency_ms = (time.perf_counter() - started) * 1000
            self.log.add(record)

    def _ask(
        self,
        route: str,
        settings: RouteSettings,
        record: CallRecord,
        output: type[T],
        check: Callable[[T], str | None] | None,
    ) -> Answer[T]:
        breaker = self.breakers[route]
        wait = breaker.allow()
        if wait is not None:
            record.outcome = "circuit_open"
            raise CircuitOpenError(route, wait)
        conversation = list(record.messages)
        for round_ in ("first", "repair"):
            try:
                content = self._complete(route, settings, conversation, output, record)
            except LlmUnavailableError:
                record.outcome = "unavailable"
                raise
            breaker.success()
            record.response = content
            value, error = validate_answer(content, output, check)
            if value is not None:
                record.outcome = "valid" if round_ == "first" else "repaired"
                record.messages = conversation
                return Answer(value, record)
            assert error is not None
            record.validation_errors.append(error)
            conversation = [
                *conversation,
                {"role": "assistant", "content": content},
                {
                    "role": "user",
                    "content": f"That answer is invalid: {error}. Reply again with only a JSON "
                    "object that matches the schema.",
                },
            ]
        record.outcome = "rejected"
        raise LlmRejectedError(route, record.validation_errors)

    def _complete(
        self,
        route: str,
        settings: RouteSettings,
        messages: list[dict[str, Any]],
        output: type[BaseModel],
        record: CallRecord,
    ) -> str:
        body = {
            "model": settings.model,
            "messages": messages,
            "seed": record.seed,
            "temperature": settings.temperature,
            "max_tokens": settings.max_tokens,
            "response_format": response_format(output),
        }
        url = f"{self.base_url}/{route}/v1/chat/completions"
        last = ""
        for attempt in range(self.retry.attempts):
            record.attempts += 1
            try:
                return self._post(url, body, settings.timeout_s, record)
            except _Failure as failure:
                last = str(failure)
                if not failure.retry:
                    self.breakers[route].success()  # it answered: the route is up
                    raise LlmUnavailableError(route, last) from None
                if attempt + 1 < self.retry.attempts:
                    self._sleep(self.retry.delay(attempt, self._rng, failure.retry_after))
        self.breakers[route].failure()
        raise LlmUnavailableError(route, f"gave up after {self.retry.attempts} attempts: {last}")

    def _post(self, url: str, body: dict[str, Any], timeout_s: float, record: CallRecord) -> str:
        try:
            response = self._http.post(url, json=body, timeout=timeout_s)
        except httpx.TimeoutException:
            raise _Failure(f"no answer within {timeout_s} s", retry=True) from None
        except httpx.TransportError as error:
            raise _Failure(f"transport error: {error!r}", retry=True) from None
        status = response.status_code
        if status == 429 or status >= 500:
            raise _Failure(f"HTTP {status}", retry=True, retry_after=_retry_after(response.headers))
        if status >= 400:
            raise _Failure(f"HTTP {status}: {response.text[:300]}", retry=False)
        try:
            payload = response.json()
            content = payload["choices"][0]["message"]["content"]
            if not isinstance(content, str):
                raise TypeError("content is not a string")
        except (ValueError, KeyError, IndexError, TypeError) as error:
            raise _Failure(f"malformed completion body: {error!r}", retry=True) from None
        usage = payload.get("usage") or {}
        record.prompt_tokens += int(usage.get("prompt_tokens") or 0)
        record.completion_tokens += int(usage.get("completion_tokens") or 0)
        return content[:MAX_RESPONSE_CHARS]


def _retry_after(headers: httpx.Headers) -> float | None:
    try:
        return float(headers["retry-after"])
    except (KeyError, ValueError):
        return None

"""Client of the evaluator service: start evaluations, wait for them, read score records."""

from __future__ import annotations

import re
import time
from typing import Any

import httpx

from koholint.clients import ServiceError, check_response
from koholint.schemas.evaluator import (
    SEGMENT_PREFIX_PATTERN,
    EvaluatePrefixes,
    EvaluateRun,
    EvaluationStatus,
    ScoreRecord,
)
from koholint.schemas.fields import path_segment

FINISHED = ("succeeded", "failed")


class EvaluatorError(ServiceError):
    """The evaluator answered with an error; `problem` holds its problem+json body."""

    service = "evaluator"


class EvaluatorClient:
    """One evaluator server. `token`: the evaluator's (KOHOLINT_EVALUATOR_TOKEN), which
    starting an evaluation needs beyond the evaluator's loopback."""

    def __init__(
        self, base_url: str, *, timeout: float = 30.0, token: str = "",
        transport: httpx.BaseTransport | None = None,
    ) -> None:  # fmt: skip
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.http = httpx.Client(
            base_url=base_url, timeout=timeout, transport=transport, headers=headers
        )

    def close(self) -> None:
        self.http.close()

    def evaluate(
        self, *, prefixes: list[str] | None = None, run: str | None = None
    ) -> EvaluationStatus:
        """Start scoring the segment prefixes, or every stored segment of `run`."""
        if (prefixes is None) == (run is None):
            raise ValueError("give either prefixes or run")
        request = EvaluateRun(run=run) if run is not None else EvaluatePrefixes(prefixes=prefixes)
        response = self.http.post(
            "/v1/evaluations", content=request.model_dump_json(),
            headers={"content-type": "application/json"},
        )  # fmt: skip
        return EvaluationStatus.model_validate(self._json(response))

    def status(self, evaluation_id: str) -> EvaluationStatus:
        return EvaluationStatus.model_validate(
            self._json(self.http.get(f"/v1/evaluations/{path_segment(evaluation_id)}"))
        )

    def wait(
        self, evaluation_id: str, *, timeout_s: float = 600.0, poll_s: float = 0.5
    ) -> EvaluationStatus:
        """The job's status once it has finished; TimeoutError after `timeout_s`."""
        deadline = time.monotonic() + timeout_s
        while (status := self.status(evaluation_id)).state not in FINISHED:
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"evaluation {evaluation_id} still {status.state} after {timeout_s} s"
                )
            time.sleep(poll_s)
        return status

    def scores(self, run: str, *, limit: int = 100) -> list[ScoreRecord]:
        """The run's newest score records, oldest first."""
        response = self.http.get("/v1/scores", params={"run": run, "limit": limit})
        return [ScoreRecord.model_validate(item) for item in self._json(response)]

    def segment_score(self, prefix: str) -> ScoreRecord | None:
        """The segment's record under the service's judge configuration, or None."""
        # A prefix is four segments (episodes/<run>/<episode>/<n>), each under the rule.
        if re.fullmatch(SEGMENT_PREFIX_PATTERN, prefix) is None:
            raise ValueError(f"prefix {prefix!r} is not a safe path: episodes/<run>/<episode>/<n>")
        path = "/".join(path_segment(part, "prefix") for part in prefix.split("/"))
        response = self.http.get(f"/v1/segments/{path}/score")
        if response.status_code == 404:
            return None
        return ScoreRecord.model_validate(self._json(response))

    @staticmethod
    def _json(response: httpx.Response) -> Any:
        return check_response(response, EvaluatorError).json()

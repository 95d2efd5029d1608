"""HTTP clients of the Koholint services, and the error they share."""

from __future__ import annotations

from typing import Any, TypeVar

import httpx


class ServiceError(RuntimeError):
    """A service answered with an error; `problem` holds its problem+json body."""

    service = "service"

    def __init__(self, status: int, problem: dict[str, Any]) -> None:
        super().__init__(f"{self.service} {status}: {problem.get('detail', problem)}")
        self.status = status
        self.problem = problem


E = TypeVar("E", bound=ServiceError)


def check_response(response: httpx.Response, error: type[E]) -> httpx.Response:
    """The response if it succeeded; else `error` carrying the problem body."""
    if response.is_error:
        try:
            problem = response.json()
        except ValueError:
            problem = {"detail": response.text}
        raise error(response.status_code, problem)
    return response

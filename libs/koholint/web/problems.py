"""Errors as RFC 9457 problem+json for every service, and a request-body size limit.

Raise ``ProblemError`` (or a subclass) anywhere in a handler; ``add_exception_handlers``
renders it, FastAPI's validation errors (422, naming each field) and anything unexpected
(500, without internals) in the same shape.
"""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

PROBLEM_JSON = "application/problem+json"
logger = logging.getLogger("koholint.web.problems")


class ProblemError(Exception):
    """An error with an HTTP status, rendered as problem+json; `extra` adds members (e.g. a limit)."""

    status_code = 400
    title = "Bad request"

    def __init__(
        self, detail: str, *, status_code: int | None = None, title: str | None = None, **extra: Any
    ) -> None:
        super().__init__(detail)
        self.detail = detail
        if status_code is not None:
            self.status_code = status_code
        if title is not None:
            self.title = title
        self.extra = extra


class NotFoundError(ProblemError):
    status_code = 404
    title = "Not found"


class ConflictError(ProblemError):
    status_code = 409
    title = "Conflict"


class PayloadTooLargeError(ProblemError):
    status_code = 413
    title = "Payload too large"


class UnprocessableError(ProblemError):
    status_code = 422
    title = "Unprocessable content"


class TooManyError(ProblemError):
    status_code = 429
    title = "Too many"


class UnavailableError(ProblemError):
    status_code = 503
    title = "Service unavailable"


class FieldError(BaseModel):
    field: str = Field(description="dotted path of the field in the request, empty for the body")
    message: str


class ProblemDetails(BaseModel):
    """RFC 9457 problem details, the body of every error response of every service."""

    type: str = "about:blank"
    title: str
    status: int
    detail: str
    instance: str = Field(description="the request path")
    errors: list[FieldError] | None = Field(None, description="per-field errors (422)")
    limit_bytes: int | None = Field(None, description="the size limit that was exceeded (413)")

    model_config = {"extra": "allow"}


STATUS_DESCRIPTIONS = {
    400: "Bad request",
    401: "Missing or wrong token",
    404: "Not found",
    405: "Method not allowed",
    409: "Conflict with the current state",
    413: "Request body over the size limit",
    422: "Invalid request: `errors` names each field",
    429: "Too many: a limit on concurrent resources was reached",
    500: "Internal error",
    503: "A dependency is unavailable",
}


def problem_responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI ``responses`` for these statuses, each a problem+json body."""
    return {
        status: {
            "description": STATUS_DESCRIPTIONS[status],
            "model": ProblemDetails,
            "content": {PROBLEM_JSON: {"schema": {"$ref": "#/components/schemas/ProblemDetails"}}},
        }
        for status in statuses
    }


def problem_response(
    status: int, title: str, detail: str, instance: str, **extra: Any
) -> JSONResponse:
    body = {
        "type": "about:blank",
        "title": title,
        "status": status,
        "detail": detail,
        "instance": instance,
        **extra,
    }
    return JSONResponse(body, status_code=status, media_type=PROBLEM_JSON)


def add_exception_handlers(app: FastAPI) -> None:
    @app.exception_handler(ProblemError)
    async def handle_problem(request: Request, error: ProblemError) -> JSONResponse:
        return problem_response(
            error.status_code, error.title, error.detail, request.url.path, **error.extra
        )

    @app.exception_handler(RequestValidationError)
    async def handle_validation(request: Request, error: RequestValidationError) -> JSONResponse:
        errors = [
            {
                "field": ".".join(str(part) for part in item.get("loc", ()) if part != "body"),
                "message": item.get("msg", ""),
            }
            for item in error.errors()
        ]
        fields = ", ".join(item["field"] or "body" for item in errors)
        return problem_response(
            422, "Invalid request", f"invalid fields: {fields}", request.url.path, errors=errors
        )

    @app.exception_handler(StarletteHTTPException)
    async def handle_http(request: Request, error: StarletteHTTPException) -> JSONResponse:
        return problem_response(
            error.status_code, str(error.detail), str(error.detail), request.url.path
        )

    @app.exception_handler(Exception)
    async def handle_unexpected(request: Request, error: Exception) -> JSONResponse:
        logger.exception("unhandled error on %s %s", request.method, request.url.path)
        return problem_response(
            500, "Internal error", "the server failed; see its logs", request.url.path
        )


class BodySizeLimitMiddleware:
    """Refuse request bodies over `max_bytes` with 413 problem+json, before a handler reads them."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers", []))
        declared = headers.get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_bytes:
            await self._refuse(scope, receive, send)
            return
        received = 0

        async def counting_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    raise PayloadTooLargeError(
                        f"request body over {self.max_bytes} bytes", limit_bytes=self.max_bytes
                    )
            return message

        await self.app(scope, counting_receive, send)

    async def _refuse(self, scope: Scope, receive: Receive, send: Send) -> None:
        response = problem_response(
            413, "Payload too large", f"request body over {self.max_bytes} bytes", scope.get("path", ""),
            limit_bytes=self.max_bytes,
        )  # fmt: skip
        await response(scope, receive, send)

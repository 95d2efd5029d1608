"""Errors as RFC 9457 problem+json for every service, and a request-body size limit.

Raise ``ProblemError`` (or a subclass) anywhere in a handler; ``add_exception_handlers``
renders it, FastAPI's validation errors (422, naming each field) and anything unexpected
(500, without internals) in the same shape.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field
from starlette.applications import Starlette
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match
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
    400: "Bad request: the request cannot be honoured as sent",
    401: "Missing or wrong token",
    403: "Forbidden: the operator has turned this off",
    404: "Not found",
    405: "Method not allowed: the `Allow` header lists the methods of this path",
    409: "Conflict with the current state",
    413: "Request body over the size limit",
    422: "Invalid request: `errors` names each field",
    429: "Too many: a limit on concurrent resources was reached",
    500: "Internal error",
    502: "A service behind this one answered with an error",
    503: "A dependency is unavailable",
}
PROBLEM_SCHEMA_REF = "#/components/schemas/ProblemDetails"


def problem_responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI ``responses`` for these statuses of one route, each a problem+json body.

    This is the one declaration of error responses: routes name their own statuses with it,
    and ``document_problems`` adds those every route shares (422, 413, 500) to the spec.
    """
    return {status: _problem_response_doc(status) for status in statuses}


def _problem_response_doc(status: int) -> dict[str, Any]:
    document: dict[str, Any] = {
        "description": STATUS_DESCRIPTIONS.get(status, "Error"),
        "content": {PROBLEM_JSON: {"schema": {"$ref": PROBLEM_SCHEMA_REF}}},
    }
    if status == 405:
        document["headers"] = {"Allow": {"schema": {"type": "string"}}}
    return document


def document_problems(openapi: dict[str, Any]) -> dict[str, Any]:
    """Make a generated spec say what the servers answer on errors.

    Every error response becomes problem+json only (FastAPI documents its 422 as
    ``application/json`` HTTPValidationError, which no route sends); every operation gets
    500, operations with parameters or a body 422, operations with a body 413.
    """
    schemas = openapi.setdefault("components", {}).setdefault("schemas", {})
    for name in ("HTTPValidationError", "ValidationError"):
        schemas.pop(name, None)
    definition = ProblemDetails.model_json_schema(ref_template="#/components/schemas/{model}")
    schemas.update(definition.pop("$defs", {}))
    schemas["ProblemDetails"] = definition
    for path_item in openapi.get("paths", {}).values():
        for operation in path_item.values():
            if isinstance(operation, dict) and "responses" in operation:
                _document_operation(operation)
    return openapi


def _document_operation(operation: dict[str, Any]) -> None:
    responses = operation["responses"]
    shared = [500]
    if operation.get("parameters") or "requestBody" in operation:
        shared.append(422)
    if "requestBody" in operation:
        shared += [400, 413]  # 400: a body that is not text in its declared type (bad UTF-8)
    for status in shared:
        responses.setdefault(str(status), {})
    for status, response in responses.items():
        if status.isdigit() and int(status) >= 400:
            description = response.get("description")
            response.update(_problem_response_doc(int(status)))
            if description and description != "Validation Error":
                response["description"] = description


def problem_response(
    status: int,
    title: str,
    detail: str,
    instance: str,
    headers: Mapping[str, str] | None = None,
    **extra: Any,
) -> JSONResponse:
    body = {
        "type": "about:blank",
        "title": title,
        "status": status,
        "detail": detail,
        "instance": instance,
        **extra,
    }
    return JSONResponse(body, status_code=status, media_type=PROBLEM_JSON, headers=headers)


HTTP_METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")


def allowed_methods(app: Starlette, scope: Scope) -> list[str]:
    """The methods some route answers at this path (Starlette names only the first route's)."""
    return [
        method
        for method in HTTP_METHODS
        if any(route.matches({**scope, "method": method})[0] == Match.FULL for route in app.routes)
    ]


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
        headers = dict(error.headers or {})
        if error.status_code == 405:
            headers["Allow"] = ", ".join(allowed_methods(request.app, request.scope))
        return problem_response(
            error.status_code, str(error.detail), str(error.detail), request.url.path, headers
        )

    @app.exception_handler(Exception)
    async def handle_unexpected(request: Request, error: Exception) -> JSONResponse:
        logger.exception("unhandled error on %s %s", request.method, request.url.path)
        return problem_response(
            500, "Internal error", "the server failed; see its logs", request.url.path
        )


class BodySizeLimitMiddleware:
    """Refuse request bodies over `max_bytes` with 413 problem+json, before a handler reads them.

    A declared Content-Length over the limit is refused at once; a chunked body is counted as
    it arrives, and when it passes the limit the 413 is sent from here and the app is told
    the client left, so a handler (or FastAPI's body parser, which would answer 400) never
    sees a partial body.
    """

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
            await self._refuse(scope, send)
            return
        await _LimitedRequest(self, scope, receive, send).run()

    async def _refuse(self, scope: Scope, send: Send) -> None:
        response = problem_response(
            413, "Payload too large", f"request body over {self.max_bytes} bytes", scope.get("path", ""),
            limit_bytes=self.max_bytes,
        )  # fmt: skip
        await response(scope, _no_body, send)


async def _no_body() -> Message:
    return {"type": "http.disconnect"}


class _LimitedRequest:
    """One request through the limit: counts the body, answers 413 once it is over."""

    def __init__(
        self, limit: BodySizeLimitMiddleware, scope: Scope, receive: Receive, send: Send
    ) -> None:
        self.limit, self.scope, self.receive, self.send = limit, scope, receive, send
        self.received = 0
        self.refused = False
        self.started = False

    async def run(self) -> None:
        try:
            await self.limit.app(self.scope, self.counting_receive, self.guarded_send)
        except Exception:
            if not self.refused:  # after a 413 the app's complaint about the cut body is moot
                raise

    async def counting_receive(self) -> Message:
        if self.refused:
            return {"type": "http.disconnect"}
        message = await self.receive()
        if message["type"] == "http.request":
            self.received += len(message.get("body", b""))
            if self.received > self.limit.max_bytes:
                self.refused = True
                if not self.started:
                    await self.limit._refuse(self.scope, self.send)
                return {"type": "http.disconnect"}
        return message

    async def guarded_send(self, message: Message) -> None:
        if self.refused:
            return  # the 413 went out; whatever the app answers to the cut body is dropped
        if message["type"] == "http.response.start":
            self.started = True
        await self.send(message)

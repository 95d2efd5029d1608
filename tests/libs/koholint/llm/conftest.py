"""A scripted OpenAI-compatible server: each request gets the next scripted reply."""

from __future__ import annotations

import asyncio
import json
import threading
from collections import deque
from dataclasses import dataclass, field
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route


@dataclass
class Reply:
    """status 200 with `content` as the message, or another status; `delay` seconds first;
    `raw` replaces the whole body (malformed completions)."""

    content: str = "{}"
    status: int = 200
    delay: float = 0.0
    raw: str | None = None
    headers: dict[str, str] = field(default_factory=dict)


def completion(content: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-test", "object": "chat.completion", "created": 0, "model": "scripted",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                     "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 11, "completion_tokens": 5, "total_tokens": 16},
    }  # fmt: skip


class ScriptedLlm:
    def __init__(self) -> None:
        self.replies: deque[Reply] = deque()
        self.default = Reply(status=500)
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self._lock = threading.Lock()
        self.app = Starlette(
            routes=[Route("/{route}/v1/chat/completions", self.handle, methods=["POST"])]
        )

    def script(self, *replies: Reply) -> None:
        with self._lock:
            self.replies.extend(replies)

    async def handle(self, request: Request) -> Response:
        body = await request.json()
        with self._lock:
            self.requests.append((request.path_params["route"], body))
            reply = self.replies.popleft() if self.replies else self.default
        if reply.delay:
            await asyncio.sleep(reply.delay)
        if reply.raw is not None:
            return Response(reply.raw, status_code=reply.status, media_type="application/json")
        if reply.status != 200:
            return JSONResponse(
                {"error": "scripted"}, status_code=reply.status, headers=reply.headers
            )
        return JSONResponse(completion(reply.content))


@pytest.fixture
def scripted_llm(serve) -> ScriptedLlm:  # type: ignore[no-untyped-def]
    llm = ScriptedLlm()
    llm.url = serve(llm.app)  # type: ignore[attr-defined]
    return llm


def answer(**fields: Any) -> Reply:
    return Reply(content=json.dumps(fields))

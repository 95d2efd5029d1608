"""Long-lived streaming responses (SSE, multipart frames, proxied streams) that a slow or gone
client can never block: a bounded number of open streams, every chunk sent under a timeout,
the response ended as soon as either side ends, and a client dropped for being slow cut off
at once (its socket closed, not left to drain a buffer it never reads)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Coroutine
from contextvars import ContextVar
from typing import Any, Literal

from starlette.types import Receive, Send

from koholint.web.problems import TooManyError

Sent = Literal["sent", "slow", "gone"]
NO_BUFFERING = [(b"cache-control", b"no-store"), (b"x-accel-buffering", b"no")]
ABORT_CONNECTION: ContextVar[Callable[[], None] | None] = ContextVar(
    "koholint_abort_connection", default=None
)
"""Closes the current request's connection at once (set per request by the service scaffold
from the server's transport; None where the server offers none, as in-process test clients)."""


def bind_connection(send: Send) -> None:
    """Remember how to cut the current request's connection: uvicorn's `send` is a method of
    the request's cycle, which holds the transport (abort drops what is still buffered)."""
    transport = getattr(getattr(send, "__self__", None), "transport", None)
    abort = getattr(transport, "abort", None)
    if callable(abort):
        ABORT_CONNECTION.set(abort)


class StreamSlots:
    """Counts a server's open streams against `max_clients` (the setting named `setting`) and
    the clients dropped for being slow."""

    def __init__(self, max_clients: int, setting: str, send_timeout: float) -> None:
        self.max_clients, self.setting, self.send_timeout = max_clients, setting, send_timeout
        self.open = 0
        self.dropped = 0

    def admit(self) -> None:
        """Take a slot, or 429 naming the setting that bounds them."""
        if self.open >= self.max_clients:
            raise TooManyError(
                f"{self.max_clients} live streams are open ({self.setting}); "
                "close one or retry later",
                limit=self.max_clients,
            )
        self.open += 1

    def release(self) -> None:
        self.open -= 1


async def start_stream(send: Send, content_type: bytes) -> None:
    """The response's head: 200, the content type, and no caching or proxy buffering."""
    headers = [(b"content-type", content_type), *NO_BUFFERING]
    await send({"type": "http.response.start", "status": 200, "headers": headers})


async def send_chunk(send: Send, body: bytes, timeout: float) -> Sent:
    """One chunk of the body: "slow" when the client did not take it within `timeout` seconds
    (the caller drops it; its connection is closed now, since a socket whose peer never reads
    would otherwise stay open while the server waits to flush it), "gone" when its connection
    is closed."""
    message = {"type": "http.response.body", "body": body, "more_body": True}
    try:
        await asyncio.wait_for(send(message), timeout)
    except TimeoutError:
        abort = ABORT_CONNECTION.get()
        if abort is not None:
            abort()
        return "slow"
    except OSError:
        return "gone"
    return "sent"


async def until_disconnect(receive: Receive, sending: Coroutine[Any, Any, None]) -> None:
    """Run `sending` until it ends or the client disconnects, whichever comes first; the other
    is cancelled (a sender's own failure ends the response, it is not re-raised)."""
    sender = asyncio.ensure_future(sending)
    watcher = asyncio.ensure_future(_wait_disconnect(receive))
    try:
        await asyncio.wait({sender, watcher}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in (sender, watcher):
            task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await sender


async def _wait_disconnect(receive: Receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass

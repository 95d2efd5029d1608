"""An env-sim session's live frames through the console: env-sim's own multipart stream, passed
on as it comes, with the console's own bound on viewers and its slow-viewer timeout.

The console opens one upstream stream per viewer (env-sim encodes each frame once for all of
them and paces them); a viewer that does not take a chunk within ``send_timeout`` is dropped
and its upstream stream closed, so env-sim's own pacing never waits on a browser either.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

import httpx
from starlette.types import Receive, Scope, Send

from koholint.web.problems import TooManyError

logger = logging.getLogger("console.live")


class LiveViewers:
    """Counts the live streams open through the console (a bounded fan-out)."""

    def __init__(self, max_clients: int, send_timeout: float) -> None:
        self.max_clients, self.send_timeout = max_clients, send_timeout
        self.open = 0
        self.dropped = 0

    def admit(self) -> None:
        if self.open >= self.max_clients:
            raise TooManyError(
                f"{self.max_clients} live streams are open (KOHOLINT_CONSOLE_MAX_LIVE_CLIENTS); "
                "close one or retry later",
                limit=self.max_clients,
            )
        self.open += 1

    def release(self) -> None:
        self.open -= 1


class LiveProxy:
    """One viewer's response: env-sim's chunks, passed on until either side ends."""

    def __init__(self, upstream: httpx.Response, viewers: LiveViewers) -> None:
        self.upstream, self.viewers = upstream, viewers

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        sender = asyncio.ensure_future(self._forward(send))
        watcher = asyncio.ensure_future(_wait_disconnect(receive))
        try:
            await asyncio.wait({sender, watcher}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (sender, watcher):
                task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await sender
            await self.upstream.aclose()
            self.viewers.release()

    async def _forward(self, send: Send) -> None:
        content_type = self.upstream.headers["content-type"].encode()
        headers = [(b"content-type", content_type), (b"cache-control", b"no-store"),
                   (b"x-accel-buffering", b"no")]  # fmt: skip
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        with contextlib.suppress(httpx.HTTPError):  # env-sim went away: end the viewer's stream
            async for chunk in self.upstream.aiter_raw():
                message = {"type": "http.response.body", "body": chunk, "more_body": True}
                try:
                    await asyncio.wait_for(send(message), self.viewers.send_timeout)
                except TimeoutError:
                    self.viewers.dropped += 1
                    logger.info("a slow live viewer was dropped", extra={"event": "live_drop"})
                    return
                except OSError:
                    return
        await send({"type": "http.response.body", "body": b"", "more_body": False})


async def _wait_disconnect(receive: Receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass

"""An env-sim session's live frames through the console: env-sim's own multipart stream, passed
on as it comes, with the console's own bound on viewers and its slow-viewer timeout.

The console opens one upstream stream per viewer (env-sim encodes each frame once for all of
them and paces them); a viewer that does not take a chunk within ``send_timeout`` is dropped
and its upstream stream closed, so env-sim's own pacing never waits on a browser either.
"""

from __future__ import annotations

import contextlib
import logging

import httpx
from starlette.types import Receive, Scope, Send

from koholint.web.streaming import StreamSlots, send_chunk, start_stream, until_disconnect

logger = logging.getLogger("console.live")


def live_viewers(max_clients: int, send_timeout: float) -> StreamSlots:
    """The live streams open through the console (a bounded fan-out)."""
    return StreamSlots(max_clients, "KOHOLINT_CONSOLE_MAX_LIVE_CLIENTS", send_timeout)


class LiveProxy:
    """One viewer's response: env-sim's chunks, passed on until either side ends."""

    def __init__(self, upstream: httpx.Response, viewers: StreamSlots) -> None:
        self.upstream, self.viewers = upstream, viewers

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await until_disconnect(receive, self._forward(send))
        finally:
            await self.upstream.aclose()
            self.viewers.release()

    async def _forward(self, send: Send) -> None:
        await start_stream(send, self.upstream.headers["content-type"].encode())
        with contextlib.suppress(httpx.HTTPError):  # env-sim went away: end the viewer's stream
            async for chunk in self.upstream.aiter_raw():
                outcome = await send_chunk(send, chunk, self.viewers.send_timeout)
                if outcome == "slow":
                    self.viewers.dropped += 1
                    logger.info("a slow live viewer was dropped", extra={"event": "live_drop"})
                if outcome != "sent":
                    return
        await send({"type": "http.response.body", "body": b"", "more_body": False})

"""Streaming helpers: bounded slots, chunks under a timeout, and the end of either side."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from koholint.web.problems import TooManyError
from koholint.web.streaming import StreamSlots, send_chunk, start_stream, until_disconnect

pytestmark = pytest.mark.anyio


def test_slots_are_bounded_and_the_refusal_names_the_setting():
    slots = StreamSlots(2, "KOHOLINT_X_MAX_LIVE_CLIENTS", 1.0)
    slots.admit()
    slots.admit()
    with pytest.raises(TooManyError, match="KOHOLINT_X_MAX_LIVE_CLIENTS") as refused:
        slots.admit()
    assert refused.value.status_code == 429
    slots.release()
    slots.admit()  # a released slot is free again
    assert slots.open == 2


async def test_a_chunk_is_sent_or_reported_slow_or_gone():
    sent: list[dict[str, Any]] = []

    async def takes(message: dict[str, Any]) -> None:
        sent.append(message)

    async def never_takes(message: dict[str, Any]) -> None:
        await asyncio.Event().wait()

    async def closed(message: dict[str, Any]) -> None:
        raise ConnectionResetError("peer closed")

    assert await send_chunk(takes, b"data", 1.0) == "sent"
    assert sent == [{"type": "http.response.body", "body": b"data", "more_body": True}]
    assert await send_chunk(never_takes, b"data", 0.05) == "slow"
    assert await send_chunk(closed, b"data", 1.0) == "gone"


async def test_the_head_asks_for_no_caching_and_no_proxy_buffering():
    sent: list[dict[str, Any]] = []

    async def takes(message: dict[str, Any]) -> None:
        sent.append(message)

    await start_stream(takes, b"text/event-stream")
    (head,) = sent
    assert head["status"] == 200
    assert dict(head["headers"]) == {
        b"content-type": b"text/event-stream", b"cache-control": b"no-store",
        b"x-accel-buffering": b"no",
    }  # fmt: skip


async def test_a_disconnect_cancels_the_sender():
    cancelled = asyncio.Event()

    async def endless_sender() -> None:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise

    messages = iter([{"type": "http.request"}, {"type": "http.disconnect"}])

    async def receive() -> dict[str, Any]:
        await asyncio.sleep(0.01)
        return next(messages)

    await asyncio.wait_for(until_disconnect(receive, endless_sender()), 5)
    assert cancelled.is_set()


async def test_a_sender_that_ends_or_fails_ends_the_response():
    async def never_disconnects() -> dict[str, Any]:
        await asyncio.Event().wait()
        return {"type": "http.disconnect"}

    async def finishes() -> None:
        return None

    async def fails() -> None:
        raise RuntimeError("upstream broke")

    await asyncio.wait_for(until_disconnect(never_disconnects, finishes()), 5)
    await asyncio.wait_for(until_disconnect(never_disconnects, fails()), 5)


def established(port: int) -> int:
    """TCP connections in state ESTABLISHED whose local port is `port` (from /proc/net)."""
    count = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as lines:
            for line in list(lines)[1:]:
                fields = line.split()
                if int(fields[1].rsplit(":", 1)[1], 16) == port and fields[3] == "01":
                    count += 1
    return count


def test_a_dropped_slow_client_has_its_socket_closed(serve: Any):
    """A client that never reads fills every buffer; once it is dropped its connection must
    go, or `max_clients` would bound streams but not the sockets they hold."""
    import socket
    import time
    from urllib.parse import urlparse

    from prometheus_client import CollectorRegistry

    from koholint.web.scaffold import create_service_app

    outcomes: list[str] = []

    async def flood(scope: Any, receive: Any, send: Any) -> None:
        await start_stream(send, b"application/octet-stream")
        while (outcome := await send_chunk(send, b"x" * 65536, 0.5)) == "sent":
            pass
        outcomes.append(outcome)

    app = create_service_app(
        name="flood", lifespan=_no_lifespan, routers=[], registry=CollectorRegistry(),
        max_body_bytes=1024,
    )  # fmt: skip
    app.mount("/flood", flood)
    port = int(urlparse(serve(app)).port or 0)
    client = socket.socket()
    client.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    client.connect(("127.0.0.1", port))
    client.sendall(b"GET /flood/ HTTP/1.1\r\nHost: test\r\n\r\n")  # and never read
    try:
        deadline = time.monotonic() + 60
        while not outcomes and time.monotonic() < deadline:
            time.sleep(0.1)
        assert outcomes == ["slow"]
        while established(port) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert established(port) == 0, "the dropped client's socket is still open"
    finally:
        client.close()


def _no_lifespan(app: Any) -> Any:
    import contextlib

    @contextlib.asynccontextmanager
    async def lifespan(app: Any) -> Any:
        yield

    return lifespan(app)

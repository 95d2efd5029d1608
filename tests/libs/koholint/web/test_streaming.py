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

"""The bus, against a real Redis server and the in-process twin: the same semantics."""

from __future__ import annotations

import threading
import time
import uuid

import pytest

from koholint.bus import MAX_MESSAGE_BYTES, BusError, MemoryBus, RedisBus, connect_redis, once_key

RECLAIM_MS = 100


@pytest.fixture(scope="module")
def redis_client():
    import redis

    client = redis.Redis(host="127.0.0.1", port=6379, socket_connect_timeout=2)
    try:
        client.ping()
    except redis.ConnectionError:
        pytest.fail(
            "no Redis on 127.0.0.1:6379: start one (redis-server --daemonize yes); .ci/run does"
        )
    yield client
    client.close()


@pytest.fixture(params=["redis", "memory"])
def bus(request):
    if request.param == "memory":
        return MemoryBus(reclaim_after_ms=RECLAIM_MS, max_deliveries=3)
    return RedisBus(
        request.getfixturevalue("redis_client"), reclaim_after_ms=RECLAIM_MS, max_deliveries=3
    )


@pytest.fixture
def stream(request, redis_client):
    name = f"test.{uuid.uuid4().hex}"
    yield name
    redis_client.delete(name, name + ".dead")


def segment(index: int) -> dict:
    return {"schema_version": 1, "keys": [f"episodes/run/ep/{index}/manifest.json"]}


def test_publish_then_consume_then_ack(bus, stream):
    bus.ensure_group(stream, "evaluator")
    ids = [bus.publish(stream, segment(i)) for i in range(3)]
    messages = bus.consume(stream, "evaluator", "judge-1", count=10)
    assert [m.id for m in messages] == ids
    assert messages[0].payload == segment(0)
    assert all(m.deliveries == 1 for m in messages)
    assert bus.ack(stream, "evaluator", ids) == 3
    time.sleep(RECLAIM_MS * 2 / 1000)
    assert bus.consume(stream, "evaluator", "judge-2") == []  # acked: nothing comes back


def test_groups_each_get_every_message(bus, stream):
    bus.ensure_group(stream, "a")
    bus.ensure_group(stream, "b")
    bus.publish(stream, segment(0))
    assert len(bus.consume(stream, "a", "x")) == 1
    assert len(bus.consume(stream, "b", "y")) == 1


def test_unacked_message_is_reclaimed_by_another_consumer(bus, stream):
    bus.ensure_group(stream, "g")
    message_id = bus.publish(stream, segment(0))
    assert [m.id for m in bus.consume(stream, "g", "crashes")] == [message_id]
    assert bus.consume(stream, "g", "other") == []  # not idle long enough yet
    time.sleep(RECLAIM_MS * 2 / 1000)
    reclaimed = bus.consume(stream, "g", "other")
    assert [m.id for m in reclaimed] == [message_id]
    assert reclaimed[0].deliveries == 2


def test_dead_letter_after_max_deliveries(bus, stream):
    bus.ensure_group(stream, "g")
    message_id = bus.publish(stream, segment(7))
    seen = []
    for _ in range(6):
        seen += [m.deliveries for m in bus.consume(stream, "g", "flaky")]
        time.sleep(RECLAIM_MS * 1.5 / 1000)
    assert seen == [1, 2, 3]
    dead = bus.dead_letters(stream)
    assert len(dead) == 1
    assert dead[0].payload["original_id"] == message_id
    assert dead[0].payload["payload"] == segment(7)
    assert "4 times" in dead[0].payload["reason"]
    assert bus.consume(stream, "g", "flaky") == []


def test_blocking_consume_wakes_on_publish(bus, stream):
    bus.ensure_group(stream, "g")
    threading.Timer(0.1, lambda: bus.publish(stream, segment(1))).start()
    started = time.monotonic()
    messages = bus.consume(stream, "g", "c", block_ms=2000)
    assert len(messages) == 1
    assert time.monotonic() - started < 1.5


def test_messages_need_a_version_and_stay_small(bus, stream):
    with pytest.raises(BusError, match="schema_version"):
        bus.publish(stream, {"keys": []})
    with pytest.raises(BusError, match="object store"):
        bus.publish(stream, {"schema_version": 1, "blob": "x" * MAX_MESSAGE_BYTES})


def test_a_consumer_killed_mid_batch_loses_nothing(bus, stream):
    """A consumer takes a batch, acks part of it and dies; another finishes the rest."""
    bus.ensure_group(stream, "evaluator")
    published = {bus.publish(stream, segment(i)) for i in range(6)}
    batch = bus.consume(stream, "evaluator", "dies", count=6)
    processed = {message.id for message in batch[:2]}
    bus.ack(stream, "evaluator", sorted(processed))  # then the process is killed: no more acks
    time.sleep(RECLAIM_MS * 2 / 1000)
    rest = bus.consume(stream, "evaluator", "survivor", count=10)
    bus.ack(stream, "evaluator", [message.id for message in rest])
    processed |= {message.id for message in rest}
    assert processed == published
    assert not {message.id for message in rest} & {
        message.id for message in batch[:2]
    }  # acked ones stay done
    time.sleep(RECLAIM_MS * 2 / 1000)
    assert bus.consume(stream, "evaluator", "survivor") == []


def test_publish_once_publishes_a_key_once(bus, stream, redis_client):
    first = bus.publish_once(stream, "episodes/r/e/00000", segment(0))
    assert first is not None
    assert bus.publish_once(stream, "episodes/r/e/00000", segment(0)) is None  # a retry
    assert bus.publish_once(stream, "episodes/r/e/00001", segment(1)) is not None
    bus.ensure_group(stream, "evaluator")
    messages = bus.consume(stream, "evaluator", "judge-1", count=10)
    assert [m.payload for m in messages] == [segment(0), segment(1)]
    assert messages[0].id == first
    with pytest.raises(BusError, match="schema_version"):
        bus.publish_once(stream, "episodes/r/e/00002", {"keys": []})
    assert bus.publish_once(stream, "episodes/r/e/00002", segment(2)) is not None  # not marked
    redis_client.delete(*(once_key(stream, f"episodes/r/e/{i:05d}") for i in range(3)))


def test_a_client_gives_up_on_a_stalled_redis_within_its_timeout(tmp_path):
    import redis
    from tests.redis_server import private_redis

    with private_redis(tmp_path) as server:
        client = connect_redis(server.url, timeout_s=0.3)
        connect_redis(server.url).execute_command("CLIENT", "PAUSE", "2000", "WRITE")
        started = time.monotonic()
        with pytest.raises(redis.TimeoutError):
            RedisBus(client).publish(f"test.{uuid.uuid4().hex}", segment(0))
        assert time.monotonic() - started < 1.5

"""The object store: a local directory, and S3 against a real S3-speaking server over HTTP."""

from __future__ import annotations

import socket
import threading
from pathlib import Path

import pytest

from koholint.store import (
    ChecksumMismatchError,
    LocalStore,
    ObjectNotFoundError,
    S3Store,
    StoreError,
    open_store,
)

ACCESS, SECRET, BUCKET = "testing-access", "testing-secret", "koholint"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def s3_store(s3_endpoint) -> S3Store:
    store = S3Store.connect(
        s3_endpoint, ACCESS, SECRET, BUCKET, secure=False, prefix="test", region="us-east-1"
    )
    if not store.client.bucket_exists(BUCKET):
        store.client.make_bucket(BUCKET)
    for key in store.list():
        store.delete(key)
    return store


@pytest.fixture(params=["local", "s3"])
def store(request, tmp_path: Path):
    if request.param == "local":
        return LocalStore(tmp_path / "objects")
    return request.getfixturevalue("s3_store")


def test_put_get_round_trip_with_checksum(store):
    info = store.put("episodes/run-1/ep-0/seg-0/ram.jsonl", b'{"x": 1}\n')
    assert info.size == 9
    assert len(info.sha256) == 64
    assert store.get("episodes/run-1/ep-0/seg-0/ram.jsonl") == b'{"x": 1}\n'
    assert store.exists("episodes/run-1/ep-0/seg-0/ram.jsonl")


def test_list_by_prefix(store):
    for key in ("states/a.state", "states/b.state", "scores/x.jsonl"):
        store.put(key, b"data")
    assert store.list("states/") == ["states/a.state", "states/b.state"]
    assert "scores/x.jsonl" in store.list()


def test_missing_key(store):
    with pytest.raises(ObjectNotFoundError, match="no object 'nope/missing'"):
        store.get("nope/missing")
    assert not store.exists("nope/missing")


def test_delete(store):
    store.put("tmp/x", b"1")
    store.delete("tmp/x")
    assert not store.exists("tmp/x")


@pytest.mark.parametrize("key", ["../escape", "/absolute", "a/../../b", "", "trailing/", "sp ace"])
def test_bad_keys_are_refused(store, key):
    with pytest.raises(StoreError, match="invalid object key"):
        store.put(key, b"x")


def test_local_checksum_mismatch_is_detected(tmp_path: Path):
    store = LocalStore(tmp_path)
    store.put("k", b"original")
    (tmp_path / "k").write_bytes(b"tampered")
    with pytest.raises(ChecksumMismatchError):
        store.get("k")


def test_s3_checksum_mismatch_is_detected(s3_store):
    import io

    s3_store.client.put_object(
        BUCKET, "test/raw", io.BytesIO(b"x"), 1, metadata={"sha256": "0" * 64}
    )
    with pytest.raises(ChecksumMismatchError):
        s3_store.get("raw")


def test_check_reports_a_missing_bucket(s3_endpoint):
    store = S3Store.connect(
        s3_endpoint, ACCESS, SECRET, "no-such-bucket", secure=False, region="us-east-1"
    )
    with pytest.raises(StoreError, match="does not exist"):
        store.check()


def test_check_reports_an_unreachable_server():
    store = S3Store.connect(
        f"127.0.0.1:{free_port()}", ACCESS, SECRET, BUCKET, secure=False, region="us-east-1"
    )
    store.client._http.connection_pool_kw["retries"] = 0
    with pytest.raises(StoreError, match="unreachable"):
        store.check()


def test_local_store_that_cannot_write_says_so(tmp_path: Path):
    root = tmp_path / "not-a-folder"
    root.write_text("a file where the store's folder should be")
    with pytest.raises(StoreError, match="cannot write"):
        LocalStore(root).put("x", b"1")


def test_open_store_urls(tmp_path: Path, monkeypatch):
    assert isinstance(open_store(str(tmp_path)), LocalStore)
    assert isinstance(open_store(f"file://{tmp_path}"), LocalStore)
    with pytest.raises(StoreError, match="endpoint"):
        open_store("s3://bucket")
    monkeypatch.delenv("KOHOLINT_S3_ACCESS_KEY", raising=False)
    with pytest.raises(StoreError, match="credentials"):
        open_store("s3://bucket?endpoint=localhost:9000")
    with pytest.raises(StoreError, match="use a path"):
        open_store("ftp://x")


def test_local_reads_during_rewrites_never_see_a_mismatch(tmp_path: Path):
    # The data and its .sha256 are two files: a reader between the writer's two steps sees one
    # old and one new (the online loop read a trainer's ledger mid-write that way).
    store = LocalStore(tmp_path)
    versions = [bytes([n]) * 200_000 for n in range(4)]
    store.put("ledger.json", versions[0])
    stop = threading.Event()

    def rewrite() -> None:
        n = 0
        while not stop.is_set():
            n += 1
            store.put("ledger.json", versions[n % len(versions)])

    writer = threading.Thread(target=rewrite)
    writer.start()
    try:
        for _ in range(2000):
            assert store.get("ledger.json") in versions
    finally:
        stop.set()
        writer.join()

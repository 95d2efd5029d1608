"""The object store: a local directory, and S3 against a real S3-speaking server over HTTP."""

from __future__ import annotations

import hashlib
import os
import random
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from koholint.fsck import TEMPORARY_AGE_S, fsck
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
    assert (tmp_path / "k").read_bytes() == b"original"  # a plain file users may read
    with (tmp_path / "k").open("r+b") as file:  # the bytes changed, the attribute kept
        file.write(b"tampered")
    with pytest.raises(ChecksumMismatchError):
        store.get("k")
    (tmp_path / "k").unlink()
    (tmp_path / "k").write_bytes(b"original")  # the bytes alone: no checksum to trust
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
    # The online loop read a trainer's ledger mid-write: a reader sees the old or the new file.
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


def test_sizes_and_modified_times_are_of_the_objects_bytes(store):
    before = time.time() - 5
    store.put("states/a.state", b"12345")
    store.put("states/b.state", b"")
    assert store.sizes("states/") == {"states/a.state": 5, "states/b.state": 0}
    assert set(store.modified("states/")) == {"states/a.state", "states/b.state"}
    assert all(when >= before for when in store.modified("states/").values())


def write_old_layout(root: Path, key: str, data: bytes) -> Path:
    """An object as stores written before the one-file layout hold it."""
    path = root / key
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    path.with_name(path.name + ".sha256").write_text(hashlib.sha256(data).hexdigest())
    return path


def test_the_old_two_file_layout_still_reads_and_moves_to_the_attribute_on_its_next_write(
    tmp_path: Path,
):
    store = LocalStore(tmp_path)
    old = write_old_layout(tmp_path, "runs/x/ledger.json", b'{"checkpoints": []}')
    assert store.get("runs/x/ledger.json") == b'{"checkpoints": []}'
    assert store.list() == ["runs/x/ledger.json"]
    assert store.sizes("runs/") == {"runs/x/ledger.json": 19}
    old.write_bytes(b'{"checkpoints": [1]}')
    with pytest.raises(ChecksumMismatchError):
        store.get("runs/x/ledger.json")
    store.put("runs/x/ledger.json", b"{}")
    assert not old.with_name("ledger.json.sha256").exists()
    assert old.read_bytes() == b"{}"
    assert store.get("runs/x/ledger.json") == b"{}"
    write_old_layout(tmp_path, "states/gone", b"x")
    store.delete("states/gone")
    assert list((tmp_path / "states").iterdir()) == []


def test_a_stale_old_checksum_beside_a_new_object_is_ignored(tmp_path: Path):
    # a crash between moving the new file in and removing the old layout's checksum
    store = LocalStore(tmp_path)
    store.put("k", b"new")
    (tmp_path / "k.sha256").write_text(hashlib.sha256(b"old").hexdigest())
    assert store.get("k") == b"new"
    assert store.sizes("") == {"k": 3}


def test_a_failed_write_leaves_the_old_object_and_no_temporary_file(tmp_path: Path, monkeypatch):
    store = LocalStore(tmp_path)
    store.put("runs/x/ledger.json", b"old")

    def full_disk(source: object, target: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", full_disk)
    with pytest.raises(StoreError, match="cannot write.*No space left"):
        store.put("runs/x/ledger.json", b"new")
    monkeypatch.undo()
    assert store.get("runs/x/ledger.json") == b"old"
    assert sorted(path.name for path in (tmp_path / "runs/x").iterdir()) == ["ledger.json"]


def test_temporary_files_are_not_objects(tmp_path: Path):
    store = LocalStore(tmp_path)
    store.put("a", b"1")
    (tmp_path / "a.123-0badc0de.tmp").write_bytes(b"half an obj")
    assert store.list() == ["a"]
    assert store.sizes("") == {"a": 1}


def test_two_writers_of_one_key_never_mix_their_files(tmp_path: Path):
    store = LocalStore(tmp_path)
    versions = [bytes([n]) * 300_000 for n in range(2)]

    def write(version: bytes) -> None:
        for _ in range(30):
            store.put("shared", version)

    writers = [threading.Thread(target=write, args=(version,)) for version in versions]
    for writer in writers:
        writer.start()
    for writer in writers:
        writer.join()
    assert store.get("shared") in versions
    assert [path.name for path in tmp_path.iterdir()] == ["shared"]


KILLED_KEY = "runs/x/ledger.json"
VERSION_SIZES = (1_000_000, 2_000_000)
WRITER_SERVER = """
import os, sys
from koholint.store import LocalStore

store, key = LocalStore(sys.argv[1]), sys.argv[2]
versions = [bytes([65 + n]) * int(size) for n, size in enumerate(sys.argv[3:])]
for line in sys.stdin:  # a line: fork a writer, say its pid, then how it ended
    pid = os.fork()
    if pid == 0:
        try:
            for count in range(int(line), int(line) + 1_000_000):
                store.put(key, versions[count % len(versions)])
        finally:
            os._exit(1)
    print(pid, flush=True)
    print(os.waitpid(pid, 0)[1], flush=True)
"""


def kill_writers_mid_write(store: LocalStore, kills: int, seed: int) -> None:
    """A writer rewrites one key in a loop and is SIGKILLed at a random moment, `kills` times;
    after each kill the key reads back as one of the versions written.

    The writers are forked by a small Python process (fast to fork, unlike pytest's)."""
    rng = random.Random(seed)
    versions = [bytes([65 + n]) * size for n, size in enumerate(VERSION_SIZES)]
    durations = []
    for version in (versions[0], versions[1], versions[0]):
        started = time.perf_counter()
        store.put(KILLED_KEY, version)
        durations.append(time.perf_counter() - started)
    write_s = sorted(durations)[1]
    server = subprocess.Popen(
        [sys.executable, "-c", WRITER_SERVER, str(store.root), KILLED_KEY, *map(str, VERSION_SIZES)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert server.stdin is not None
    assert server.stdout is not None
    try:
        for kill in range(kills):
            server.stdin.write(f"{kill}\n")
            server.stdin.flush()
            pid = int(server.stdout.readline())
            time.sleep(rng.uniform(0, 1.5 * write_s))  # during the first write, or the next
            os.kill(pid, signal.SIGKILL)
            status = int(server.stdout.readline())
            assert os.WIFSIGNALED(status), f"the writer exited ({status}) before it was killed"
            assert store.get(KILLED_KEY) in versions  # never a ChecksumMismatchError or a gap
    finally:
        server.kill()
        server.wait()


def check_leftovers_are_found_and_removed(store: LocalStore) -> None:
    leftovers = sorted(
        path.relative_to(store.root).as_posix() for path in store.root.rglob("*.tmp")
    )
    assert leftovers, "no kill landed mid-write"
    later = time.time() + TEMPORARY_AGE_S + 1  # younger ones could be writes in progress
    report = fsck(store, now=later)
    assert sorted(finding.name for finding in report.findings) == leftovers
    assert {finding.kind for finding in report.findings} == {"temp"}
    assert fsck(store, repair=True, now=later).remaining == []
    assert list(store.root.rglob("*.tmp")) == []
    assert store.list() == [KILLED_KEY]
    store.get(KILLED_KEY)


def test_a_writer_killed_at_random_moments_leaves_the_old_or_the_new_object(tmp_path: Path):
    store = LocalStore(tmp_path)
    kill_writers_mid_write(store, kills=50, seed=0)
    check_leftovers_are_found_and_removed(store)


@pytest.mark.slow
def test_a_thousand_kills_never_leave_a_checksum_error(tmp_path: Path):
    store = LocalStore(tmp_path)
    kill_writers_mid_write(store, kills=1000, seed=1)
    check_leftovers_are_found_and_removed(store)


def test_without_extended_attributes_the_sidecar_accepts_the_old_and_the_new_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """Where the filesystem has no user attributes the checksum goes first, naming both
    digests, so a kill between the sidecar and the bytes leaves an object that reads."""
    import errno

    def unsupported(*args: object) -> None:
        raise OSError(errno.ENOTSUP, "Operation not supported")

    monkeypatch.setattr(os, "setxattr", unsupported)
    monkeypatch.setattr(os, "getxattr", unsupported)
    store = LocalStore(tmp_path)
    store.put("runs/x/ledger.json", b"old")
    sidecar = tmp_path / "runs/x/ledger.json.sha256"
    assert sidecar.read_text() == hashlib.sha256(b"old").hexdigest()
    replace = os.replace
    calls = []

    def killed_after_the_sidecar(source: object, target: object) -> None:
        calls.append(target)
        if len(calls) == 2:  # the sidecar is in place; the bytes are not
            raise KeyboardInterrupt("killed")
        replace(source, target)

    monkeypatch.setattr(os, "replace", killed_after_the_sidecar)
    with pytest.raises(KeyboardInterrupt):
        store.put("runs/x/ledger.json", b"new")
    monkeypatch.setattr(os, "replace", replace)
    assert store.get("runs/x/ledger.json") == b"old"
    assert sidecar.read_text().split() == [hashlib.sha256(b"new").hexdigest(),
                                           hashlib.sha256(b"old").hexdigest()]  # fmt: skip
    store.put("runs/x/ledger.json", b"new")
    assert store.get("runs/x/ledger.json") == b"new"
    assert sidecar.read_text() == hashlib.sha256(b"new").hexdigest()

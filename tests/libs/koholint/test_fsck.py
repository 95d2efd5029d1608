"""`koholint store fsck`: what failed writes leave behind is found, and --repair removes it."""

from __future__ import annotations

import hashlib
import os
import time
from pathlib import Path

import pytest

from koholint.cli import main
from koholint.fsck import SEGMENT_AGE_S, TEMPORARY_AGE_S, fsck
from koholint.store import LocalStore, ObjectStore, S3Store

ACCESS, SECRET, BUCKET = "testing-access", "testing-secret", "koholint"
ORPHAN, FRESH, COMPLETE = (f"episodes/run-1/ep-{n}/00000" for n in range(3))


def write_segment_files(store: ObjectStore, prefix: str, *, manifest: bool) -> None:
    """A segment as the export writes it: frames and ram.jsonl, the manifest last."""
    store.put(f"{prefix}/frames/000001.png", b"png-1")
    store.put(f"{prefix}/frames/000002.png", b"png-2")
    store.put(f"{prefix}/ram.jsonl", b'{"t": 1}\n')
    if manifest:
        store.put(f"{prefix}/manifest.json", b"{}")


def make_old(root: Path, relative: str, seconds: float) -> None:
    """Set back the modification time of a file, or of every file under a folder."""
    target = root / relative
    when = time.time() - seconds
    for path in [target, *target.rglob("*")] if target.is_dir() else [target]:
        os.utime(path, (when, when))


@pytest.fixture
def segments(tmp_path: Path) -> LocalStore:
    store = LocalStore(tmp_path / "store")
    for prefix in (ORPHAN, FRESH, COMPLETE):
        write_segment_files(store, prefix, manifest=prefix == COMPLETE)
    for prefix in (ORPHAN, COMPLETE):
        make_old(store.root, prefix, SEGMENT_AGE_S + 60)
    return store


def test_an_old_segment_without_a_manifest_is_an_orphan_and_repair_removes_it(
    segments: LocalStore,
):
    report = fsck(segments)
    assert [(finding.kind, finding.name) for finding in report.findings] == [
        ("orphan-segment", ORPHAN)
    ]
    assert "3 files, no manifest.json" in report.findings[0].detail
    assert report.objects == 7  # the orphan's files are not read: they go with it

    repaired = fsck(segments, repair=True)
    assert repaired.removed == repaired.findings
    assert repaired.remaining == []
    assert segments.list(ORPHAN) == []
    assert not (segments.root / ORPHAN).exists()
    assert len(segments.list(FRESH)) == 3  # being written: left alone
    assert len(segments.list(COMPLETE)) == 4
    assert fsck(segments).findings == []


def test_a_segment_whose_manifest_lands_before_the_repair_is_kept(segments: LocalStore):
    from koholint.fsck import remove

    (orphan,) = fsck(segments).findings
    segments.put(f"{ORPHAN}/manifest.json", b"{}")
    assert remove(segments, orphan) is False
    assert len(segments.list(ORPHAN)) == 4


def test_the_command_exits_1_on_findings_and_0_once_repaired(segments: LocalStore, capsys):
    url = str(segments.root)
    assert main(["store", "fsck", "--store", url]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith(f"orphan-segment {ORPHAN}: 3 files, no manifest.json")
    assert out[-1].startswith(f"{url}: 7 objects checked; findings: 1 orphan-segment; removed 0")
    assert out[-1].endswith("1 remain (--repair removes them)")

    assert main(["store", "fsck", "--store", url, "--repair"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].endswith("(removed)")
    assert out[-1].endswith("removed 1")

    assert main(["store", "fsck", "--store", url, "--quick"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        f"{url}: checksums not read (--quick); findings: none; removed 0"
    ]


def test_the_command_refuses_a_store_that_is_not_there(tmp_path: Path, capsys):
    assert main(["store", "fsck", "--store", str(tmp_path / "typo")]) == 2
    assert "no store at" in capsys.readouterr().err


def test_a_corrupt_object_is_kept_unless_asked_and_the_command_says_so(tmp_path: Path, capsys):
    store = LocalStore(tmp_path)
    store.put("runs/x/ledger.json", b"{}")
    store.put("states/a.state", b"fine")
    path = tmp_path / "runs/x/ledger.json"
    path.write_bytes(path.read_bytes().replace(b"{}", b"[]"))

    assert main(["store", "fsck", "--store", str(tmp_path), "--repair"]) == 1
    out = capsys.readouterr().out
    assert "corrupt        runs/x/ledger.json: the bytes do not match their sha256\n" in out
    assert "--delete-corrupt removes them" in out
    assert path.exists()
    assert main(["store", "fsck", "--store", str(tmp_path), "--repair", "--delete-corrupt"]) == 0
    assert store.list() == ["states/a.state"]


def test_failed_writes_and_stale_old_layout_checksums_are_found_and_removed(tmp_path: Path):
    store = LocalStore(tmp_path)
    store.put("runs/x/ledger.json", b"{}")
    store.put("states/a.state", b"new layout")
    old_temporary = tmp_path / "runs/x/ledger.json.41-0badc0de.tmp"
    old_temporary.write_bytes(b"half")
    make_old(tmp_path, "runs/x/ledger.json.41-0badc0de.tmp", TEMPORARY_AGE_S + 5)
    (tmp_path / "runs/x/ledger.json.42-00c0ffee.tmp").write_bytes(b"in progress")
    (tmp_path / "states/a.state.sha256").write_text("0" * 64)  # a crash before its removal
    (tmp_path / "states/gone.sha256").write_text("0" * 64)  # an old delete's leftover
    legacy = tmp_path / "states/legacy.state"
    legacy.write_bytes(b"old layout")
    (tmp_path / "states/legacy.state.sha256").write_text(hashlib.sha256(b"old layout").hexdigest())

    report = fsck(store, repair=True)
    assert sorted((finding.kind, finding.name) for finding in report.findings) == [
        ("sidecar", "states/a.state.sha256"),
        ("sidecar", "states/gone.sha256"),
        ("temp", "runs/x/ledger.json.41-0badc0de.tmp"),
    ]
    assert report.remaining == []
    assert sorted(path.name for path in (tmp_path / "runs/x").iterdir()) == [
        "ledger.json", "ledger.json.42-00c0ffee.tmp"
    ]  # fmt: skip
    assert sorted(path.name for path in (tmp_path / "states").iterdir()) == [
        "a.state", "legacy.state", "legacy.state.sha256"
    ]  # fmt: skip
    assert store.get("states/legacy.state") == b"old layout"


@pytest.fixture
def s3_store(s3_endpoint: str) -> S3Store:
    store = S3Store.connect(
        s3_endpoint, ACCESS, SECRET, BUCKET, secure=False, prefix="fsck", region="us-east-1"
    )
    if not store.client.bucket_exists(BUCKET):
        store.client.make_bucket(BUCKET)
    for key in store.list():
        store.delete(key)
    return store


def test_orphan_segments_in_s3_are_found_through_the_store_and_removed(s3_store: S3Store):
    write_segment_files(s3_store, ORPHAN, manifest=False)
    write_segment_files(s3_store, COMPLETE, manifest=True)
    assert fsck(s3_store).findings == []  # just written: the writer may be alive
    later = time.time() + SEGMENT_AGE_S + 60
    report = fsck(s3_store, now=later)
    assert [(finding.kind, finding.name) for finding in report.findings] == [
        ("orphan-segment", ORPHAN)
    ]
    assert report.objects == 4
    assert fsck(s3_store, repair=True, now=later).remaining == []
    assert s3_store.list("episodes/") == sorted(
        f"{COMPLETE}/{name}"
        for name in ("frames/000001.png", "frames/000002.png", "manifest.json", "ram.jsonl")
    )


def test_store_announce_announces_what_never_reached_the_stream_once(tmp_path: Path, capsys):
    import json

    from tests.redis_server import private_redis

    from koholint.bus import STREAM_SEGMENTS, RedisBus, connect_redis
    from koholint.env.export import announcement

    store = LocalStore(tmp_path / "store")
    for index in range(3):
        store.put(f"episodes/r/e/{index:05d}/manifest.json", b"{}")
    store.put("episodes/r/e/00003/ram.jsonl", b"")  # no manifest: not a segment yet
    with private_redis(tmp_path) as server:
        RedisBus(connect_redis(server.url)).publish_once(
            STREAM_SEGMENTS, "episodes/r/e/00000", announcement("episodes/r/e/00000")
        )
        command = ["store", "announce", "--run", "r", "--store-url", str(tmp_path / "store"),
                   "--redis-url", server.url]  # fmt: skip
        assert main(command) == 0
        assert "3 segments stored, 2 announced now" in capsys.readouterr().out
        assert main(command) == 0
        assert "0 announced now" in capsys.readouterr().out
        entries = connect_redis(server.url).xrange(STREAM_SEGMENTS)
    prefixes = [json.loads(fields[b"payload"])["prefix"] for _, fields in entries]
    assert sorted(prefixes) == [f"episodes/r/e/{index:05d}" for index in range(3)]
    assert main(["store", "announce", "--run", "r"]) == 2  # no Redis named
    assert "--redis-url" in capsys.readouterr().err

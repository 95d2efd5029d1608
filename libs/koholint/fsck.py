"""``koholint store fsck``: find what failed or killed writes left in the object store, and
with ``--repair`` remove it.

What it finds, one line each:

- ``temp``: a temporary file of a write that never finished (a local store; older than a
  minute, so a write in progress is left alone). --repair removes it.
- ``sidecar``: an old-layout ``<key>.sha256`` whose object is gone or now carries its own
  checksum (a crash between the two steps of an old write or delete). --repair removes it.
- ``orphan-segment``: a segment folder ``episodes/<run>/<episode>/<segment>/`` with files but
  no ``manifest.json`` (written last) whose newest file is older than ``--segment-age``: its
  writer died. --repair removes its objects.
- ``corrupt``: an object whose bytes do not match their sha256. --repair keeps it (the bytes
  may be the only copy) unless ``--delete-corrupt`` is given; inside an orphan segment it goes
  with the segment.

Exit status: 0 when the store is clean or every finding was removed, 1 when findings remain,
2 when the store cannot be read.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from koholint.store import (
    LEGACY_CHECKSUM_SUFFIX,
    ChecksumMismatchError,
    LocalStore,
    ObjectNotFoundError,
    ObjectStore,
    StoreError,
    is_temporary,
    open_store,
    read_checksum_attribute,
)

TEMPORARY_AGE_S = 60.0
"""A temporary file this old is a failed write's: a write in progress touches it sooner."""
SEGMENT_AGE_S = 600.0
"""A segment without a manifest whose newest file is this old lost its writer."""
SEGMENT_FOLDER = re.compile(r"^(episodes/[^/]+/[^/]+/\d+)/.+$")
MANIFEST = "manifest.json"


@dataclass(frozen=True)
class Finding:
    kind: str
    """temp, sidecar, orphan-segment or corrupt"""
    name: str
    """an object key, a segment prefix, or a file's path under a local store's root"""
    detail: str
    keys: tuple[str, ...] = ()
    """an orphan segment's objects"""


@dataclass
class FsckReport:
    objects: int = 0
    """objects whose checksum was checked"""
    findings: list[Finding] = field(default_factory=list)
    removed: list[Finding] = field(default_factory=list)

    @property
    def remaining(self) -> list[Finding]:
        return [finding for finding in self.findings if finding not in self.removed]


def fsck(
    store: ObjectStore,
    *,
    repair: bool = False,
    delete_corrupt: bool = False,
    verify: bool = True,
    segment_age: float = SEGMENT_AGE_S,
    temporary_age: float = TEMPORARY_AGE_S,
    now: float | None = None,
) -> FsckReport:
    """Look through the store (with `verify`, read every object) and, with `repair`, remove
    what the module's docstring says --repair removes."""
    now = time.time() if now is None else now
    report = FsckReport()
    if isinstance(store, LocalStore):
        report.findings += local_leftovers(store, now=now, temporary_age=temporary_age)
    orphans = orphan_segments(store, now=now, segment_age=segment_age)
    report.findings += orphans
    if verify:
        swept = {key for orphan in orphans for key in orphan.keys}
        report.findings += corrupt_objects(store, report, skip=swept)
    if repair:
        for finding in report.findings:
            wanted = finding.kind != "corrupt" or delete_corrupt
            if wanted and remove(store, finding):
                report.removed.append(finding)
    return report


def local_leftovers(store: LocalStore, *, now: float, temporary_age: float) -> list[Finding]:
    """Temporary files of failed writes and old-layout checksums that no longer apply."""
    if not store.root.is_dir():
        raise StoreError(f"no store at {store.root}: pass the store's folder as --store")
    findings = []
    for folder, _, names in sorted(os.walk(store.root)):
        for name in sorted(names):
            try:
                finding = _leftover(store.root, Path(folder) / name, now, temporary_age)
            except FileNotFoundError:
                continue  # removed since the walk listed it
            if finding is not None:
                findings.append(finding)
    return findings


def _leftover(root: Path, path: Path, now: float, temporary_age: float) -> Finding | None:
    relative = path.relative_to(root).as_posix()
    if is_temporary(path.name):
        age = now - path.stat().st_mtime
        if age > temporary_age:
            return Finding("temp", relative, f"a failed write ({age:.0f} s old)")
    elif path.name.endswith(LEGACY_CHECKSUM_SUFFIX):
        stale = _stale_sidecar(path.with_name(path.name.removesuffix(LEGACY_CHECKSUM_SUFFIX)))
        if stale:
            return Finding("sidecar", relative, stale)
    return None


def _stale_sidecar(target: Path) -> str:
    """Why an old-layout checksum beside `target` no longer applies ('' while it does)."""
    if not target.is_file():
        return "a checksum sidecar with no object beside it"
    with target.open("rb") as file:
        if read_checksum_attribute(file.fileno()) is not None:
            return "a checksum sidecar beside an object that carries its own"
    return ""


def orphan_segments(store: ObjectStore, *, now: float, segment_age: float) -> list[Finding]:
    """Segment folders with files but no manifest, untouched for `segment_age` seconds."""
    modified = getattr(store, "modified", None)
    # a store that cannot say when a file was written: no segment is known to be abandoned
    times: dict[str, float] = modified("episodes/") if modified is not None else {}
    segments: dict[str, list[str]] = {}
    for key in store.list("episodes/"):
        if match := SEGMENT_FOLDER.match(key):
            segments.setdefault(match.group(1), []).append(key)
    findings = []
    for prefix, keys in sorted(segments.items()):
        if f"{prefix}/{MANIFEST}" in keys or not all(key in times for key in keys):
            continue
        age = now - max(times[key] for key in keys)
        if age > segment_age:
            detail = f"{len(keys)} files, no {MANIFEST} ({age / 60:.0f} min since the last write)"
            findings.append(Finding("orphan-segment", prefix, detail, tuple(keys)))
    return findings


def corrupt_objects(store: ObjectStore, report: FsckReport, *, skip: set[str]) -> list[Finding]:
    """Objects whose bytes do not match their sha256 (every object is read)."""
    findings = []
    for key in store.list():
        if key in skip:
            continue
        try:
            store.get(key)
        except ChecksumMismatchError:
            findings.append(Finding("corrupt", key, "the bytes do not match their sha256"))
        except ObjectNotFoundError:
            continue  # deleted since it was listed
        report.objects += 1
    return findings


def remove(store: ObjectStore, finding: Finding) -> bool:
    """Remove what a finding names; False where it changed since (a manifest landed)."""
    if finding.kind in ("temp", "sidecar") and isinstance(store, LocalStore):
        (store.root / finding.name).unlink(missing_ok=True)
    elif finding.kind == "orphan-segment":
        if store.exists(f"{finding.name}/{MANIFEST}"):
            return False  # its writer was alive after all
        for key in finding.keys:
            store.delete(key)
        if isinstance(store, LocalStore):
            _remove_empty_folders(store.root / finding.name)
    elif finding.kind == "corrupt":
        store.delete(finding.name)
    return True


def _remove_empty_folders(folder: Path) -> None:
    for path in sorted(folder.rglob("*"), key=lambda path: len(path.parts), reverse=True):
        if path.is_dir() and not any(path.iterdir()):
            path.rmdir()
    if folder.is_dir() and not any(folder.iterdir()):
        folder.rmdir()


# -- the command ------------------------------------------------------------------
def cmd_fsck(args: argparse.Namespace) -> int:
    try:
        store = open_store(args.store)
        report = fsck(
            store, repair=args.repair, delete_corrupt=args.delete_corrupt,
            verify=not args.quick, segment_age=args.segment_age,
        )  # fmt: skip
    except (StoreError, OSError) as error:
        print(f"koholint store fsck: {error}", file=sys.stderr)
        return 2
    for finding in report.findings:
        removed = " (removed)" if finding in report.removed else ""
        print(f"{finding.kind:<15}{finding.name}: {finding.detail}{removed}")
    print(_summary(args, report))
    return 1 if report.remaining else 0


def _summary(args: argparse.Namespace, report: FsckReport) -> str:
    counts = Counter(finding.kind for finding in report.findings)
    found = ", ".join(f"{count} {kind}" for kind, count in sorted(counts.items())) or "none"
    objects = "checksums not read (--quick)" if args.quick else f"{report.objects} objects checked"
    line = f"{args.store}: {objects}; findings: {found}; removed {len(report.removed)}"
    if report.remaining:
        line += f"; {len(report.remaining)} remain" + (
            " (corrupt objects are kept: --delete-corrupt removes them)"
            if args.repair
            else " (--repair removes them)"
        )
    return line


def cmd_announce(args: argparse.Namespace) -> int:
    """Announce every stored segment of a run whose notice never reached the stream."""
    from pydantic import ValidationError

    from koholint.bus import RedisBus, connect_redis
    from koholint.env.export import announce_stored
    from koholint.flags import flag_errors, setting_values

    try:
        settings = AnnounceSettings(**setting_values(args))
    except ValidationError as error:
        print(f"koholint store announce: {flag_errors(error)}", file=sys.stderr)
        return 2
    if not (settings.run and settings.redis_url):
        print("koholint store announce: name the run (--run) and the Redis that carries the "
              "stream (--redis-url or KOHOLINT_REDIS_URL)", file=sys.stderr)  # fmt: skip
        return 2
    try:
        bus = RedisBus(connect_redis(settings.redis_url, timeout_s=settings.redis_timeout_s))
        found = announce_stored(open_store(settings.store_url), bus, settings.run)
    except Exception as error:  # the store or Redis unreachable: say which, exit non-zero
        print(f"koholint store announce: {type(error).__name__}: {error}", file=sys.stderr)
        return 2
    print(f"run {settings.run}: {found['stored']} segments stored, {found['announced']} "
          "announced now (the rest were on the stream already)")  # fmt: skip
    return 0


def _announce_settings() -> type:
    from pydantic import Field
    from pydantic_settings import BaseSettings, SettingsConfigDict

    from koholint.settings import RedisSettings, StoreSettings

    class Settings(BaseSettings, StoreSettings, RedisSettings):
        """Where a run's segments are stored and announced."""

        model_config = SettingsConfigDict(
            env_prefix="KOHOLINT_", extra="ignore", use_attribute_docstrings=True
        )
        run: str = Field("", pattern=r"^([A-Za-z0-9][A-Za-z0-9._-]{0,127})?$")
        """the run whose stored segments to announce (episodes/<run>/); required"""

    return Settings


AnnounceSettings = _announce_settings()


def register(commands: argparse._SubParsersAction) -> None:
    from koholint.flags import add_setting_flags
    from koholint.settings import StoreSettings

    store = commands.add_parser("store", help="the object store")
    store_commands = store.add_subparsers(dest="store_command", required=True)
    announce = store_commands.add_parser(
        "announce",
        help="announce a run's stored segments whose notice never reached koholint.segments",
        description="The store is the record, the stream the notice: segments written while "
        "Redis was down, restarted or flushed are announced once (never twice: a segment "
        "already on the stream is left alone).",
    )
    add_setting_flags(announce, AnnounceSettings)
    announce.set_defaults(handler=cmd_announce)
    fsck_command = store_commands.add_parser(
        "fsck",
        help="find (and with --repair remove) what failed writes left in the store",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    fsck_command.add_argument("--store", default=StoreSettings().store_url,
                              help="object store URL: a path, file:// or s3:// (default %(default)s)")  # fmt: skip
    fsck_command.add_argument("--repair", action="store_true",
                              help="remove temporary files, stale checksums and orphan segments")  # fmt: skip
    fsck_command.add_argument("--delete-corrupt", action="store_true",
                              help="with --repair: also delete objects that fail their checksum "
                              "(kept otherwise: the bytes may be the only copy)")  # fmt: skip
    fsck_command.add_argument("--segment-age", type=float, default=SEGMENT_AGE_S, metavar="SECONDS",
                              help="a segment without a manifest is an orphan once its newest file "
                              "is this old (default %(default).0f: a segment being written is not one)")  # fmt: skip
    fsck_command.add_argument("--quick", action="store_true",
                              help="do not read every object to check its sha256")  # fmt: skip
    fsck_command.set_defaults(handler=cmd_fsck)

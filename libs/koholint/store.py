"""The object store: one interface, a local directory (the embedded default) or S3/MinIO.

Every object is stored with the sha256 of its bytes and checked when read, so a
corrupt or tampered object is an error, never silent data.

    store = open_store("file:///var/lib/koholint")         # or a plain path
    store = open_store("s3://koholint?endpoint=localhost:9000&secure=false")  # credentials from
                                                            # KOHOLINT_S3_ACCESS_KEY / _SECRET_KEY
"""

from __future__ import annotations

import errno
import hashlib
import io
import json
import os
import re
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import parse_qs, urlparse

from urllib3.exceptions import HTTPError

MAX_OBJECT_BYTES = 512 * 1024 * 1024
KEY_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._\-/]{0,511}$")
CHECKSUM_METADATA = "sha256"
CHECK_KEY = "koholint-check/probe"  # written and deleted by check()
CHECKSUM_XATTR = "user.koholint.sha256"
"""Where a LocalStore file keeps the sha256 of its bytes: an extended attribute, set on the
file before it is moved into place, so the bytes and their checksum change together."""
TEMPORARY_SUFFIX = ".tmp"
"""Files named `<name>.<pid>-<random>.tmp` are writes in progress, never objects."""
LEGACY_CHECKSUM_SUFFIX = ".sha256"
"""Where extended attributes are not supported (and in stores written before them) the
checksum sits in `<key>.sha256` beside the bytes, one accepted digest a line."""


class StoreError(RuntimeError):
    """The store refused or failed an operation; the message names the key and the cause."""


class ObjectNotFoundError(StoreError, KeyError):
    def __str__(self) -> str:
        return str(self.args[0])


class ChecksumMismatchError(StoreError):
    """The bytes read do not match the sha256 recorded when they were written."""


class InvalidKeyError(StoreError, ValueError):
    """The key is not one this store takes (a caller's mistake, not an outage)."""


@dataclass(frozen=True)
class ObjectInfo:
    key: str
    size: int
    sha256: str


class ObjectStore(Protocol):
    def put(
        self, key: str, data: bytes, content_type: str = "application/octet-stream"
    ) -> ObjectInfo: ...

    def get(self, key: str) -> bytes: ...

    def exists(self, key: str) -> bool: ...

    def list(self, prefix: str = "") -> list[str]: ...

    def sizes(self, prefix: str) -> dict[str, int]:
        """Key -> size in bytes of every object under `prefix`, without reading one."""
        ...

    def delete(self, key: str) -> None: ...

    def check(self) -> None:
        """Raise StoreError unless the store is reachable and writable."""
        ...


def validate_key(key: str) -> str:
    if not KEY_PATTERN.match(key) or ".." in key.split("/") or key.endswith("/"):
        raise InvalidKeyError(
            f"invalid object key {key!r}: use letters, digits, '.', '_', '-' and '/' (no '..'), "
            "at most 512 characters"
        )
    return key


def _check_size(key: str, data: bytes) -> None:
    if len(data) > MAX_OBJECT_BYTES:
        raise StoreError(
            f"{key}: {len(data)} bytes exceed the {MAX_OBJECT_BYTES}-byte object limit"
        )


def _checksum_file(path: Path) -> Path:
    """The old layout's sidecar: `<key>.sha256` beside the object's bare bytes."""
    return path.with_name(path.name + LEGACY_CHECKSUM_SUFFIX)


def read_checksum_attribute(descriptor: int) -> str | None:
    """The sha256 an open LocalStore file carries; None for one without (a sidecar's)."""
    try:
        return os.getxattr(descriptor, CHECKSUM_XATTR).decode("ascii", errors="replace")
    except OSError as error:
        if error.errno in (errno.ENODATA, errno.ENOTSUP):
            return None
        raise


def is_temporary(name: str) -> bool:
    """Whether a file name is a write in progress (or a failed write's leftover), not an object."""
    return name.endswith(TEMPORARY_SUFFIX)


def _write_file_atomically(path: Path, data: bytes, digest: str) -> bool:
    """Write a unique temporary file beside `path`, its checksum attribute set, and move it
    over `path`; False where the filesystem has no extended attributes (nothing written).

    Readers and a process killed at any instant see the old file or the new one, each with
    its own checksum; the temporary name (pid and random) keeps two writers of one key apart,
    and a failed write removes its temporary file. No fsync: a kill leaves the written pages
    to the kernel, and an fsync per object costs a small write ~14 times over.
    """
    temporary = _temporary_beside(path)
    try:
        with temporary.open("xb") as file:
            try:
                os.setxattr(file.fileno(), CHECKSUM_XATTR, digest.encode("ascii"))
            except OSError as error:
                if error.errno != errno.ENOTSUP:
                    raise
                return False
            file.write(data)
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)
    return True


def _temporary_beside(path: Path) -> Path:
    return path.with_name(f"{path.name}.{os.getpid()}-{secrets.token_hex(4)}{TEMPORARY_SUFFIX}")


def _replace_with(path: Path, text: bytes) -> None:
    """`path` replaced whole by `text` (no attribute: the sidecar layout's files)."""
    temporary = _temporary_beside(path)
    try:
        temporary.write_bytes(text)
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)


class LocalStore:
    """Objects as plain files under a root folder, each carrying the sha256 of its bytes in
    an extended attribute (see docs/operations.md, "The store").

    A write replaces the whole file at once (``os.replace``), its attribute set before, so the
    bytes and their checksum change together: a reader, or a writer killed mid-write, never
    sees a mismatch. Where the filesystem has no extended attributes (and in stores written
    before them) the checksum sits in ``<key>.sha256``, written before the bytes and naming
    both the old and the new digest until the new bytes are in place.
    """

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)

    def _path(self, key: str) -> Path:
        return self.root / validate_key(key)

    def put(
        self, key: str, data: bytes, content_type: str = "application/octet-stream"
    ) -> ObjectInfo:
        _check_size(key, data)
        path = self._path(key)
        digest = hashlib.sha256(data).hexdigest()
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            if _write_file_atomically(path, data, digest):
                # a sidecar no longer applies; one left by a crash here is ignored
                _checksum_file(path).unlink(missing_ok=True)
            else:
                self._put_with_sidecar(path, data, digest)
        except OSError as error:
            raise StoreError(f"{key}: cannot write under {self.root} ({error})") from error
        return ObjectInfo(key, len(data), digest)

    @staticmethod
    def _put_with_sidecar(path: Path, data: bytes, digest: str) -> None:
        """The checksum first, accepting the old bytes and the new; then the bytes; then the
        new digest alone: a kill between any two steps leaves bytes their sidecar accepts."""
        sidecar = _checksum_file(path)
        try:
            previous = sidecar.read_text().split()[:1]
        except FileNotFoundError:
            previous = []
        _replace_with(sidecar, "\n".join([digest, *previous]).encode())
        _replace_with(path, data)
        _replace_with(sidecar, digest.encode())

    def get(self, key: str) -> bytes:
        path = self._path(key)
        for _ in range(3):  # a sidecar rewritten between our reads: read again
            data, digest = self._read(key, path)
            actual = hashlib.sha256(data).hexdigest()
            if digest is not None:
                if actual == digest:
                    return data
                break
            if actual in self._sidecar_digests(key, path):
                return data
        raise ChecksumMismatchError(f"{key}: stored bytes do not match their sha256")

    def _read(self, key: str, path: Path) -> tuple[bytes, str | None]:
        """The file's bytes and its checksum attribute, from one open file."""
        try:
            with path.open("rb") as file:
                return file.read(), read_checksum_attribute(file.fileno())
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            # a folder is where keys share a prefix, never an object
            raise ObjectNotFoundError(f"no object {key!r} in {self.root}") from None
        except OSError as error:
            raise StoreError(f"{key}: cannot read under {self.root} ({error})") from error

    def _sidecar_digests(self, key: str, path: Path) -> list[str]:
        try:
            return _checksum_file(path).read_text().split()
        except FileNotFoundError:
            return []
        except OSError as error:
            raise StoreError(f"{key}: cannot read under {self.root} ({error})") from error

    def exists(self, key: str) -> bool:
        return self._path(key).is_file()

    def list(self, prefix: str = "") -> list[str]:
        if not self.root.is_dir():
            return []
        keys = (
            path.relative_to(self.root).as_posix()
            for path in self.root.rglob("*")
            if path.is_file()
            and not path.name.endswith(LEGACY_CHECKSUM_SUFFIX)
            and not is_temporary(path.name)
        )
        return sorted(key for key in keys if key.startswith(prefix))

    def sizes(self, prefix: str) -> dict[str, int]:
        sizes = {}
        for key in self.list(prefix):
            try:
                sizes[key] = (self.root / key).stat().st_size
            except FileNotFoundError:
                continue  # deleted since it was listed
        return sizes

    def modified(self, prefix: str) -> dict[str, float]:
        """Key -> when it was last written (POSIX seconds), for every object under `prefix`."""
        times = {}
        for key in self.list(prefix):
            try:
                times[key] = (self.root / key).stat().st_mtime
            except FileNotFoundError:
                continue
        return times

    def delete(self, key: str) -> None:
        path = self._path(key)
        for candidate in (path, _checksum_file(path)):
            candidate.unlink(missing_ok=True)

    def check(self) -> None:
        self.put(CHECK_KEY, b"ok")
        self.delete(CHECK_KEY)


class S3Store:
    """Objects in an S3 bucket (MinIO or any S3) through the minio SDK, sha256 in metadata."""

    def __init__(self, client: Any, bucket: str, prefix: str = "", endpoint: str = "") -> None:
        self.client = client
        self.endpoint = endpoint
        self.bucket = bucket
        self.prefix = prefix.strip("/") + "/" if prefix.strip("/") else ""

    @classmethod
    def connect(
        cls,
        endpoint: str,
        access_key: str,
        secret_key: str,
        bucket: str,
        *,
        secure: bool = True,
        prefix: str = "",
        region: str | None = None,
    ) -> S3Store:
        from minio import Minio

        client = Minio(
            endpoint, access_key=access_key, secret_key=secret_key, secure=secure, region=region,
            http_client=_s3_http_client(),
        )  # fmt: skip
        return cls(client, bucket, prefix, endpoint)

    def _name(self, key: str) -> str:
        return self.prefix + validate_key(key)

    def put(
        self, key: str, data: bytes, content_type: str = "application/octet-stream"
    ) -> ObjectInfo:
        from minio.error import S3Error

        _check_size(key, data)
        digest = hashlib.sha256(data).hexdigest()
        try:
            self.client.put_object(
                self.bucket, self._name(key), io.BytesIO(data), len(data),
                content_type=content_type, metadata={CHECKSUM_METADATA: digest},
            )  # fmt: skip
        except (S3Error, OSError, HTTPError) as error:
            raise StoreError(f"{key}: the S3 store refused the write ({error})") from error
        return ObjectInfo(key, len(data), digest)

    def get(self, key: str) -> bytes:
        from minio.error import S3Error

        try:
            response = self.client.get_object(self.bucket, self._name(key))
            try:
                data = response.read()
                expected = response.headers.get(f"x-amz-meta-{CHECKSUM_METADATA}")
            finally:
                response.close()
                response.release_conn()
        except HTTPError as error:
            raise StoreError(f"{key}: S3 store at {self.endpoint} unreachable ({error})") from error
        except S3Error as error:
            if error.code in ("NoSuchKey", "NoSuchObject"):
                raise ObjectNotFoundError(
                    f"no object {key!r} in s3://{self.bucket}/{self.prefix}"
                ) from None
            raise StoreError(f"{key}: the S3 store failed the read ({error})") from error
        if expected is None or hashlib.sha256(data).hexdigest() != expected:
            raise ChecksumMismatchError(f"{key}: stored bytes do not match their sha256")
        return bytes(data)

    def exists(self, key: str) -> bool:
        from minio.error import S3Error

        try:
            self.client.stat_object(self.bucket, self._name(key))
        except S3Error as error:
            if error.code in ("NoSuchKey", "NoSuchObject", "NotFound"):
                return False
            raise StoreError(f"{key}: the S3 store failed ({error})") from error
        return True

    def list(self, prefix: str = "") -> list[str]:
        objects = self.client.list_objects(self.bucket, prefix=self.prefix + prefix, recursive=True)
        return sorted(obj.object_name[len(self.prefix) :] for obj in objects)

    def sizes(self, prefix: str) -> dict[str, int]:
        from minio.error import S3Error

        try:
            objects = list(
                self.client.list_objects(self.bucket, prefix=self.prefix + prefix, recursive=True)
            )
        except (S3Error, OSError, HTTPError) as error:
            raise StoreError(f"{prefix}: the S3 store failed the listing ({error})") from error
        return {obj.object_name[len(self.prefix) :]: int(obj.size or 0) for obj in objects}

    def modified(self, prefix: str) -> dict[str, float]:
        """Key -> when it was last written (POSIX seconds), for every object under `prefix`."""
        from minio.error import S3Error

        try:
            objects = list(
                self.client.list_objects(self.bucket, prefix=self.prefix + prefix, recursive=True)
            )
        except (S3Error, OSError, HTTPError) as error:
            raise StoreError(f"{prefix}: the S3 store failed the listing ({error})") from error
        return {
            obj.object_name[len(self.prefix) :]: obj.last_modified.timestamp()
            for obj in objects
            if obj.last_modified is not None
        }

    def delete(self, key: str) -> None:
        self.client.remove_object(self.bucket, self._name(key))

    def check(self) -> None:
        from minio.error import S3Error

        try:
            if not self.client.bucket_exists(self.bucket):
                raise StoreError(
                    f"bucket {self.bucket!r} does not exist: create it (compose's minio-init does)"
                )
        except (S3Error, OSError, HTTPError) as error:
            raise StoreError(f"S3 store at {self.endpoint} unreachable ({error})") from error
        self.put(CHECK_KEY, b"ok")
        self.delete(CHECK_KEY)


# MinIO's client waits up to 5 minutes for a connection or a read, 6 times: a store cut off
# mid-write could hold an export queue, and a run's end waiting on it, for half an hour. One
# call fails within 4 x (10 + 30) s, and callers (the export queue, checkpoints) count or report it.
S3_TIMEOUT = {"connect": 10.0, "read": 30.0}
S3_RETRIES = 3


def _s3_http_client() -> Any:
    """MinIO's default HTTP pool (system or certifi CAs, retries on 5xx) with bounded waits."""
    import certifi
    import urllib3

    return urllib3.PoolManager(
        timeout=urllib3.Timeout(**S3_TIMEOUT), maxsize=10, cert_reqs="CERT_REQUIRED",
        ca_certs=os.environ.get("SSL_CERT_FILE") or certifi.where(),
        retries=urllib3.Retry(total=S3_RETRIES, backoff_factor=0.2,
                              status_forcelist=[500, 502, 503, 504]),
    )  # fmt: skip


def open_store(
    url: str, *, access_key: str | None = None, secret_key: str | None = None
) -> ObjectStore:
    """A store from a URL: a path or file:///path (local), or s3://bucket/prefix?endpoint=host:port."""
    parsed = urlparse(url)
    if parsed.scheme in ("", "file"):
        return LocalStore(parsed.path if parsed.scheme else url)
    if parsed.scheme != "s3":
        raise StoreError(
            f"store URL {url!r}: use a path, file:///path or s3://bucket?endpoint=host:port"
        )
    query = {name: values[-1] for name, values in parse_qs(parsed.query).items()}
    endpoint = query.get("endpoint")
    if not endpoint or not parsed.netloc:
        raise StoreError(f"store URL {url!r}: s3 URLs need a bucket and ?endpoint=host:port")
    access = access_key or os.environ.get("KOHOLINT_S3_ACCESS_KEY")
    secret = secret_key or os.environ.get("KOHOLINT_S3_SECRET_KEY")
    if not access or not secret:
        raise StoreError(
            "S3 store needs credentials: set KOHOLINT_S3_ACCESS_KEY and KOHOLINT_S3_SECRET_KEY"
        )
    return S3Store.connect(
        endpoint, access, secret, parsed.netloc, secure=query.get("secure", "true").lower() == "true",
        prefix=parsed.path, region=query.get("region"),
    )  # fmt: skip


def put_json(store: ObjectStore, key: str, document: dict[str, Any]) -> ObjectInfo:
    return store.put(key, json.dumps(document, sort_keys=True).encode(), "application/json")

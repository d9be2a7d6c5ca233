"""Where the stored files' bytes are kept: the data dir (the default) or an S3-compatible bucket.

``storage_url`` chooses. Empty: ``<data dir>/files/<2 hex>/<file id>``, as FileKiln always kept them.
``s3://bucket/prefix``: objects ``prefix/<file id>`` in a bucket of any S3-compatible store (AWS, MinIO,
SeaweedFS, Ceph ...), reached with the ``s3_*`` settings or, where those are empty, the standard
``AWS_ENDPOINT_URL``, ``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY`` and ``AWS_REGION`` variables, which
botocore reads itself. boto3 is imported only for a bucket.

With a bucket, no process needs a disk it shares with another: an upload is spooled to the receiving
process's own disk and put in the bucket; a worker fetches a job's inputs into its scratch dir and puts
the results back; a download streams from the bucket through the API, or is the bucket's own presigned
URL (``s3_presigned_downloads``). Each process keeps local copies of what it put or fetched, up to
``storage_cache_mb`` (and always the last one it fetched, which is being read), so that checking an
input it just received costs no second transfer.
"""

from __future__ import annotations

import errno
import io
import logging
import os
import shutil
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Protocol, cast
from urllib.parse import urlsplit

from localapi.config import SettingError, Settings
from localapi.core.db import new_id
from localapi.core.errors import StorageUnavailable

log = logging.getLogger("filekiln.storage")

S3_SCHEMES = ("s3",)
CONNECT_TIMEOUT = 5.0
READ_TIMEOUT = 60.0


class Blobs(Protocol):
    """The bytes of stored files, by file id."""

    def put(self, source: Path, file_id: str, *, move: bool) -> int:
        """Store ``source`` as ``file_id`` (moved, or copied); returns its size."""

    def local(self, file_id: str) -> Path:
        """A path to the file's bytes on this machine (for a bucket, a cached copy, fetched if need be)."""

    def fetch(self, file_id: str, dest_dir: Path) -> Path:
        """The file's bytes where a job reads them: in place in the data dir, else fetched into ``dest_dir``."""

    def open(self, file_id: str) -> IO[bytes]:
        """The file open for reading (seekable); FileNotFoundError when it is not there."""

    def delete(self, file_id: str) -> None: ...

    def presign(self, file_id: str, seconds: int, disposition: str, media_type: str) -> str | None:
        """A URL of the store's own that serves the file for ``seconds``, or None (downloads go through the API)."""

    def describe(self) -> dict[str, Any]:
        """kind, target, ok and error (words, or None), for GET /health and ``filekiln doctor``."""


class LocalBlobs:
    """Files in the data dir: ``root/<2 hex>/<file id>``."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def path(self, file_id: str) -> Path:
        return self.root / file_id[5:7] / file_id

    def put(self, source: Path, file_id: str, *, move: bool) -> int:
        target = self.path(file_id)
        target.parent.mkdir(parents=True, exist_ok=True)
        if move:
            os.replace(source, target)
        else:
            tmp = target.with_suffix(".part")
            shutil.copyfile(source, tmp)
            os.replace(tmp, target)
        return target.stat().st_size

    def local(self, file_id: str) -> Path:
        """The blob's path; FileNotFoundError when its bytes are gone, as from a bucket."""
        path = self.path(file_id)
        if not path.is_file():
            raise FileNotFoundError(errno.ENOENT, "the file's bytes are gone", str(path))
        return path

    def fetch(self, file_id: str, dest_dir: Path) -> Path:
        return self.local(file_id)  # read in place: the data dir is this machine's

    def open(self, file_id: str) -> IO[bytes]:
        return open(self.path(file_id), "rb")  # noqa: SIM115 - the caller closes it

    def delete(self, file_id: str) -> None:
        # an open download keeps reading the unlinked inode; nothing is truncated
        self.path(file_id).unlink(missing_ok=True)

    def presign(self, file_id: str, seconds: int, disposition: str, media_type: str) -> str | None:
        return None

    def describe(self) -> dict[str, Any]:
        error = None if os.access(self.root, os.W_OK) else "the folder cannot be written to"
        return {"kind": "local", "target": str(self.root), "ok": error is None, "error": error}


@dataclass(frozen=True)
class BucketTarget:
    bucket: str
    prefix: str  # "" or ending in "/"

    @property
    def shown(self) -> str:
        return f"s3://{self.bucket}/{self.prefix}"


def bucket_target(storage_url: str) -> BucketTarget:
    parts = urlsplit(storage_url)
    if parts.scheme not in S3_SCHEMES or not parts.netloc:
        raise SettingError(f"storage_url must be empty (the data dir) or s3://bucket/prefix, not {storage_url!r}.")
    prefix = parts.path.strip("/")
    return BucketTarget(parts.netloc, f"{prefix}/" if prefix else "")


class BucketBlobs:
    """Files as objects ``<prefix><file id>`` in an S3-compatible bucket, with a bounded local cache."""

    def __init__(self, settings: Settings, cache_dir: Path) -> None:
        self.target = bucket_target(settings.storage_url)
        self.settings = settings
        self.cache_dir = cache_dir
        self.cache_bytes = max(settings.storage_cache_mb, 0) * 1024 * 1024
        cache_dir.mkdir(parents=True, exist_ok=True)
        self._client: Any = None
        self._lock = threading.Lock()

    # ---- the client ----

    @property
    def client(self) -> Any:
        """A boto3 S3 client (thread-safe), made on first use."""
        if self._client is None:
            with self._lock:
                if self._client is None:
                    self._client = self._make_client()
        return self._client

    def _make_client(self) -> Any:
        import boto3
        from botocore.config import Config

        s = self.settings
        endpoint = s.s3_endpoint_url or os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL")
        config = Config(
            # an endpoint of one's own (MinIO, SeaweedFS) rarely has a DNS name per bucket
            s3={"addressing_style": "path" if endpoint else "auto"},
            signature_version="s3v4", connect_timeout=CONNECT_TIMEOUT, read_timeout=READ_TIMEOUT,
            retries={"max_attempts": 4, "mode": "standard"},
        )
        return boto3.session.Session().client(
            "s3", endpoint_url=s.s3_endpoint_url or None, region_name=s.s3_region or None,
            aws_access_key_id=s.s3_access_key_id or None, aws_secret_access_key=s.s3_secret_access_key or None,
            config=config)

    def key(self, file_id: str) -> str:
        return self.target.prefix + file_id

    # ---- the bytes ----

    def put(self, source: Path, file_id: str, *, move: bool) -> int:
        size = source.stat().st_size
        try:
            with self._reached():
                self.client.upload_file(str(source), self.target.bucket, self.key(file_id))
        except BaseException:
            if move:  # it was handed over: nothing is left behind in the spool
                source.unlink(missing_ok=True)
            raise
        if move:
            self._keep(source, file_id)
        return size

    @contextmanager
    def _reached(self) -> Iterator[None]:
        """The store's failures as StorageUnavailable, in words; a missing object as FileNotFoundError."""
        from boto3.exceptions import Boto3Error
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            yield
        except (ClientError, BotoCoreError, Boto3Error) as exc:
            if isinstance(exc, ClientError) and _missing(exc):
                raise FileNotFoundError(str(exc)) from None
            why = explain(exc, self.target)
            raise StorageUnavailable(f"The file store {self.target.shown} failed: {why}.") from None

    def local(self, file_id: str) -> Path:
        cached = self.cache_dir / file_id
        if cached.exists():
            os.utime(cached)  # recently used: evicted last
            return cached
        part = self.cache_dir / f"{file_id}.{new_id('tmp')}.part"
        try:
            self._download(file_id, part)
            os.replace(part, cached)
        finally:
            part.unlink(missing_ok=True)
        self._evict(keep=file_id)
        return cached

    def fetch(self, file_id: str, dest_dir: Path) -> Path:
        cached = self.cache_dir / file_id
        dest_dir.mkdir(parents=True, exist_ok=True)
        dest = dest_dir / file_id
        if cached.exists():
            try:
                os.link(cached, dest)  # the same disk: no copy
                return dest
            except OSError:
                pass
        self._download(file_id, dest)
        return dest

    def _download(self, file_id: str, dest: Path) -> None:
        try:
            with self._reached():
                self.client.download_file(self.target.bucket, self.key(file_id), str(dest))
        except BaseException:
            dest.unlink(missing_ok=True)
            raise

    def open(self, file_id: str) -> IO[bytes]:
        reader = ObjectReader(self.client, self.target.bucket, self.key(file_id), self._reached)
        reader.seek(0)  # opened now: a missing object is found before an answer starts
        return cast(IO[bytes], reader)

    def delete(self, file_id: str) -> None:
        (self.cache_dir / file_id).unlink(missing_ok=True)
        with self._reached():
            self.client.delete_object(Bucket=self.target.bucket, Key=self.key(file_id))

    def presign(self, file_id: str, seconds: int, disposition: str, media_type: str) -> str | None:
        if not self.settings.s3_presigned_downloads:
            return None
        url: str = self.client.generate_presigned_url(
            "get_object", ExpiresIn=max(1, seconds),
            Params={"Bucket": self.target.bucket, "Key": self.key(file_id),
                    "ResponseContentDisposition": disposition, "ResponseContentType": media_type})
        return url

    def describe(self) -> dict[str, Any]:
        error = None
        try:
            self.client.head_bucket(Bucket=self.target.bucket)
        except Exception as exc:
            error = explain(exc, self.target)
        return {"kind": "s3", "target": self.target.shown, "ok": error is None, "error": error}

    # ---- the local cache ----

    def _keep(self, source: Path, file_id: str) -> None:
        if not self.cache_bytes:
            source.unlink(missing_ok=True)
            return
        try:
            os.replace(source, self.cache_dir / file_id)
        except OSError:  # another disk: not worth a copy
            source.unlink(missing_ok=True)
            return
        self._evict()

    def _evict(self, keep: str | None = None) -> None:
        """Drop the least recently used copies beyond ``storage_cache_mb``, but ``keep``, which a caller is
        about to read."""
        entries = []
        for entry in os.scandir(self.cache_dir):
            if entry.name.endswith(".part"):
                continue
            try:
                st = entry.stat()
            except FileNotFoundError:
                continue
            entries.append((st.st_mtime, st.st_size, entry.path))
        total = sum(size for _, size, _ in entries)
        for _, size, path in sorted(entries):
            if total <= self.cache_bytes:
                return
            if Path(path).name != keep:
                Path(path).unlink(missing_ok=True)
                total -= size


class ObjectReader(io.RawIOBase):
    """An object read as a seekable file: each seek starts a ranged GET at the new position."""

    def __init__(self, client: Any, bucket: str, key: str, reached: Callable[[], AbstractContextManager[None]]) -> None:
        super().__init__()
        self._reached = reached
        self._client = client
        self._bucket = bucket
        self._key = key
        self._pos = 0
        self._body: Any = None

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def seek(self, pos: int, whence: int = io.SEEK_SET) -> int:
        if whence != io.SEEK_SET:
            raise io.UnsupportedOperation("only absolute seeks")
        self._close_body()
        self._pos = pos
        self._open_body()
        return pos

    def tell(self) -> int:
        return self._pos

    def _open_body(self) -> None:
        from botocore.exceptions import ClientError

        try:
            with self._reached():
                try:
                    answer = self._client.get_object(Bucket=self._bucket, Key=self._key, Range=f"bytes={self._pos}-")
                except ClientError as exc:
                    if exc.response.get("Error", {}).get("Code") != "InvalidRange":
                        raise
                    answer = {"Body": io.BytesIO(b"")}  # at or past the end (an empty object): nothing to read
        except FileNotFoundError:
            raise FileNotFoundError(self._key) from None
        self._body = answer["Body"]

    def read(self, size: int = -1) -> bytes:
        if self._body is None:
            self._open_body()
        with self._reached():
            data: bytes = self._body.read(None if size < 0 else size)
        self._pos += len(data)
        return data

    def readinto(self, buffer: Any) -> int:
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)

    def _close_body(self) -> None:
        if self._body is not None:
            self._body.close()
            self._body = None

    def close(self) -> None:
        self._close_body()
        super().close()


def _missing(exc: Any) -> bool:
    return exc.response.get("Error", {}).get("Code") in ("NoSuchKey", "404", "NotFound")


def explain(exc: BaseException, target: BucketTarget) -> str:
    """Why the bucket cannot be used, in words (never a path on this machine: the words reach API clients)."""
    if type(exc).__name__ == "S3UploadFailedError" and exc.__context__ is not None:
        exc = exc.__context__  # boto3's wrapper names the spooled file; the store's own error is inside
    code = getattr(exc, "response", {}).get("Error", {}).get("Code") if hasattr(exc, "response") else None
    if code in ("404", "NoSuchBucket"):
        return f"the bucket {target.bucket} does not exist"
    if code in ("403", "AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch"):
        return "the access key or its secret was refused"
    name = type(exc).__name__
    if name in ("EndpointConnectionError", "ConnectTimeoutError", "ConnectionClosedError"):
        return "the endpoint does not answer"
    if name == "NoCredentialsError":
        return "no credentials: set s3_access_key_id and s3_secret_access_key, or AWS_ACCESS_KEY_ID and " \
               "AWS_SECRET_ACCESS_KEY"
    if name == "S3UploadFailedError":
        return "the upload was refused"
    return str(exc) or name


def open_blobs(settings: Settings, files_dir: Path) -> Blobs:
    """The store ``storage_url`` names."""
    if not settings.storage_url:
        return LocalBlobs(files_dir)
    return BucketBlobs(settings, files_dir / "cache")

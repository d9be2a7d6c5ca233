"""Uploaded files and results, stored under their ids, never under client names: the files table, and
their bytes in the data dir or a bucket (:mod:`localapi.core.storage`)."""

from __future__ import annotations

import hashlib
import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from converters.inputs.sniff import mime_type, sniff
from localapi.core.db import Connection, Database, new_id, now
from localapi.core.errors import FileNotFound, FileTooLarge, Gone
from localapi.core.storage import Blobs, LocalBlobs

CHUNK = 1024 * 1024


@dataclass(frozen=True)
class StoredFile:
    id: str
    key_id: str | None
    original_name: str
    mime_type: str
    format: str | None
    size_bytes: int
    sha256: str | None
    kind: str  # upload | result | bundle
    job_id: str | None
    created_at: float
    expires_at: float
    deleted_at: float | None


def _shown(ch: str) -> bool:
    """Whether a character may stay in a name: not a control, format (bidi marks, zero-width joiners
    and spaces), surrogate, private-use or unassigned character (Unicode categories C*), and not a
    line or paragraph separator."""
    category = unicodedata.category(ch)
    return category[0] != "C" and category not in ("Zl", "Zp")


def display_name(name: str) -> str:
    """A client-given file name made safe for display and headers: no path, no controls."""
    name = unicodedata.normalize("NFC", name or "")
    name = "".join(ch for ch in name if _shown(ch)).replace("\\", "/")
    name = name.rsplit("/", 1)[-1].strip().lstrip(".")
    if len(name) > 200:
        stem, dot, ext = name.rpartition(".")
        name = (stem[: 200 - len(ext) - 1] + dot + ext) if dot and len(ext) <= 10 else name[:200]
    return name or "file"


class UploadSink:
    """Receives an upload chunk by chunk into a temp file inside the data dir.

    Counts as it goes and raises :class:`FileTooLarge` the moment the limit is passed;
    :meth:`discard` removes the partial file. With ``hashed``, it takes the SHA-256 of the bytes on
    the way (:attr:`sha256`): what tells an idempotent upload's retry from a different file. Only
    those need it, and at SHA-256's speed (some 1.7 GB/s a core) it would cost any other upload
    about a fifth of its speed.
    """

    def __init__(self, tmp_dir: Path, limit: int, *, hashed: bool = False) -> None:
        self.limit = limit
        self.size = 0
        self._hash = hashlib.sha256() if hashed else None
        self.path = tmp_dir / f"upload-{new_id('tmp')}.part"
        self._f: IO[bytes] | None = open(self.path, "xb")  # noqa: SIM115 - closed in finish/discard

    def write(self, chunk: bytes | bytearray) -> None:
        self.size += len(chunk)
        if self.size > self.limit:
            self.discard()
            raise FileTooLarge(f"The file is larger than the limit of {self.limit} bytes.")
        assert self._f is not None
        if self._hash is not None:
            self._hash.update(chunk)
        self._f.write(chunk)

    @property
    def sha256(self) -> str | None:
        """The hex SHA-256 of what was written, for a sink made ``hashed``."""
        return self._hash.hexdigest() if self._hash is not None else None

    def finish(self) -> None:
        # No fsync: an upload is as durable as the metadata row that records it (SQLite WAL with
        # synchronous=NORMAL), which survives any crash of FileKiln but not a power cut; syncing the
        # file alone would cost some 8 ms an upload and guarantee nothing more.
        if self._f is not None:
            self._f.flush()
            self._f.close()
            self._f = None

    def discard(self) -> None:
        if self._f is not None:
            self._f.close()
            self._f = None
        self.path.unlink(missing_ok=True)


def _checked(file_id: str) -> str:
    # ids are ours (prefix + hex); anything else never reaches the disk or the bucket
    if not re.fullmatch(r"file_[0-9a-f]{32}", file_id):
        raise FileNotFound(f"No file {file_id!r}.")
    return file_id


_INSERT = ("insert into files (id, key_id, original_name, mime_type, format, size_bytes, sha256, kind, job_id,"
           " created_at, expires_at) values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")


def _values(f: StoredFile) -> tuple[object, ...]:
    return (f.id, f.key_id, f.original_name, f.mime_type, f.format, f.size_bytes, f.sha256, f.kind, f.job_id,
            f.created_at, f.expires_at)


class FileStore:
    """The files table, and the bytes in the store ``storage_url`` names (:mod:`localapi.core.storage`)."""

    def __init__(self, db: Database, root: Path, retention_seconds: float, blobs: Blobs | None = None) -> None:
        self.db = db
        self.root = root
        self.tmp_dir = root / "tmp"  # uploads spool here (this machine's disk, whatever the store)
        self.retention_seconds = retention_seconds
        self.root.mkdir(parents=True, exist_ok=True)
        self.tmp_dir.mkdir(parents=True, exist_ok=True)
        self.blobs: Blobs = blobs or LocalBlobs(root)

    def path_of(self, file_id: str) -> Path:
        """A path to the file's bytes on this machine (with a bucket, a local copy, fetched if need be)."""
        return self.blobs.local(_checked(file_id))

    def fetch(self, file_id: str, dest_dir: Path) -> Path:
        """The file's bytes where a job reads them: in the data dir in place, else fetched into ``dest_dir``."""
        return self.blobs.fetch(_checked(file_id), dest_dir)

    def open(self, file_id: str) -> IO[bytes]:
        """The file open for reading; FileNotFoundError when its bytes are gone."""
        return self.blobs.open(_checked(file_id))

    def new_sink(self, limit: int, *, hashed: bool = False) -> UploadSink:
        return UploadSink(self.tmp_dir, limit, hashed=hashed)

    def add(self, source: Path, original_name: str, **details: Any) -> StoredFile:
        """Take ``source`` into the store (in the data dir, an atomic rename) and record it: :meth:`put`
        (with its arguments) and :meth:`record` at once."""
        stored = self.put(source, original_name, **details)
        self.db.execute(_INSERT, *_values(stored))
        return stored

    def put(
        self,
        source: Path,
        original_name: str,
        *,
        key_id: str | None,
        kind: str,
        job_id: str | None = None,
        sha256: str | None = None,
        move: bool = True,
        fmt: str | None = None,
    ) -> StoredFile:
        """Take ``source``'s bytes into the store, not yet recorded: :meth:`record` writes the row in the
        caller's transaction (a job's results with its end), and until then the file does not exist."""
        file_id = new_id("file")
        name = display_name(original_name)
        fmt = fmt or sniff(source, name)
        size = self.blobs.put(source, file_id, move=move)
        created = now()
        return StoredFile(id=file_id, key_id=key_id, original_name=name, mime_type=mime_type(fmt), format=fmt,
                          size_bytes=size, sha256=sha256, kind=kind, job_id=job_id, created_at=created,
                          expires_at=created + self.retention_seconds, deleted_at=None)

    @staticmethod
    def record(conn: Connection, stored: StoredFile) -> None:
        conn.execute(_INSERT, _values(stored))

    def discard(self, stored: StoredFile) -> None:
        """The bytes of a file :meth:`put` that was not recorded after all."""
        self.blobs.delete(_checked(stored.id))

    def get(self, file_id: str, *, key_id: str | None = None, include_deleted: bool = False,
            any_owner: bool = False) -> StoredFile:
        row = self.db.one("select * from files where id = ?", file_id)
        if row is None or (not any_owner and row["key_id"] != key_id):
            raise FileNotFound(f"No file {file_id!r}.")
        stored = StoredFile(**{k: row[k] for k in row.keys()})
        if stored.deleted_at is not None and not include_deleted:
            if stored.expires_at <= stored.deleted_at:
                raise Gone(f"File {file_id} has expired and was purged.", code="file_expired")
            raise FileNotFound(f"No file {file_id!r}.")
        return stored

    def delete(self, file_id: str) -> None:
        """The bytes first: a store that cannot be reached (StorageUnavailable) leaves the file as it was."""
        self.blobs.delete(_checked(file_id))
        self.db.execute("update files set deleted_at = ? where id = ? and deleted_at is null", now(), file_id)

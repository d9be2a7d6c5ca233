"""Reading archives entry by entry: ZIP, 7z, tar (plain or compressed) and single compressed files.

A reader lists what the archive's directory says, when that is cheap (:meth:`Reader.listing`), and goes
through the entries in order (:meth:`Reader.read_all`), handing each to a :class:`Sink`: the sink says whether
it wants the entry (regular files only) and gets its bytes as they inflate, through an :class:`EntryWriter`
that counts them (:class:`~converters.inputs.archives.Meter`) before writing them anywhere. Nothing is ever
extracted by a library to a path of its choosing; links are never followed or created.
"""

from __future__ import annotations

import contextlib
import lzma
import stat
import struct
import tarfile
import threading
import time
import zipfile
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, Protocol

from converters.base import Cancelled, ConversionError, InputFile
from converters.inputs.archives import (
    ArchiveLimits,
    EntryInfo,
    Kind,
    check_listing,
    check_zip_directory,
    entry_parts,
    shown,
)
from converters.inputs.safety import data_offset
from converters.tools.archives.common import (
    CHUNK,
    STREAM_FORMATS,
    TAR_FORMATS,
    Entry,
    archive_stem,
    clean_component,
    fit_name,
    source_name,
)
from converters.tools.archives.streams import (
    MAX_READ,
    RAW_CHUNK,
    CountingFile,
    DecompressStream,
    damaged,
    from_sink,
    zstd_frames,
)

if TYPE_CHECKING:
    import py7zr

HEADER_BUDGET = 64 * 1024**2  # what the headers of a plain tar may take, read at job creation
STREAM_SLACK = 2 * RAW_CHUNK  # compressed bytes an entry of a stream may have had read ahead for it


class EntryWriter(Protocol):
    def write(self, data: bytes) -> None: ...

    def finish(self) -> None: ...


class Sink(Protocol):
    def begin(self, entry: Entry, packed: Callable[[], int | None]) -> EntryWriter | None:
        """Take ``entry`` (a writer for its bytes) or skip it (``None``). ``packed()`` tells the compressed
        bytes the entry has consumed so far, when the reader knows."""


def ours(exc: BaseException) -> bool:
    """Whether ``exc`` came from our side of a library call (a limit, a cancel, a full disk), not the archive."""
    return from_sink(exc) or isinstance(exc, (ConversionError, Cancelled, MemoryError))


def constant(value: int | None) -> Callable[[], int | None]:
    return lambda: value


def since(count: Callable[[], int], start: int) -> Callable[[], int | None]:
    """The compressed bytes an entry of a stream has consumed: read since it began, and what may have been read
    ahead for it before (the input is read a chunk at a time), so a small tail entry is not taken for a bomb."""
    return lambda: count() - start + STREAM_SLACK


def password_bytes(password: str | None) -> bytes | None:
    return password.encode("utf-8") if password else None


class Reader:
    """One archive, read with the job's password (if any) under the job's limits."""

    def __init__(self, source: InputFile, password: str | None, limits: ArchiveLimits) -> None:
        self.source = source
        self.path = source.path
        self.password = password or None
        self.limits = limits
        self.notes: list[str] = []
        self.work: Path | None = None  # a folder inside the job's, for what an external reader needs
        self._listed: list[Entry] | None = None

    @property
    def label(self) -> str:
        return source_name(self.source)

    def listing(self) -> list[Entry] | None:
        """The entries the archive's directory declares, without inflating anything; ``None`` when the format
        has no directory short of reading it all (a compressed tar)."""
        return None

    def check(self) -> int | None:
        """Job-creation checks: the listing against the limits, and whether the password opens the archive.
        Returns the declared total of the files, when known."""
        entries = self.listing()
        if entries is None:
            return None
        _, total = check_listing((EntryInfo(e.name, e.kind, e.size, e.packed, e.group) for e in entries),
                                 self.limits, archive_bytes=self.path.stat().st_size)
        self.check_password(entries)
        return total

    def check_password(self, entries: list[Entry]) -> None:
        if self.password is None and any(e.encrypted and e.kind == "file" for e in entries):
            raise ConversionError("password_protected", f"{self.label} is encrypted: give its password.")

    def read_all(self, sink: Sink) -> None:
        raise NotImplementedError

    def fraction(self, written: int, total: int | None) -> float:
        """How far the reading is, for progress: bytes written of those declared, when known."""
        return written / total if total else 0.0


# --------------------------------------------------------------------------- ZIP


def _zip_kind(info: zipfile.ZipInfo) -> tuple[Kind, bool]:
    mode = info.external_attr >> 16 if info.create_system == 3 else 0
    if mode:
        if stat.S_ISLNK(mode):
            return "link", False
        if stat.S_ISDIR(mode):
            return "dir", False
        if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) or stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode):
            return "special", False
    if info.is_dir():
        return "dir", False
    return "file", bool(mode & 0o111)


def _zip_mtime(info: zipfile.ZipInfo) -> float | None:
    try:
        return time.mktime((*info.date_time, 0, 0, -1))
    except (OverflowError, ValueError):
        return None


def _no_overlap(infos: list[zipfile.ZipInfo], label: str) -> None:
    """Refuse a ZIP whose entries share compressed data: an entry's data starts after its local header (30
    bytes and more), so the next entry's header must start past this one's data. Overlapping entries are how a few
    kilobytes of ZIP make hundreds of entries of one inflated block (each under the ratio floor)."""
    end = -1
    for info in sorted(infos, key=lambda i: i.header_offset):
        if info.header_offset < end:
            raise ConversionError("input_too_large", f"{label}: its entries overlap (several share one piece of "
                                                     "compressed data): a decompression bomb.")
        end = info.header_offset + 30 + info.compress_size  # its name and extra field only add to the 30


class ZipReader(Reader):
    """ZIP: the central directory lists the entries; each one is inflated here (deflate), counting, and stopped
    one byte past its declared size, or read through :mod:`zipfile` (stored, bzip2, LZMA, encrypted), which never
    returns more than declared. Traditional (ZipCrypto) encryption is read; AES is not."""

    def listing(self) -> list[Entry]:
        if self._listed is None:
            try:
                check_zip_directory(self.path, self.limits.entries)
                with zipfile.ZipFile(self.path) as zf:
                    infos = zf.infolist()
            except (zipfile.BadZipFile, OSError, ValueError, EOFError) as exc:
                raise damaged(f"{self.label} (ZIP)", exc) from None
            _no_overlap(infos, self.label)
            entries = []
            for info in infos:
                kind, executable = _zip_kind(info)
                entries.append(Entry(info.filename, entry_parts(info.filename), kind, info.file_size,
                                     info.compress_size, _zip_mtime(info), executable, bool(info.flag_bits & 1), info))
            self._listed = entries
        return self._listed

    def check_password(self, entries: list[Entry]) -> None:
        super().check_password(entries)
        encrypted = [e for e in entries if e.encrypted and e.kind == "file"]
        for entry in encrypted:
            if entry.key.compress_type == 99:
                raise ConversionError("unsupported_format", f"{self.label}: {shown(entry.name)} is AES-encrypted; "
                                                            "FileKiln reads only traditional ZIP encryption.")
        if encrypted and self.password is not None:  # the password's check byte: 12 bytes decrypted, cheap
            with zipfile.ZipFile(self.path) as zf:
                try:
                    zf.open(encrypted[0].key, pwd=password_bytes(self.password)).close()
                except RuntimeError as exc:
                    raise ConversionError("wrong_password", f"The password is wrong for {self.label}.") from exc
                except (zipfile.BadZipFile, OSError, ValueError, NotImplementedError) as exc:
                    raise damaged(f"{self.label} (ZIP)", exc) from None

    def read_all(self, sink: Sink) -> None:
        entries = self.listing()
        with zipfile.ZipFile(self.path) as zf, open(self.path, "rb") as raw:
            for entry in entries:
                writer = sink.begin(entry, constant(entry.packed))
                if writer is None:
                    continue
                info: zipfile.ZipInfo = entry.key
                if entry.encrypted or info.compress_type != zipfile.ZIP_DEFLATED:
                    self._through_zipfile(zf, entry, writer)
                else:
                    self._inflate(raw, entry, writer)
                writer.finish()

    def _inflate(self, raw: BinaryIO, entry: Entry, writer: EntryWriter) -> None:
        """Deflate, counted: stops one byte past the declared size (the meter refuses that byte)."""
        info: zipfile.ZipInfo = entry.key
        what = f"{self.label}: {shown(entry.name)}"
        try:
            raw.seek(data_offset(raw, info))
        except (ValueError, struct.error, OSError) as exc:
            raise damaged(what, exc) from None
        inflate = zlib.decompressobj(-15)
        left, produced, crc, pending = info.compress_size, 0, 0, b""
        cap = info.file_size + 1
        while not inflate.eof:
            if not pending:
                pending = raw.read(min(CHUNK, left)) if left > 0 else b""
                if not pending:
                    break
                left -= len(pending)
            try:
                out = inflate.decompress(pending, min(CHUNK, max(cap - produced, 1)))
            except zlib.error as exc:
                raise damaged(what, exc) from None
            pending = inflate.unconsumed_tail
            if out:
                produced += len(out)
                crc = zlib.crc32(out, crc)
                writer.write(out)
        if not inflate.eof or produced != info.file_size:
            raise damaged(what, f"it inflates to {produced:,} bytes, not the {info.file_size:,} it declares")
        if crc != info.CRC:
            raise damaged(what, "its checksum (CRC-32) does not match")

    def _through_zipfile(self, zf: zipfile.ZipFile, entry: Entry, writer: EntryWriter) -> None:
        info: zipfile.ZipInfo = entry.key
        what = f"{self.label}: {shown(entry.name)}"
        if entry.encrypted and self.password is None:
            raise ConversionError("password_protected", f"{self.label} is encrypted: give its password.")
        if info.compress_type == 99:
            raise ConversionError("unsupported_format", f"{what} is AES-encrypted; FileKiln reads only traditional "
                                                        "ZIP encryption.")

        def failed(exc: BaseException) -> ConversionError:
            if entry.encrypted:
                return ConversionError("wrong_password", f"The password is wrong for {self.label} (or the archive "
                                                         f"is damaged): {exc}.")
            return damaged(what, exc)

        try:
            src = zf.open(info, pwd=password_bytes(self.password))
        except RuntimeError as exc:
            raise ConversionError("wrong_password", f"The password is wrong for {self.label}.") from exc
        except NotImplementedError as exc:
            raise ConversionError("unsupported_format", f"{what}: {exc}.") from None
        except (zipfile.BadZipFile, OSError, ValueError, EOFError) as exc:
            raise damaged(what, exc) from None
        with src:
            while True:
                try:
                    chunk = src.read(CHUNK)
                except (zipfile.BadZipFile, zlib.error, lzma.LZMAError, EOFError, OSError, ValueError) as exc:
                    raise failed(exc) from None
                if not chunk:
                    break
                writer.write(chunk)


# --------------------------------------------------------------------------- 7z

_PY7ZR_LOCK = threading.Lock()
MAX_7Z_HEADER = 64 * 1024**2  # decoded size of a 7z header: some 200 000 entries' worth


@contextlib.contextmanager
def py7zr_bounds(limits: ArchiveLimits) -> Iterator[None]:
    """py7zr with our limits on what it builds in memory from a header (entries, folders, sub-streams, the
    header's decoded size) and with 1 MiB pieces when it inflates (its default is up to 128 MB at once).

    These are module constants of py7zr; they are lowered while the lock is held and put back after.
    """
    import py7zr.archiveinfo as info
    import py7zr.py7zr as core

    with _PY7ZR_LOCK:
        saved: dict[tuple[Any, str], Any] = {}

        def lower(module: Any, name: str, value: Any) -> None:
            if hasattr(module, name):
                saved[(module, name)] = getattr(module, name)
                current = getattr(module, name)
                setattr(module, name, min(current, value) if isinstance(current, int) else value)

        lower(info, "MAX_NUMFILES", limits.entries + 1)
        lower(info, "MAX_NUMFOLDERS", limits.entries + 1)
        lower(info, "MAX_SUBSTREAMS", limits.entries + 1)
        lower(info, "MAX_HEADER_SIZE", MAX_7Z_HEADER)
        lower(core, "get_memory_limit", lambda: CHUNK)
        try:
            yield
        finally:
            for (module, name), value in saved.items():
                setattr(module, name, value)


def _7z_kind(f: Any) -> tuple[Kind, bool]:
    if f.is_directory:
        return "dir", False
    if f.is_symlink or f.is_junction:
        return "link", False
    if f.is_socket:
        return "special", False
    mode = f.posix_mode
    if mode is not None:
        fmt = f.st_fmt
        if fmt == stat.S_IFDIR:
            return "dir", False
        if fmt == stat.S_IFLNK:
            return "link", False
        if fmt is not None and fmt not in (0, stat.S_IFREG):
            return "special", False
        return "file", bool(mode & 0o111)
    return "file", False


class SevenZipReader(Reader):
    """7z through py7zr: the header lists the entries; py7zr inflates each one to exactly its declared size
    into our writer (never a path), one megabyte at a time."""

    def _open(self, fp: BinaryIO) -> py7zr.SevenZipFile:
        import py7zr
        from py7zr.exceptions import PasswordRequired, UnsupportedCompressionMethodError

        try:
            return py7zr.SevenZipFile(fp, password=self.password)
        except PasswordRequired:
            raise ConversionError("password_protected", f"{self.label} is encrypted (even its list of files): "
                                                        "give its password.") from None
        except UnsupportedCompressionMethodError as exc:
            raise ConversionError("unsupported_format", f"{self.label} uses a compression method FileKiln cannot "
                                                        f"read: {exc}.") from None
        except Exception as exc:  # py7zr's own errors, lzma, zlib, struct ... all mean "cannot read it"
            if ours(exc):
                raise
            if "exceeds limit" in str(exc):
                raise ConversionError("input_too_large", f"{self.label}: {exc}; the limit is "
                                                         f"{self.limits.entries:,} entries.") from None
            if self.password is not None and self._header_encrypted():
                raise ConversionError("wrong_password", f"The password is wrong for {self.label}.") from None
            raise damaged(f"{self.label} (7z)", exc) from None

    def _header_encrypted(self) -> bool:
        import py7zr
        from py7zr.exceptions import PasswordRequired

        try:
            with open(self.path, "rb") as fp:
                py7zr.SevenZipFile(fp).close()
        except PasswordRequired:
            return True
        except Exception:  # noqa: BLE001 - anything else: not a password matter
            return False
        return False

    def listing(self) -> list[Entry]:
        if self._listed is None:
            with py7zr_bounds(self.limits), open(self.path, "rb") as fp:
                archive = self._open(fp)
                try:
                    self._listed = self._entries(archive)
                finally:
                    archive.close()
        return self._listed

    def _entries(self, archive: py7zr.SevenZipFile) -> list[Entry]:
        encrypted = archive.needs_password()
        entries = []
        for f in archive.files:
            kind, executable = _7z_kind(f)
            written = f.lastwritetime
            entry = Entry(f.filename, entry_parts(f.filename), kind, f.uncompressed, f.compressed,
                          written.totimestamp() if written is not None else None, executable, encrypted, f)
            entry.group = f.folder if not f.emptystream else None
            entries.append(entry)
        return entries

    def read_all(self, sink: Sink) -> None:
        from py7zr.exceptions import PasswordRequired, UnsupportedCompressionMethodError
        from py7zr.helpers import get_sanitized_output_path

        with py7zr_bounds(self.limits), open(self.path, "rb") as fp:
            archive = self._open(fp)
            try:
                entries = self._entries(archive)
                wanted = [e for e in entries if e.kind == "file"]
                targets = {e.name for e in wanted}
                # py7zr names what it extracts after the entry's path, with "_N" after repeated names
                by_name: dict[str, list[Entry]] = {}
                seen: dict[str, int] = {}
                for entry in entries:
                    if entry.name not in targets:
                        continue
                    if entry.name in seen:
                        out = f"{entry.name}_{seen[entry.name]}"
                        seen[entry.name] += 1
                    else:
                        out, seen[entry.name] = entry.name, 0
                    if entry.kind == "file":
                        key = get_sanitized_output_path(out, None).as_posix()
                        by_name.setdefault(key, []).append(entry)
                for entry in entries:
                    if entry.kind != "file":  # counted, and noted when skipped
                        sink.begin(entry, lambda: None)
                if wanted:
                    archive.extract(targets=sorted(targets), factory=_factory(sink, by_name))
            except PasswordRequired:
                raise ConversionError("password_protected", f"{self.label} is encrypted: give its password.") from None
            except UnsupportedCompressionMethodError as exc:
                raise ConversionError("unsupported_format", f"{self.label} uses a compression method FileKiln "
                                                            f"cannot read: {exc}.") from None
            except Exception as exc:
                if ours(exc):
                    raise
                if archive.needs_password() and self.password is not None:
                    raise ConversionError("wrong_password", f"The password is wrong for {self.label} (or the "
                                                            f"archive is damaged): {exc}.") from None
                raise damaged(f"{self.label} (7z)", exc) from None
            finally:
                archive.close()


def _factory(sink: Sink, by_name: dict[str, list[Entry]]) -> Any:
    """py7zr's writer factory: maps the name py7zr asks for back to our entry, whose sink writer gets the bytes."""
    from py7zr.io import Py7zIO, WriterFactory

    class Writer(Py7zIO):
        """What py7zr writes one entry into; finished when py7zr closes it after a good CRC."""

        def __init__(self, entry: Entry) -> None:
            self.size_ = 0
            self.target = sink.begin(entry, lambda: None)

        def write(self, s: bytes | bytearray) -> int:
            if self.target is not None:
                self.target.write(bytes(s))
            self.size_ += len(s)
            return len(s)

        def read(self, size: int | None = None) -> bytes:
            return b""

        def seek(self, offset: int, whence: int = 0) -> int:
            return 0

        def seekable(self) -> bool:
            return False

        def flush(self) -> None:
            pass

        def size(self) -> int:
            return self.size_

        def close(self) -> None:
            if self.target is not None:
                target, self.target = self.target, None
                target.finish()

    class Factory(WriterFactory):
        def create(self, filename: str) -> Py7zIO:
            queue = by_name.get(filename)
            if queue:
                return Writer(queue.pop(0))
            # a name py7zr made up that we could not foresee: the entry is still counted and checked
            return Writer(Entry(filename, entry_parts(filename), "file"))

    return Factory()


# --------------------------------------------------------------------------- tar


def _tar_kind(member: tarfile.TarInfo) -> Kind:
    if member.isreg():
        return "file"
    if member.isdir():
        return "dir"
    if member.issym() or member.islnk():
        return "link"
    return "special"  # character and block devices, FIFOs, GNU volume labels ...


def tar_entry(member: tarfile.TarInfo) -> Entry:
    kind = _tar_kind(member)
    return Entry(member.name, entry_parts(member.name), kind, member.size if kind == "file" else None, None,
                 float(member.mtime) if member.mtime else None, bool(member.mode & 0o111) and kind == "file",
                 False, member)


def forget_members(archive: tarfile.TarFile) -> None:
    """tarfile keeps every member it has read; going through once, the current one is all we need."""
    members: list[tarfile.TarInfo] = getattr(archive, "members", [])
    members.clear()


_TAR_ERRORS = (tarfile.TarError, EOFError, zlib.error, lzma.LZMAError, OSError, ValueError, struct.error,
               UnicodeError)


def read_tar(stream: Any, consumed: Callable[[], int], sink: Sink, label: str) -> None:
    """Go through a tar stream member by member (``stream`` may only seek forward), each regular file's data
    handed to the sink. ``consumed()`` tells the compressed bytes read so far, for each entry's ratio."""

    def broken(exc: BaseException | str) -> ConversionError:
        return damaged(f"{label} (tar)", exc)

    try:
        archive = tarfile.open(fileobj=stream, mode="r:")  # noqa: SIM115 - closed by the with below
    except ConversionError:
        raise
    except _TAR_ERRORS as exc:
        if from_sink(exc):
            raise
        raise broken(exc) from None
    with archive:
        while True:
            try:
                member = archive.next()
            except ConversionError:
                raise
            except _TAR_ERRORS as exc:
                raise broken(exc) from None
            if member is None:
                return
            entry = tar_entry(member)
            start = consumed()
            writer = sink.begin(entry, since(consumed, start))
            forget_members(archive)
            if writer is None:
                continue
            try:
                data = archive.extractfile(member)
            except _TAR_ERRORS as exc:
                raise broken(exc) from None
            if data is None:
                raise broken(f"no data for {shown(member.name)}")
            while True:
                try:
                    chunk = data.read(CHUNK)
                except ConversionError:
                    raise
                except _TAR_ERRORS as exc:
                    raise broken(exc) from None
                if not chunk:
                    break
                writer.write(chunk)
            writer.finish()


class TarReader(Reader):
    """tar, plain or behind gzip, bzip2, xz or zstd. A plain tar's headers are walked at job creation (seeking
    past the data); a compressed one is checked entry by entry as it inflates."""

    def __init__(self, source: InputFile, password: str | None, limits: ArchiveLimits, fmt: str | None = None) -> None:
        super().__init__(source, password, limits)
        self.fmt = fmt or source.format

    def listing(self) -> list[Entry] | None:
        if self.fmt != "tar":
            return None
        if self._listed is None:
            entries = []
            with open(self.path, "rb") as f:
                counted = CountingFile(f, max_read=MAX_READ, budget=HEADER_BUDGET)
                try:
                    archive = tarfile.open(fileobj=counted, mode="r:")  # type: ignore[call-overload]  # noqa: SIM115
                    with archive:
                        while (member := archive.next()) is not None:
                            entries.append(tar_entry(member))
                            forget_members(archive)
                            if len(entries) > self.limits.entries:
                                break
                except ConversionError:
                    raise
                except _TAR_ERRORS as exc:
                    raise damaged(f"{self.label} (tar)", exc) from None
            self._listed = entries
        return self._listed

    def check(self) -> int | None:
        if self.fmt == "tar.zst":
            with open(self.path, "rb") as f:
                zstd_frames(f)
        return super().check()

    def read_all(self, sink: Sink) -> None:
        with open(self.path, "rb") as f:
            self.size = f.seek(0, 2)
            f.seek(0)
            raw = CountingFile(f)
            self.raw = raw
            if self.fmt == "tar":
                stream: Any = CountingFile(f, max_read=MAX_READ)
                read_tar(stream, lambda: stream.count, sink, self.label)
                return
            if self.fmt == "tar.zst":
                zstd_frames(f)
            codec = self.fmt.removeprefix("tar.")
            # bounded in all and against the bytes read: what tarfile skips (members not taken) inflates too
            inflated = DecompressStream(raw, codec, self.limits.total_bytes + HEADER_BUDGET,
                                        max_ratio=self.limits.ratio)
            read_tar(inflated, lambda: raw.count, sink, self.label)

    def fraction(self, written: int, total: int | None) -> float:
        if self.fmt == "tar" or not getattr(self, "size", 0):
            return super().fraction(written, total)
        return self.raw.count / self.size


# --------------------------------------------------------------------------- a single compressed file


def gzip_name(path: Path) -> str | None:
    """The original file name a gzip header carries (FNAME), if any."""
    with open(path, "rb") as f:
        head = f.read(10)
        if len(head) < 10 or head[:2] != b"\x1f\x8b" or not head[3] & 0x08:
            return None
        if head[3] & 0x04:  # FEXTRA
            (length,) = struct.unpack("<H", f.read(2) or b"\0\0")
            f.seek(length, 1)
        name = bytearray()
        while len(name) < 1024:
            c = f.read(1)
            if not c or c == b"\x00":
                break
            name += c
        else:
            return None
    return name.decode("latin-1") or None


def single_name(source: InputFile) -> str:
    """The name of what a single compressed file holds: the gzip header's name when it is a plain name,
    else the file's own name without the compressor's extension."""
    if source.format == "gz":
        stored = gzip_name(source.path)
        if stored and "/" not in stored and "\\" not in stored and stored.strip(". ") and ".." not in stored:
            return fit_name(clean_component(stored))
    return fit_name(clean_component(archive_stem(source_name(source))))


class SingleReader(Reader):
    """A gzip, bzip2, xz or zstd file that is not a tar: one file comes out."""

    def read_all(self, sink: Sink) -> None:
        name = single_name(self.source)
        with open(self.path, "rb") as f:
            self.size = f.seek(0, 2)
            f.seek(0)
            declared = zstd_frames(f) if self.source.format == "zst" else None
            raw = CountingFile(f)
            self.raw = raw
            stream = DecompressStream(raw, self.source.format, self.limits.total_bytes + 1)
            entry = Entry(name, (name,), "file", declared)
            writer = sink.begin(entry, lambda: raw.count)
            if writer is None:
                return
            while chunk := stream.read(CHUNK):
                writer.write(chunk)
            writer.finish()
            if stream.trailing:
                self.notes.append(f"{self.label}: data after the end of the compressed stream was ignored.")

    def fraction(self, written: int, total: int | None) -> float:
        return self.raw.count / self.size if getattr(self, "size", 0) else 0.0


# --------------------------------------------------------------------------- which reader


def holds_tar(path: Path, fmt: str) -> bool:
    """Whether a compressed stream starts with a tar header, reading no more than that header inflates to."""
    try:
        with open(path, "rb") as f:
            head = DecompressStream(CountingFile(f), fmt, 512).read(512)
    except (ConversionError, OSError):
        return False
    return len(head) == 512 and head[257:262] == b"ustar"


def open_reader(source: InputFile, password: str | None, limits: ArchiveLimits) -> Reader:
    fmt = source.format
    if fmt == "zip":
        return ZipReader(source, password, limits)
    if fmt == "7z":
        return SevenZipReader(source, password, limits)
    if fmt in TAR_FORMATS:
        return TarReader(source, password, limits)
    if fmt in STREAM_FORMATS:
        if holds_tar(source.path, fmt):  # a first block too big for the sniffer's 4 KB to see into
            return TarReader(source, password, limits, f"tar.{fmt}")
        return SingleReader(source, password, limits)
    if fmt == "rar":
        from converters.tools.archives.rar import RarReader

        return RarReader(source, password, limits)
    raise ConversionError("unsupported_format", f"{source_name(source)} is {fmt}, not an archive FileKiln reads.")


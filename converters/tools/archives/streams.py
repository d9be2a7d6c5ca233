"""Byte streams the archive readers are built on: reads that are counted and bounded, decompression that never
produces more than asked for, and forward-only seeking for :mod:`tarfile` over a stream.

Every decompressor here is called with a bound on its output (``max_length``, or a reader's ``read(n)``), so a
few kilobytes that inflate to gigabytes come out a megabyte at a time, each megabyte counted by the caller
before the next is made.
"""

from __future__ import annotations

import bz2
import lzma
import zlib
from typing import Any, BinaryIO, Protocol

from converters.base import ConversionError
from converters.inputs.archives import RATIO_FLOOR

RAW_CHUNK = 32 * 1024  # compressed bytes fed at a time: the count of what an entry consumed is this precise
MAX_READ = 16 * 1024**2  # the most one read may ask for: a tar header asking more (pax record, long name) is refused
XZ_MEMLIMIT = 512 * 1024**2  # what an xz stream's dictionary may need
ZSTD_MAX_WINDOW = 1 << 27  # zstd's own default limit: 128 MiB


class Readable(Protocol):
    def read(self, n: int = -1, /) -> bytes: ...


def damaged(what: str, exc: BaseException | str) -> ConversionError:
    return ConversionError("damaged_input", f"{what} could not be read: {exc}. The file looks damaged or truncated.")


def from_sink(exc: BaseException) -> bool:
    """Whether ``exc`` was raised while writing what was read (a full disk), not while reading the archive."""
    return bool(getattr(exc, "filekiln_sink", False))


class CountingFile:
    """A file opened for reading, counting the bytes read from it (``count``): what a decompressor consumed."""

    def __init__(self, f: BinaryIO, max_read: int | None = None, budget: int | None = None) -> None:
        self.f = f
        self.count = 0
        self.max_read = max_read  # one read may not ask for more
        self.budget = budget  # all reads together may not return more

    def read(self, n: int = -1, /) -> bytes:
        if self.max_read is not None and (n is None or n < 0 or n > self.max_read):
            raise too_large_header(n)
        data = self.f.read(n)
        self.count += len(data)
        if self.budget is not None and self.count > self.budget:
            raise ConversionError("input_too_large", f"The archive's headers take more than {self.budget:,} bytes.")
        return data

    def readinto(self, buffer: Any) -> int:
        data = self.read(len(buffer))
        buffer[:len(data)] = data
        return len(data)

    def seek(self, offset: int, whence: int = 0) -> int:
        return self.f.seek(offset, whence)

    def tell(self) -> int:
        return self.f.tell()

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return self.f.seekable()

    def close(self) -> None:
        self.f.close()


def too_large_header(n: int | None) -> ConversionError:
    asked = f"{n:,} bytes" if n is not None and n >= 0 else "everything"
    return ConversionError("input_too_large", f"A header in the archive asks to read {asked} at once; at most "
                                              f"{MAX_READ:,} bytes are taken.")


class ForwardStream:
    """A stream read front to back, that :mod:`tarfile` may seek forward in (reading and dropping what it skips).

    ``max_output`` bounds everything produced, skipped bytes included; one read may ask for at most ``MAX_READ``.
    """

    def __init__(self, max_output: int | None = None) -> None:
        self.position = 0
        self.max_output = max_output

    def _produce(self, want: int) -> bytes:
        """Up to ``want`` more bytes; ``b""`` only at the end."""
        raise NotImplementedError

    def read(self, n: int = -1, /) -> bytes:
        if n is None or n < 0 or n > MAX_READ:
            raise too_large_header(n)
        out = bytearray()
        while len(out) < n:
            piece = self._produce(n - len(out))
            if not piece:
                break
            out += piece
        self.position += len(out)
        if self.max_output is not None and self.position > self.max_output:
            raise ConversionError("input_too_large", f"The archive expands past {self.max_output:,} bytes.")
        self._check_ratio()
        return bytes(out)

    def _check_ratio(self) -> None:
        """A stream that inflates checks what it made against what it read (:class:`DecompressStream`)."""

    def readinto(self, buffer: Any) -> int:
        data = self.read(len(buffer))
        buffer[:len(data)] = data
        return len(data)

    def tell(self) -> int:
        return self.position

    def seek(self, offset: int, whence: int = 0) -> int:
        target = offset if whence == 0 else self.position + offset if whence == 1 else -1
        if target < self.position:
            raise ConversionError("damaged_input", "The archive asks to go back in a stream that is read once "
                                                   "(its headers overlap).")
        while self.position < target:
            if not self.read(min(target - self.position, 1024**2)):
                break
        return self.position

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True


class PipeStream(ForwardStream):
    """An engine's output pipe, counted (``consumed``)."""

    def __init__(self, pipe: Readable, max_output: int | None = None) -> None:
        super().__init__(max_output)
        self.pipe = pipe

    @property
    def consumed(self) -> int:
        return self.position

    def _produce(self, want: int) -> bytes:
        return self.pipe.read(min(want, RAW_CHUNK * 8))


_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"


def zstd_frames(f: BinaryIO) -> int | None:
    """Walk the frames of a zstd file by their headers, inflating nothing; return the content size they declare
    (``None`` when a frame does not say). Raises ``damaged_input`` for a file that stops inside a frame: the
    zstd reader would just stop there without a word."""
    size = f.seek(0, 2)
    f.seek(0)
    total: int | None = 0
    at = 0
    while at < size:
        magic = f.read(4)
        if len(magic) < 4:
            raise damaged("The zstd stream", "it ends inside a frame header")
        if magic[:3] == b"\x2a\x4d\x18" and magic[3] & 0xF0 == 0x50:  # a skippable frame
            skip = int.from_bytes(f.read(4), "little")
            at = f.seek(skip, 1)
            continue
        if magic != _ZSTD_MAGIC:
            if magic.strip(b"\x00") == b"" and f.read().strip(b"\x00") == b"":
                break  # zero padding at the end
            raise damaged("The zstd stream", "something other than a zstd frame follows a frame")
        descriptor = f.read(1)
        if not descriptor:
            raise damaged("The zstd stream", "it ends inside a frame header")
        fhd = descriptor[0]
        fcs_flag, single, checksum, dict_flag = fhd >> 6, fhd >> 5 & 1, fhd >> 2 & 1, fhd & 3
        f.seek((0 if single else 1) + (0, 1, 2, 4)[dict_flag], 1)
        fcs_bytes = (1 if single else 0, 2, 4, 8)[fcs_flag]
        raw = f.read(fcs_bytes)
        if len(raw) != fcs_bytes:
            raise damaged("The zstd stream", "it ends inside a frame header")
        if fcs_bytes and total is not None:
            total += int.from_bytes(raw, "little") + (256 if fcs_bytes == 2 else 0)
        else:
            total = None
        while True:
            header = f.read(3)
            if len(header) < 3:
                raise damaged("The zstd stream", "it ends inside a frame")
            value = int.from_bytes(header, "little")
            last, kind, length = value & 1, value >> 1 & 3, value >> 3
            if kind == 3:
                raise damaged("The zstd stream", "a block of a reserved type")
            end = f.seek(1 if kind == 1 else length, 1)
            if end > size:
                raise damaged("The zstd stream", "it ends inside a frame")
            if last:
                break
        at = f.seek(4 if checksum else 0, 1)
        if at > size:
            raise damaged("The zstd stream", "it ends before the frame's checksum")
    f.seek(0)
    return total


_MAGIC = {"gz": b"\x1f\x8b", "bz2": b"BZh", "xz": b"\xfd7zXZ\x00"}


class DecompressStream(ForwardStream):
    """What a gzip, bzip2, xz or zstd stream inflates to, read in bounded pieces.

    Concatenated members (``cat a.gz b.gz``, parallel compressors' output) are read one after the other, as
    ``gunzip`` and ``xz -d`` do; zero padding after the last member is ignored. ``trailing`` tells whether
    anything else followed (it is ignored too). A stream that ends before its end marker is ``damaged_input``.
    """

    def __init__(self, raw: CountingFile, fmt: str, max_output: int | None = None,
                 max_ratio: int | None = None) -> None:
        super().__init__(max_output)
        self.raw = raw
        self.fmt = fmt
        self.max_ratio = max_ratio  # of everything inflated, skipped bytes too, to what was read of the file
        self.pending = b""
        self.done = False
        self.trailing = False
        self.decompressor: Any = None
        self.zstd: Any = None
        if fmt == "zst":
            import zstandard

            source: Any = raw
            self.zstd = zstandard.ZstdDecompressor(max_window_size=ZSTD_MAX_WINDOW).stream_reader(
                source, read_size=RAW_CHUNK, read_across_frames=True, closefd=False)
        else:
            self.decompressor = self._new()

    @property
    def consumed(self) -> int:
        return self.raw.count

    def _check_ratio(self) -> None:
        if self.max_ratio is not None and self.position > max(RATIO_FLOOR, self.max_ratio * self.consumed):
            raise ConversionError("input_too_large", f"The archive expands {self.position:,} bytes from "
                                                     f"{self.consumed:,} (more than {self.max_ratio}:1): a "
                                                     "decompression bomb.")

    def _new(self) -> Any:
        if self.fmt == "gz":
            return zlib.decompressobj(16 + zlib.MAX_WBITS)
        if self.fmt == "bz2":
            return bz2.BZ2Decompressor()
        if self.fmt == "xz":
            return lzma.LZMADecompressor(memlimit=XZ_MEMLIMIT)
        raise ValueError(self.fmt)

    def _produce(self, want: int) -> bytes:
        try:
            return self._zstd(want) if self.zstd is not None else self._inflate(want)
        except (zlib.error, OSError, EOFError, lzma.LZMAError, ValueError) as exc:
            if from_sink(exc) or isinstance(exc, ConversionError):
                raise
            raise damaged(f"The {self.fmt} stream", exc) from None

    def _zstd(self, want: int) -> bytes:
        import zstandard

        try:
            data: bytes = self.zstd.read(want)
        except zstandard.ZstdError as exc:
            raise damaged("The zstd stream", exc) from None
        return data

    def _inflate(self, want: int) -> bytes:
        while not self.done:
            d = self.decompressor
            if self.fmt == "gz":
                if not self.pending:
                    self.pending = self.raw.read(RAW_CHUNK)
                    if not self.pending:
                        raise damaged("The gz stream", "it ends before its end marker")
                out = d.decompress(self.pending, want)
                self.pending = d.unconsumed_tail
            else:
                data = self.pending
                self.pending = b""
                if not data and d.needs_input:
                    data = self.raw.read(RAW_CHUNK)
                    if not data:
                        raise damaged(f"The {self.fmt} stream", "it ends before its end marker")
                out = d.decompress(data, want)
            if d.eof:
                self._next_member(d.unused_data)
            if out:
                return bytes(out)
        return b""

    def _next_member(self, rest: bytes) -> None:
        """After a member's end: start the next one, or finish (at the end of the file, or before padding or
        anything that is not another member)."""
        magic = _MAGIC[self.fmt]
        while True:
            rest = rest.lstrip(b"\x00")
            if len(rest) >= len(magic):
                break
            more = self.raw.read(RAW_CHUNK)
            if not more:
                if rest:
                    self.trailing = True
                self.done = True
                return
            rest += more
        if not rest.startswith(magic):
            self.trailing = True
            self.done = True
            return
        self.decompressor = self._new()
        self.pending = rest

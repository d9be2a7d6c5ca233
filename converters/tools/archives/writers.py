"""Writing archives file by file: ZIP, 7z and tar (plain, gzip, xz or zstd), streamed, never held in memory."""

from __future__ import annotations

import gzip
import lzma
import tarfile
import time
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO

from converters.tools.archives.common import CANCEL_EVERY, CHUNK, codec_level

ZIP_EPOCH = (1980, 1, 1, 0, 0, 0)


class ArchiveWriter:
    """One archive being written to ``path`` (a temporary name: the caller renames it when it is complete).

    :meth:`add` copies a file in under ``arcname`` (``/``-separated), reporting bytes through ``on_bytes`` and
    calling ``check`` (the cancel flag) every few megabytes; :meth:`close` completes the archive.
    """

    def __init__(self, fmt: str, path: Path, level: int, check: Callable[[], None] = lambda: None) -> None:
        self.fmt = fmt
        self.path = path
        self.level = codec_level(fmt, level)
        self.check = check
        self._zip: zipfile.ZipFile | None = None
        self._7z: Any = None
        self._tar: tarfile.TarFile | None = None
        self._layers: list[Any] = []  # what the tar stream goes through, innermost last
        if fmt == "zip":
            method = zipfile.ZIP_STORED if level == 0 else zipfile.ZIP_DEFLATED
            self._zip = zipfile.ZipFile(path, "w", method, allowZip64=True,
                                        compresslevel=None if level == 0 else self.level, strict_timestamps=False)
        elif fmt == "7z":
            import py7zr

            filters = [{"id": py7zr.FILTER_COPY}] if level == 0 else [{"id": py7zr.FILTER_LZMA2, "preset": self.level}]
            self._7z = py7zr.SevenZipFile(path, "w", filters=filters)
        else:
            raw: BinaryIO = open(path, "wb")  # noqa: SIM115 - closed in close()/abort()
            self._layers.append(raw)
            stream: Any = raw
            if fmt == "tar.gz":
                stream = gzip.GzipFile(filename="", mode="wb", fileobj=raw, compresslevel=self.level, mtime=0)
            elif fmt == "tar.xz":
                stream = lzma.LZMAFile(raw, "wb", preset=self.level)  # noqa: SIM115 - closed in close()
            elif fmt == "tar.zst":
                import zstandard

                stream = _HeaderFirst(zstandard.ZstdCompressor(level=self.level).stream_writer(raw, closefd=False))
            if stream is not raw:
                self._layers.append(stream)
            self._tar = tarfile.open(fileobj=stream, mode="w|", format=tarfile.PAX_FORMAT)  # noqa: SIM115

    def add(self, source: Path, arcname: str, *, mtime: float | None = None, executable: bool = False,
            on_bytes: Callable[[int], None] = lambda n: None) -> None:
        size = source.stat().st_size
        when = mtime if mtime is not None else time.time()
        mode = 0o755 if executable else 0o644
        if self._zip is not None:
            info = zipfile.ZipInfo(arcname, _zip_time(when))
            info.file_size = size
            info.external_attr = (0o100000 | mode) << 16
            info.create_system = 3
            info.compress_type = self._zip.compression
            if self._zip.compression == zipfile.ZIP_DEFLATED:
                setattr(info, "_compresslevel", self.level)  # noqa: B010 - zipfile reads it from there
            with open(source, "rb") as src, self._zip.open(info, "w", force_zip64=size > 2**31) as dst:
                self._copy(src, dst, on_bytes)
        elif self._7z is not None:
            self.check()
            self._7z.write(source, arcname)
            on_bytes(size)
        else:
            assert self._tar is not None
            member = tarfile.TarInfo(arcname)
            member.size, member.mtime, member.mode, member.type = size, int(when), mode, tarfile.REGTYPE
            with open(source, "rb") as src:
                self._tar.addfile(member, _Reading(src, self.check, on_bytes))

    def _copy(self, src: BinaryIO, dst: Any, on_bytes: Callable[[int], None]) -> None:
        since = 0
        while chunk := src.read(CHUNK):
            dst.write(chunk)
            on_bytes(len(chunk))
            since += len(chunk)
            if since >= CANCEL_EVERY:
                since = 0
                self.check()

    def close(self) -> None:
        """Complete the archive (central directory, header, end of stream)."""
        if self._zip is not None:
            self._zip.close()
        elif self._7z is not None:
            self._7z.close()
        else:
            assert self._tar is not None
            self._tar.close()
            for layer in reversed(self._layers):
                layer.close()

    def abort(self) -> None:
        """Let go of the half-written archive (the caller removes the file)."""
        for closing in (self._zip, self._7z, self._tar, *reversed(self._layers)):
            if closing is None:
                continue
            try:
                closing.close()
            except Exception:  # noqa: BLE001, S110 - a half-written archive may fail to close; it is removed anyway
                pass


def _zip_time(when: float) -> tuple[int, int, int, int, int, int]:
    t = time.localtime(when)
    stamp = (t.tm_year, t.tm_mon, t.tm_mday, t.tm_hour, t.tm_min, t.tm_sec)
    if stamp < ZIP_EPOCH:
        return ZIP_EPOCH
    return min(stamp, (2107, 12, 31, 23, 59, 58))


class _Reading:
    """A file read by tarfile, counted and looking at the cancel flag as it goes."""

    def __init__(self, f: BinaryIO, check: Callable[[], None], on_bytes: Callable[[int], None]) -> None:
        self.f = f
        self.check = check
        self.on_bytes = on_bytes
        self.since = 0

    def read(self, n: int = -1) -> bytes:
        data = self.f.read(n)
        self.on_bytes(len(data))
        self.since += len(data)
        if self.since >= CANCEL_EVERY:
            self.since = 0
            self.check()
        return data


class _HeaderFirst:
    """A zstd writer whose first block holds only the first tar header: a reader that inflates only the first
    kilobytes (FileKiln's own sniffer does, 4 KB) then sees a tar inside, whatever the first file is."""

    def __init__(self, writer: Any) -> None:
        self.writer = writer
        self.first = True

    def write(self, data: bytes) -> int:
        if self.first and len(data) > 512:
            import zstandard

            self.first = False
            self.writer.write(data[:512])
            self.writer.flush(zstandard.FLUSH_BLOCK)
            self.writer.write(data[512:])
            return len(data)
        self.first = False
        written: int = self.writer.write(data)
        return written

    def close(self) -> None:
        self.writer.close()

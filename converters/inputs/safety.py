"""Checks every input passes before any engine sees it: archives that are bombs or escape.

ZIP-based formats (DOCX, XLSX, PPTX, ODF, EPUB, CBZ, XPS) are read by engines
that unpack them. Their central directory tells, without unpacking anything, how
many entries there are, how big they claim to be, what they are called and
whether they are symlinks. What it says about sizes is the sender's word: each
compressed entry is then inflated, counting, and stopped one byte past its declared
size, so an entry that claims 1000 bytes and inflates to 2 GiB costs 1001 bytes of
work here instead of reaching an engine that believes the data rather than the header.

A plain ``zip`` reaches only the archive tools, which read every entry themselves, counting as they
inflate and skipping links (:mod:`converters.inputs.archives`): for it this check stops at the structure
(readable, no name pointing outside) and leaves sizes, links and inflation to them, under their own limits.
"""

from __future__ import annotations

import stat
import struct
import zipfile
import zlib
from pathlib import Path, PurePosixPath
from typing import BinaryIO

from converters.base import ConversionError
from converters.inputs.archives import check_zip_directory

ZIP_FORMATS = frozenset({"zip", "docx", "xlsx", "pptx", "odt", "ods", "odp", "epub", "cbz", "xps"})
MAX_ENTRIES = 20_000
MAX_TOTAL_UNCOMPRESSED = 2 * 1024**3
MAX_RATIO = 200  # uncompressed / compressed, for entries big enough to matter
RATIO_FLOOR = 16 * 1024**2


def check_input(path: Path, fmt: str | None) -> None:
    """Raise :class:`ConversionError` when ``path`` must not reach an engine."""
    if fmt in ZIP_FORMATS:
        check_archive(path, contents=fmt != "zip")


def check_archive(path: Path, *, contents: bool = True) -> None:
    """Refuse a ZIP container that is unreadable, names an entry outside itself, or (``contents``) holds a
    symbolic link, claims too much or inflates past what it claims."""
    try:
        check_zip_directory(path, MAX_ENTRIES)  # before zipfile builds an object per entry
        with zipfile.ZipFile(path) as zf:
            infos = zf.infolist()
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        raise ConversionError("damaged_input", f"The file is not a readable ZIP container: {exc}.") from None
    if len(infos) > MAX_ENTRIES:
        raise ConversionError("input_too_large", f"The archive has {len(infos)} entries; the limit is {MAX_ENTRIES}.")
    total = 0
    for info in infos:
        name = info.filename.replace("\\", "/")
        parts = PurePosixPath(name).parts
        if name.startswith("/") or ".." in parts or (parts and parts[0].endswith(":")):
            raise ConversionError("unsafe_archive", f"The archive has an entry that points outside it: {name!r}.")
        if not contents:
            continue
        if stat.S_ISLNK(info.external_attr >> 16):
            raise ConversionError("unsafe_archive", f"The archive has a symbolic link entry: {name!r}.")
        total += info.file_size
        if info.file_size > RATIO_FLOOR and info.file_size > MAX_RATIO * max(info.compress_size, 1):
            raise ConversionError("input_too_large", f"The archive entry {name!r} expands {info.file_size} bytes "
                                  f"from {info.compress_size}: a decompression bomb.")
    if not contents:
        return
    if total > MAX_TOTAL_UNCOMPRESSED:
        raise ConversionError("input_too_large", f"The archive would expand to {total} bytes; the limit is "
                              f"{MAX_TOTAL_UNCOMPRESSED}.")
    try:
        with open(path, "rb") as f:
            for info in infos:
                if info.flag_bits & 0x1:  # encrypted: the engine asks for the password, or fails
                    continue
                if inflated_size(f, info, info.file_size + 1) > info.file_size:
                    raise ConversionError(
                        "input_too_large", f"The archive entry {info.filename!r} expands past the "
                        f"{info.file_size} bytes it declares: a decompression bomb.")
    except (OSError, ValueError, zlib.error, struct.error) as exc:
        raise ConversionError("damaged_input", f"The file is not a readable ZIP container: {exc}.") from None


CHUNK = 1024 * 1024


def inflated_size(f: BinaryIO, info: zipfile.ZipInfo, cap: int) -> int:
    """How many bytes ``info``'s data inflates to, counting no further than ``cap``.

    Deflate is what every ZIP-based document format uses. A stored entry is its size on disk;
    other methods (bzip2, LZMA) count as declared: the engines that unpack these formats do
    not read them, and our own readers go through :mod:`zipfile`, which stops at the declared size.
    """
    if info.compress_type != zipfile.ZIP_DEFLATED:
        return info.file_size
    f.seek(data_offset(f, info))
    inflate = zlib.decompressobj(-15)
    left, size, pending = info.compress_size, 0, b""
    while size < cap and not inflate.eof:
        if not pending:
            pending = f.read(min(CHUNK, left)) if left > 0 else b""
            if not pending:
                break
            left -= len(pending)
        size += len(inflate.decompress(pending, min(CHUNK, cap - size)))
        pending = inflate.unconsumed_tail
    return size


def data_offset(f: BinaryIO, info: zipfile.ZipInfo) -> int:
    """Where an entry's compressed data starts: after its local header, whose own lengths count."""
    f.seek(info.header_offset)
    header = f.read(30)
    if len(header) != 30 or header[:4] != b"PK\x03\x04":
        raise ValueError(f"no local header for {info.filename!r}")
    name_length, extra_length = struct.unpack("<HH", header[26:30])
    return info.header_offset + 30 + name_length + extra_length

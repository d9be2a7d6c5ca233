"""Checks every input passes before any engine sees it: archives that are bombs or escape.

ZIP-based formats (DOCX, XLSX, PPTX, ODF, EPUB, CBZ, XPS) are read by engines
that unpack them. Their central directory tells, without unpacking anything, how
many entries there are, how big they claim to be, what they are called and
whether they are symlinks.
"""

from __future__ import annotations

import stat
import zipfile
from pathlib import Path, PurePosixPath

from converters.base import ConversionError

ZIP_FORMATS = frozenset({"zip", "docx", "xlsx", "pptx", "odt", "ods", "odp", "epub", "cbz", "xps"})
MAX_ENTRIES = 20_000
MAX_TOTAL_UNCOMPRESSED = 2 * 1024**3
MAX_RATIO = 200  # uncompressed / compressed, for entries big enough to matter
RATIO_FLOOR = 16 * 1024**2


def check_input(path: Path, fmt: str | None) -> None:
    """Raise :class:`ConversionError` when ``path`` must not reach an engine."""
    if fmt in ZIP_FORMATS:
        check_archive(path)


def check_archive(path: Path) -> None:
    try:
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
        if stat.S_ISLNK(info.external_attr >> 16):
            raise ConversionError("unsafe_archive", f"The archive has a symbolic link entry: {name!r}.")
        total += info.file_size
        if info.file_size > RATIO_FLOOR and info.file_size > MAX_RATIO * max(info.compress_size, 1):
            raise ConversionError("input_too_large", f"The archive entry {name!r} expands {info.file_size} bytes "
                                  f"from {info.compress_size}: a decompression bomb.")
    if total > MAX_TOTAL_UNCOMPRESSED:
        raise ConversionError("input_too_large", f"The archive would expand to {total} bytes; the limit is "
                              f"{MAX_TOTAL_UNCOMPRESSED}.")

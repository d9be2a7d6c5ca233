"""Checks every archive entry passes, for the tools that unpack archives (``converters.tools.archives``).

Two moments, two kinds of check:

* **From the directory** (ZIP central directory, 7z header, tar headers, an external lister's listing), before
  anything is inflated: how many entries there are, what they are called, how big they say they are and how
  much they claim to expand. :func:`check_listing` runs these at job creation where the directory is cheap to
  read, and again when the job runs.
* **While inflating**: what a header says about sizes is the sender's word. :class:`Meter` counts the bytes as
  they come out of the decompressor, against the entry's declared size (one byte past it is enough to stop),
  the total limit and the ratio limit, so a bomb costs at most a few megabytes of work before it is stopped.

Limits are settings (``max_archive_entries``, ``max_archive_bytes``, ``max_archive_ratio``) read from
``ToolEnv.settings``, with the defaults below.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from converters.base import ConversionError, ToolEnv

DEFAULT_MAX_ENTRIES = 10_000  # entries of every kind (files, folders, links) one archive may hold
DEFAULT_MAX_BYTES = 2 * 1024**3  # what all the files of one archive may expand to, together
DEFAULT_MAX_RATIO = 200  # expanded / compressed, for an entry past RATIO_FLOOR
RATIO_FLOOR = 1024**2  # smaller entries may compress as well as they like
MAX_DIRECTORY_BYTES_PER_ENTRY = 1024  # a ZIP central directory larger than this per allowed entry is refused unread

Kind = Literal["file", "dir", "link", "special"]
_DRIVE = re.compile(r"^[A-Za-z]:")


@dataclass(frozen=True)
class ArchiveLimits:
    entries: int = DEFAULT_MAX_ENTRIES
    total_bytes: int = DEFAULT_MAX_BYTES
    ratio: int = DEFAULT_MAX_RATIO
    ratio_floor: int = RATIO_FLOOR


def archive_limits(env: ToolEnv | None) -> ArchiveLimits:
    """The limits here: settings ``max_archive_entries``, ``max_archive_bytes``, ``max_archive_ratio``."""
    settings = env.settings if env is not None else {}

    def setting(key: str, default: int) -> int:
        value = settings.get(key)
        return int(value) if value else default

    return ArchiveLimits(entries=setting("max_archive_entries", DEFAULT_MAX_ENTRIES),
                         total_bytes=setting("max_archive_bytes", DEFAULT_MAX_BYTES),
                         ratio=setting("max_archive_ratio", DEFAULT_MAX_RATIO))


@dataclass(frozen=True)
class EntryInfo:
    """One entry as the archive's directory describes it."""

    name: str  # as stored, for messages
    kind: Kind
    size: int | None = None  # declared expanded size; None when the format does not say
    packed: int | None = None  # declared compressed size; None when unknown (a solid block, a stream)
    group: object = None  # entries compressed together (a solid block): their ratio is judged together


def shown(name: str) -> str:
    """An entry name fit for a message: control characters escaped, long names cut."""
    text = repr(name)
    return text if len(text) <= 120 else text[:116] + "...'"


def entry_parts(name: str) -> tuple[str, ...]:
    """The path components of an entry name, ``.`` and empty ones dropped.

    Raises ``unsafe_archive`` for a name that points outside the archive: absolute (``/etc/passwd``,
    ``\\\\server\\share``), a drive (``C:``) or any ``..`` component, whatever follows it. Backslashes count as
    separators, as Windows extractors take them.
    """
    text = name.replace("\\", "/")
    parts = text.split("/")
    if text.startswith("/") or (parts and _DRIVE.match(parts[0])) or ".." in parts:
        raise ConversionError("unsafe_archive", f"The archive has an entry that points outside it: {shown(name)}. "
                                                "Nothing was extracted.")
    return tuple(part for part in parts if part not in ("", "."))


def too_many(count: int, limits: ArchiveLimits) -> ConversionError:
    return ConversionError("input_too_large", f"The archive has more than {limits.entries:,} entries "
                                              f"({count:,} counted); the limit is {limits.entries:,}.")


def too_big(total: int, limits: ArchiveLimits) -> ConversionError:
    return ConversionError("input_too_large", f"The archive would expand to more than {limits.total_bytes:,} bytes "
                                              f"({total:,} so far); the limit is {limits.total_bytes:,}.")


def a_bomb(what: str, size: int, packed: int, limits: ArchiveLimits) -> ConversionError:
    return ConversionError("input_too_large", f"{what} expands {size:,} bytes from {packed:,} (more than "
                                              f"{limits.ratio}:1): a decompression bomb.")


def check_listing(entries: Iterable[EntryInfo], limits: ArchiveLimits,
                  archive_bytes: int | None = None) -> tuple[int, int]:
    """Check what an archive's directory says, before anything is inflated; return (entries, declared bytes).

    Every entry counts against the entry limit (folders and links too); every name must stay inside the
    archive; the declared sizes of the files must fit the total; an entry (or a solid block) past the ratio
    floor must not claim to expand more than the ratio limit; and, given the archive's size, neither may
    all of them together: entries each under the floor, sharing one block of compressed data (a ZIP's
    overlapping entries), still expand no more than the ratio allows the whole archive.
    """
    count = total = 0
    groups: dict[int, list[int]] = {}  # id(group) -> [size, packed]
    first: dict[int, str] = {}
    for entry in entries:
        count += 1
        if count > limits.entries:
            raise too_many(count, limits)
        entry_parts(entry.name)
        if entry.group is not None:  # every entry of a solid block counts for its ratio, links too
            sums = groups.setdefault(id(entry.group), [0, 0])
            first.setdefault(id(entry.group), entry.name)
            sums[0] += entry.size or 0
            sums[1] += entry.packed or 0
        if entry.kind != "file" or entry.size is None:
            continue
        total += entry.size
        if total > limits.total_bytes:
            raise too_big(total, limits)
        ceiling = max(limits.ratio_floor, limits.ratio * max(entry.packed or 0, 1))
        if entry.group is None and entry.packed is not None and entry.size > ceiling:
            raise a_bomb(f"The archive entry {shown(entry.name)}", entry.size, entry.packed, limits)
    for key, (size, packed) in groups.items():
        if size > max(limits.ratio_floor, limits.ratio * max(packed, 1)):
            raise a_bomb(f"The solid block starting at {shown(first[key])}", size, packed, limits)
    if archive_bytes is not None and total > max(limits.ratio_floor, limits.ratio * max(archive_bytes, 1)):
        raise a_bomb("The archive", total, archive_bytes, limits)
    return count, total


class Meter:
    """Counts entries and the bytes they inflate to, as they inflate, against the limits.

    One meter per job: the entry limit and the total hold across every archive the job unpacks.
    """

    def __init__(self, limits: ArchiveLimits) -> None:
        self.limits = limits
        self.entries = 0
        self.total = 0

    def entry(self, name: str, declared: int | None, packed: Callable[[], int | None] = lambda: None) -> EntryMeter:
        """Start counting a new entry; refuse it at once when its declared size cannot fit what is left."""
        self.entries += 1
        if self.entries > self.limits.entries:
            raise too_many(self.entries, self.limits)
        if declared is not None and self.total + declared > self.limits.total_bytes:
            raise too_big(self.total + declared, self.limits)
        return EntryMeter(self, name, declared, packed)


class EntryMeter:
    """The count of one entry: :meth:`add` is called with each piece as it comes out of the decompressor."""

    def __init__(self, meter: Meter, name: str, declared: int | None, packed: Callable[[], int | None]) -> None:
        self.meter = meter
        self.name = name
        self.declared = declared
        self.packed = packed  # compressed bytes this entry has consumed so far, when known
        self.size = 0

    def add(self, count: int) -> None:
        limits = self.meter.limits
        self.size += count
        self.meter.total += count
        if self.declared is not None and self.size > self.declared:
            raise ConversionError("input_too_large", f"The archive entry {shown(self.name)} expands past the "
                                                     f"{self.declared:,} bytes it declares: a decompression bomb.")
        if self.meter.total > limits.total_bytes:
            raise too_big(self.meter.total, limits)
        if self.size > limits.ratio_floor:
            packed = self.packed()
            if packed is not None and self.size > limits.ratio * max(packed, 1):
                raise a_bomb(f"The archive entry {shown(self.name)}", self.size, packed, limits)


# --------------------------------------------------------------------------- a ZIP's directory, unparsed

_EOCD = b"PK\x05\x06"
_ZIP64_LOCATOR = b"PK\x06\x07"
_ZIP64_EOCD = b"PK\x06\x06"


def zip_directory_size(path: Path) -> tuple[int, int] | None:
    """(entries, bytes) of a ZIP's central directory, read from its end records only; ``None`` when not found.

    :mod:`zipfile` reads the whole central directory into memory and builds an object per entry before anyone
    can count them: this looks first, so a directory of millions of entries is refused unread.
    """
    with open(path, "rb") as f:
        size = f.seek(0, 2)
        back = min(size, 22 + 65535)
        f.seek(size - back)
        tail = f.read(back)
        at = tail.rfind(_EOCD)
        if at < 0 or len(tail) < at + 22:
            return None
        entries, cd_size = struct.unpack_from("<xxxxxxxxHI", tail, at + 2)
        locator = at - 20
        if locator >= 0 and tail[locator:locator + 4] == _ZIP64_LOCATOR:
            (offset,) = struct.unpack_from("<Q", tail, locator + 8)
            if offset < size:
                f.seek(offset)
                record = f.read(56)
                if len(record) == 56 and record[:4] == _ZIP64_EOCD:
                    entries, cd_size = struct.unpack_from("<QQ", record, 32)
        return entries, cd_size


def check_zip_directory(path: Path, max_entries: int) -> None:
    """Refuse (``input_too_large``) a ZIP whose end records announce more entries, or a bigger central directory,
    than ``max_entries`` entries need, before :mod:`zipfile` parses it."""
    found = zip_directory_size(path)
    if found is None:
        return  # zipfile says what is wrong
    entries, cd_size = found
    if entries > max_entries:
        raise ConversionError("input_too_large", f"The archive has {entries:,} entries; the limit is {max_entries:,}.")
    if cd_size > max(max_entries, 1) * MAX_DIRECTORY_BYTES_PER_ENTRY:
        raise ConversionError("input_too_large", f"The archive's directory is {cd_size:,} bytes, more than "
                                                 f"{max_entries:,} entries need.")

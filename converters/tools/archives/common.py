"""What the archive tools share: formats, engines, the entry model, output names and the ``level`` param."""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from pydantic import Field

from converters.base import Engine, InputFile, Tool, ToolEnv
from converters.inputs.archives import Kind

# Formats read. "gz" .. "zst" are single compressed files (no tar inside): one file comes out.
TAR_FORMATS = ("tar", "tar.gz", "tar.bz2", "tar.xz", "tar.zst")
STREAM_FORMATS = ("gz", "bz2", "xz", "zst")
READABLE = ("zip", "7z", *TAR_FORMATS, *STREAM_FORMATS, "rar")
WRITABLE = ("zip", "7z", "tar.gz", "tar.xz", "tar.zst", "tar")
EXTENSIONS = {fmt: fmt for fmt in WRITABLE}

CHUNK = 1024 * 1024  # bytes read or written at a time
CANCEL_EVERY = 8 * CHUNK  # bytes between two looks at the cancel flag within one entry

PY7ZR = Engine("py7zr", module="py7zr", distribution="py7zr", install_hint="pip install py7zr")
ZSTANDARD = Engine("zstandard", module="zstandard", distribution="zstandard", install_hint="pip install zstandard")
UNAR = Engine("unar", executable="unar", install_hint=(
    "It reads RAR archives (including encrypted and solid ones): apt install unar, brew install unar, "
    "or The Unarchiver's command-line tools on Windows."))
BSDTAR = Engine("bsdtar", executable="bsdtar", install_hint=(
    "It reads unencrypted RAR archives: apt install libarchive-tools (macOS and Windows 10+ ship it as tar)."))

_WINDOWS_RESERVED = {"con", "prn", "aux", "nul", *(f"com{n}" for n in range(1, 10)), *(f"lpt{n}" for n in range(1, 10))}
_FORBIDDEN = set('<>:"/\\|?*')
MAX_NAME_BYTES = 200  # UTF-8 bytes of one output name: below every file system's 255, with room for "-99"
MAX_EXTENSION = 16


@dataclass
class Entry:
    """One entry of an archive being read, its name already checked (``parts`` stays inside the archive)."""

    name: str  # as stored
    parts: tuple[str, ...]
    kind: Kind
    size: int | None = None  # declared
    packed: int | None = None  # declared compressed size, when the format says
    mtime: float | None = None
    executable: bool = False
    encrypted: bool = False
    key: Any = None  # the reader's own handle on the entry (a ZipInfo, an index ...)
    group: Any = None  # entries compressed together (a solid block), judged together for their ratio


# --------------------------------------------------------------------------- names


def clean_component(text: str) -> str:
    """One path component, safe as a file name everywhere: no control or invisible formatting characters
    (bidi overrides, zero-width), none of ``<>:"/\\|?*``, no leading dot or space, no trailing dot or space,
    not a Windows device name (``CON``, ``NUL``, ``COM1`` ...); ``_`` when nothing is left."""
    text = unicodedata.normalize("NFC", text)
    kept = []
    for ch in text:
        category = unicodedata.category(ch)
        if category in ("Cc", "Cf", "Zl", "Zp", "Cs", "Co", "Cn"):
            continue
        kept.append("_" if ch in _FORBIDDEN else ch)
    text = "".join(kept).lstrip(". ").rstrip(". ")
    if text.split(".", 1)[0].lower() in _WINDOWS_RESERVED:
        text = "_" + text
    return text or "_"


def clean_member(text: str) -> str:
    """One path component inside a new archive: only control and invisible formatting characters go (and
    undecodable bytes); dots, colons and the rest stay as the source archive had them."""
    kept = "".join(ch for ch in text if unicodedata.category(ch) not in ("Cc", "Cf", "Zl", "Zp", "Cs"))
    return kept if kept.strip(". ") else kept.replace(".", "_") or "_"


def fit_name(name: str, limit: int = MAX_NAME_BYTES) -> str:
    """``name`` cut to ``limit`` UTF-8 bytes, keeping its extension (up to 16 characters) when it has one."""
    if len(name.encode("utf-8")) <= limit:
        return name
    stem, dot, ext = name.rpartition(".")
    if not dot or not stem or len(ext) > MAX_EXTENSION:
        stem, dot, ext = name, "", ""
    room = limit - len((dot + ext).encode("utf-8"))
    cut = stem.encode("utf-8")[:room].decode("utf-8", "ignore").rstrip(". ")
    return (cut or "_") + dot + ext


def flat_name(parts: Sequence[str], keep_folders: bool = True) -> str:
    """The output name of an entry: its folders and name joined with ``__`` (``docs/img/a.png`` ->
    ``docs__img__a.png``), or only its own name; each component cleaned, the whole cut to 200 bytes."""
    cleaned = [clean_component(part) for part in (parts if keep_folders else parts[-1:])]
    return fit_name("__".join(cleaned))


class UniqueNames:
    """Hands out names that were not handed out yet: ``a.txt``, then ``a-2.txt``, ``a-3.txt`` ...

    Compared without regard to case, so two names never collide on a case-insensitive file system.
    """

    def __init__(self) -> None:
        self.taken: set[str] = set()

    def claim(self, name: str) -> str:
        """``name`` itself, or the first free ``stem-N.ext``; in a ``/``-separated path only its last
        component changes (``dir/a.txt`` -> ``dir/a-2.txt``)."""
        folder, slash, own = name.rpartition("/")
        candidate, n = name, 2
        stem, dot, ext = own.rpartition(".")
        if not dot or not stem:
            stem, dot, ext = own, "", ""
        while candidate.casefold() in self.taken:
            candidate = folder + slash + fit_name(f"{stem}-{n}{dot}{ext}", MAX_NAME_BYTES + 8)
            n += 1
        self.taken.add(candidate.casefold())
        return candidate


_DOUBLE = (".tar.gz", ".tar.bz2", ".tar.xz", ".tar.zst", ".tar.zstd")
_SINGLE = (".tgz", ".tbz", ".tbz2", ".txz", ".tzst", ".zip", ".7z", ".rar", ".tar",
           ".gz", ".gzip", ".bz2", ".bzip2", ".xz", ".zst", ".zstd")


def archive_stem(name: str) -> str:
    """The name of an archive without its archive extension(s): ``photos.tar.gz`` -> ``photos``."""
    base = Path(name.replace("\\", "/")).name
    lower = base.lower()
    for suffix in (*_DOUBLE, *_SINGLE):
        if lower.endswith(suffix) and len(base) > len(suffix):
            return base[: -len(suffix)]
    return base


def source_name(source: InputFile) -> str:
    return source.name or source.path.name


# --------------------------------------------------------------------------- params and the base class


def level_field() -> Any:
    return Field(6, ge=0, le=9, description=(
        "Compression level, 0 (none, fastest) to 9 (smallest). Mapped to each format's own scale: "
        "zip deflate 0-9 (0 stores), 7z LZMA2 presets 0-9 (0 stores), gzip and xz 0-9, zstd 1-19. "
        "Plain tar does not compress."))


def codec_level(fmt: str, level: int) -> int:
    """``level`` (0-9) on the scale of the format's compressor."""
    if fmt == "tar.zst":
        return min(19, 1 + 2 * level)  # 0 -> 1, 6 -> 13, 9 -> 19
    return level


class ArchiveTool(Tool):
    """Base of the archive tools: the ``archives`` category; py7zr and zstandard, RAR readers optional."""

    category: ClassVar[str] = "archives"
    engines: ClassVar[tuple[Engine, ...]] = (PY7ZR, ZSTANDARD, UNAR, BSDTAR)
    timeout_seconds: ClassVar[float] = 1800.0  # 2 GB through xz or LZMA, on a slow machine

    def unavailable_reason(self, env: ToolEnv | None = None) -> str | None:
        # unar and bsdtar only add RAR: without them the tools still run, and RAR fails with engine_missing
        missing = [e for e in (PY7ZR, ZSTANDARD) if not e.available()]
        if not missing:
            return None
        return "; ".join(f"{e.name} is not installed. {e.install_hint}" for e in missing)

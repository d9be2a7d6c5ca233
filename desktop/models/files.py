"""The list of files to convert: name, size and the type judged from content (as the API does).

Also what a dropped folder brings in: :func:`parse_filter` reads the filter box, :func:`expand_paths`
walks folders with it. Both sides of the filter live here, as they must agree (lower-case globs).
A file found in a folder remembers that folder (:attr:`FileEntry.root`), so its results can keep the
folder tree (:func:`group_entries`) and a tool that does not take it can pass it by
(:func:`split_for_tool`), as ``filekiln convert DIR --recursive`` does.
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from PySide6.QtCore import QModelIndex, Qt, Signal
from PySide6.QtGui import QIcon

from desktop.models.table import RowTableModel
from desktop.threads import Background

PathRole = Qt.ItemDataRole.UserRole + 1
FormatRole = Qt.ItemDataRole.UserRole + 2


def parse_filter(text: str) -> list[str]:
    """``"*.pdf; *.png, jpg"`` -> ``["*.pdf", "*.png", "*.jpg"]``; empty means everything."""
    patterns = []
    for part in text.replace(",", ";").replace(" ", ";").split(";"):
        part = part.strip()
        if not part:
            continue
        if not any(c in part for c in "*?["):
            part = f"*.{part.lstrip('.')}"
        patterns.append(part.lower())
    return patterns


def expand_paths(paths: Iterable[Path], patterns: Sequence[str] = (), limit: int = 10_000) -> list[Path]:
    """Files named directly, plus files found under folders (recursively) that match ``patterns``.

    Files named directly are always kept: the filter is for what a folder brings in.
    Hidden files and folders inside a dropped folder are skipped. Order is stable and
    duplicates are dropped; at most ``limit`` files are returned.
    """
    return [path for path, _ in expand_with_roots(paths, patterns, limit)]


def expand_with_roots(paths: Iterable[Path], patterns: Sequence[str] = (),
                      limit: int = 10_000) -> list[tuple[Path, Path | None]]:
    """:func:`expand_paths`, each file with the folder it was found under (``None``: named directly)."""
    seen: set[Path] = set()
    found: list[tuple[Path, Path | None]] = []

    def keep(p: Path, root: Path | None) -> bool:
        if p in seen or len(found) >= limit:
            return False
        seen.add(p)
        found.append((p, root))
        return True

    for path in paths:
        path = path.absolute()
        if path.is_file():
            keep(path, None)
        elif path.is_dir():
            for root, dirs, files in os.walk(path):
                dirs[:] = sorted(d for d in dirs if not d.startswith("."))
                for name in sorted(files):
                    if name.startswith("."):
                        continue
                    if patterns and not any(fnmatch.fnmatch(name.lower(), p) for p in patterns):
                        continue
                    keep(Path(root) / name, path)
                if len(found) >= limit:
                    return found
    return found


def human_size(size: int | None) -> str:
    if size is None:
        return ""
    value = float(size)
    for unit in ("bytes", "KB", "MB", "GB", "TB"):
        if value < 1000 or unit == "TB":
            return f"{int(value)} {unit}" if unit == "bytes" else f"{value:.1f} {unit}"
        value /= 1000
    return f"{size} bytes"  # pragma: no cover


@dataclass(frozen=True)
class FileEntry:
    path: Path
    size: int
    format: str | None  # None: not recognised
    root: Path | None = None  # the dropped (or added) folder it was found in; None: named directly

    @property
    def type_label(self) -> str:
        return self.format.upper() if self.format else "unknown"

    @property
    def subfolder(self) -> Path:
        """Where the file sits inside its folder (``Path(".")`` at its top, and for a file named directly)."""
        return self.path.parent.relative_to(self.root) if self.root is not None else Path(".")

    @property
    def label(self) -> str:
        """Its name, with its path inside its folder for a file found in one: ``sub/b.png``."""
        return (self.subfolder / self.path.name).as_posix()


def scan_files(paths: Iterable[Path], patterns: Sequence[str], sniff: Callable[[Path], str | None]) -> list[FileEntry]:
    """Expand folders and judge each file's type. Slow on big folders: run it off the GUI thread."""
    entries = []
    for path, root in expand_with_roots(paths, patterns):
        try:
            size = path.stat().st_size
            fmt = sniff(path)
        except OSError:
            continue
        entries.append(FileEntry(path, size, fmt, root))
    return entries


def split_for_tool(entries: Iterable[FileEntry], accepts: Collection[str],
                   max_size: int) -> tuple[list[FileEntry], list[FileEntry]]:
    """(files to convert, files from folders passed by): a file found in a folder whose type the tool
    does not take (``accepts``), or that is over its ``max_size``, is left out; a file named directly
    is always kept, so that asking for it with the wrong tool stays an error the user sees."""
    taken: list[FileEntry] = []
    passed: list[FileEntry] = []
    for entry in entries:
        fits = entry.format is not None and entry.format in accepts and entry.size <= max_size
        (taken if fits or entry.root is None else passed).append(entry)
    return taken, passed


@dataclass(frozen=True)
class Group:
    """The files one job (or workflow) gets, and the folder inside the output folder its results go to."""

    paths: list[Path]
    subfolder: Path  # Path("."): the output folder itself


def group_entries(entries: Iterable[FileEntry], merge: bool) -> list[Group]:
    """One group per file, or for a tool that merges its inputs, one per folder: the files named
    directly together, and the files of each subfolder of a dropped folder together (as
    ``filekiln convert DIR --recursive`` does). Groups come in the order of their first file."""
    entries = list(entries)
    if not merge:
        return [Group([e.path], e.subfolder) for e in entries]
    groups: dict[tuple[Path | None, Path], Group] = {}
    for entry in entries:
        key = (entry.root, entry.subfolder)
        if key not in groups:
            groups[key] = Group([], entry.subfolder)
        groups[key].paths.append(entry.path)
    return list(groups.values())


class FileListModel(RowTableModel[FileEntry]):
    COLUMNS = ("Name", "Size", "Type")
    files_changed = Signal()
    loading_changed = Signal(bool)

    def __init__(self, sniff: Callable[[Path], str | None], background: Background | None = None,
                 icon_for: Callable[[FileEntry], QIcon] | None = None) -> None:
        super().__init__()
        self._sniff = sniff
        self._background = background
        self._icon_for = icon_for
        self._loading = 0

    # ---- Qt model ----

    def cell(self, entry: FileEntry, column: int, role: int) -> Any:
        if role == Qt.ItemDataRole.DisplayRole:
            return (entry.path.name, human_size(entry.size), entry.type_label)[column]
        if role == Qt.ItemDataRole.ToolTipRole:
            return str(entry.path)
        if role == Qt.ItemDataRole.DecorationRole and column == 0 and self._icon_for is not None:
            return self._icon_for(entry)
        if role == Qt.ItemDataRole.TextAlignmentRole and column == 1:
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        if role == PathRole:
            return str(entry.path)
        if role == FormatRole:
            return entry.format
        return None

    # ---- contents ----

    @property
    def entries(self) -> list[FileEntry]:
        return list(self._rows)

    @property
    def loading(self) -> bool:
        return self._loading > 0

    def add_paths(self, paths: Sequence[Path], patterns: Sequence[str] = ()) -> None:
        """Add files and (recursively, filtered) folders; the scan runs in the background when it can."""
        paths = list(paths)
        if not paths:
            return
        if self._background is None:
            self.add_entries(scan_files(paths, patterns, self._sniff))
            return
        self._set_loading(+1)

        def done(entries: list[FileEntry]) -> None:
            self._set_loading(-1)
            self.add_entries(entries)

        self._background.run(lambda: scan_files(paths, patterns, self._sniff), done,
                             lambda exc: self._set_loading(-1))

    def _set_loading(self, delta: int) -> None:
        self._loading += delta
        self.loading_changed.emit(self._loading > 0)

    def add_entries(self, entries: Iterable[FileEntry]) -> int:
        known = {e.path for e in self._rows}
        fresh = []
        for entry in entries:
            if entry.path not in known:
                known.add(entry.path)
                fresh.append(entry)
        if fresh:
            start = len(self._rows)
            self.beginInsertRows(QModelIndex(), start, start + len(fresh) - 1)
            self._rows.extend(fresh)
            self.endInsertRows()
            self.files_changed.emit()
        return len(fresh)

    def remove_rows(self, rows: Iterable[int]) -> None:
        for row in sorted(set(rows), reverse=True):
            if 0 <= row < len(self._rows):
                self.beginRemoveRows(QModelIndex(), row, row)
                del self._rows[row]
                self.endRemoveRows()
        self.files_changed.emit()

    def clear(self) -> None:
        if self._rows:
            self.beginResetModel()
            self._rows.clear()
            self.endResetModel()
            self.files_changed.emit()

    def entries_at(self, rows: Iterable[int]) -> list[FileEntry]:
        return [self._rows[r] for r in sorted(set(rows)) if 0 <= r < len(self._rows)]

"""The list of files to convert: name, size and the type judged from content (as the API does)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from PySide6.QtCore import QModelIndex, Qt, Signal
from PySide6.QtGui import QIcon

from desktop.helpers import expand_paths, human_size
from desktop.models.table import RowTableModel
from desktop.threads import Background

PathRole = Qt.ItemDataRole.UserRole + 1
FormatRole = Qt.ItemDataRole.UserRole + 2


@dataclass(frozen=True)
class FileEntry:
    path: Path
    size: int
    format: str | None  # None: not recognised

    @property
    def type_label(self) -> str:
        return self.format.upper() if self.format else "unknown"


def scan_files(paths: Iterable[Path], patterns: Sequence[str], sniff: Callable[[Path], str | None]) -> list[FileEntry]:
    """Expand folders and judge each file's type. Slow on big folders: run it off the GUI thread."""
    entries = []
    for path in expand_paths(paths, patterns):
        try:
            size = path.stat().st_size
            fmt = sniff(path)
        except OSError:
            continue
        entries.append(FileEntry(path, size, fmt))
    return entries


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

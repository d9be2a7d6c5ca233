"""The part of a read-only table model every list in the window shares: a row list and named columns."""

from __future__ import annotations

from typing import Any, ClassVar, Generic, TypeVar

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QPersistentModelIndex, Qt

Index = QModelIndex | QPersistentModelIndex
Row = TypeVar("Row")


class RowTableModel(QAbstractTableModel, Generic[Row]):
    """Rows in ``self._rows``, headers from ``COLUMNS``; subclasses answer :meth:`cell` for one row."""

    COLUMNS: ClassVar[tuple[str, ...]] = ()

    def __init__(self) -> None:
        super().__init__()
        self._rows: list[Row] = []

    def rowCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008, N802
        return 0 if parent.isValid() else len(self._rows)

    def columnCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008, N802
        return 0 if parent.isValid() else len(self.COLUMNS)

    def headerData(self, section: int, orientation: Qt.Orientation,  # noqa: N802
                   role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.DisplayRole:
            return self.COLUMNS[section]
        return None

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid() or index.row() >= len(self._rows):
            return None
        return self.cell(self._rows[index.row()], index.column(), role)

    def cell(self, row: Row, column: int, role: int) -> Any:
        """What ``role`` shows for ``row`` in ``column`` (None: nothing)."""
        raise NotImplementedError

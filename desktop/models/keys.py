"""API keys as a table: name, prefix, created, last used, quota used today, status."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtGui import QFont

from desktop.models.table import RowTableModel
from localapi.core.keys import ApiKey, KeyService

KeyIdRole = Qt.ItemDataRole.UserRole + 1


def when(ts: float | None, never: str = "never") -> str:
    if ts is None:
        return never
    return datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M")


def quota_text(used: int, quota: int | None) -> str:
    return f"{used} (no limit)" if quota is None else f"{used} of {quota}"


@dataclass(frozen=True)
class KeyRow:
    key: ApiKey
    used_today: int

    @property
    def status(self) -> str:
        return "active" if self.key.active else f"revoked {when(self.key.revoked_at)}"


class KeysModel(RowTableModel[KeyRow]):
    """Reads keys from the database (a few rows: cheap). The secret never passes through here."""

    COLUMNS = ("Name", "Prefix", "Created", "Last used", "Jobs today", "Status")

    def __init__(self, keys: KeyService) -> None:
        super().__init__()
        self._keys = keys
        self.refresh()

    def cell(self, row: KeyRow, column: int, role: int) -> Any:
        key = row.key
        if role in (Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.ToolTipRole):  # the tooltip: the cell in full
            return (key.name, f"{key.prefix}…", when(key.created_at), when(key.last_used_at),
                    quota_text(row.used_today, key.daily_job_quota), row.status)[column]
        if role == Qt.ItemDataRole.FontRole and not key.active:
            font = QFont()
            font.setItalic(True)
            font.setStrikeOut(column == 0)
            return font
        if role == KeyIdRole:
            return key.id
        return None

    @property
    def rows(self) -> list[KeyRow]:
        return list(self._rows)

    def key_at(self, row: int) -> ApiKey | None:
        return self._rows[row].key if 0 <= row < len(self._rows) else None

    def refresh(self) -> None:
        rows = [KeyRow(k, self._keys.jobs_today(k.id)) for k in self._keys.list()]
        if [r.key.id for r in rows] == [r.key.id for r in self._rows]:
            changed = [i for i, (a, b) in enumerate(zip(rows, self._rows, strict=True)) if a != b]
            self._rows = rows
            for i in changed:
                self.dataChanged.emit(self.index(i, 0), self.index(i, self.columnCount() - 1))
            return
        self.beginResetModel()
        self._rows = rows
        self.endResetModel()

    def create(self, name: str, daily_job_quota: int | None) -> tuple[ApiKey, str]:
        """Create a key. The secret is returned to the caller, to show once, and not kept."""
        key, secret = self._keys.create(name, daily_job_quota)
        self.refresh()
        return key, secret

    def revoke(self, key_id: str) -> None:
        self._keys.revoke(key_id)
        self.refresh()

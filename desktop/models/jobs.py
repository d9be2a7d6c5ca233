"""The jobs table: every job in the data dir (the app's and API clients'), newest first, live."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from PySide6.QtCore import QModelIndex, Qt, Signal

from desktop.helpers import elapsed_of, format_elapsed, friendly_error
from desktop.models.table import RowTableModel

JobIdRole = Qt.ItemDataRole.UserRole + 1
ProgressRole = Qt.ItemDataRole.UserRole + 2
StatusRole = Qt.ItemDataRole.UserRole + 3

ACTIVE = ("QUEUED", "PROCESSING")
FINISHED = ("DONE", "FAILED", "CANCELED")


@dataclass(frozen=True)
class JobRow:
    """One job as the table shows it: the service's job plus names resolved for people."""

    id: str
    tool: str
    tool_title: str
    files_label: str
    source: str  # "This app" or "API: <key name>"
    status: str
    progress: int
    created_at: float
    started_at: float | None = None
    finished_at: float | None = None
    error_code: str | None = None
    error_message: str | None = None
    notes: tuple[str, ...] = ()
    from_app: bool = True
    params: dict[str, Any] = field(default_factory=dict)
    output_format: str | None = None
    input_file_ids: tuple[str, ...] = ()
    outputs: tuple[str, ...] = ()  # where the results were copied on disk
    skipped: tuple[str, ...] = ()
    saving: bool = False  # DONE, results still being copied to the chosen folder
    delivery_error: str | None = None

    @property
    def active(self) -> bool:
        return self.status in ACTIVE

    @property
    def status_label(self) -> str:
        if self.status == "QUEUED":
            return "Waiting"
        if self.status == "PROCESSING":
            return f"Converting {self.progress}%"
        if self.status == "DONE":
            if self.saving:
                return "Saving result…"
            if self.delivery_error:
                return "Done, but not saved"
            if self.skipped and not self.outputs:
                return "Done (skipped: file exists)"
            return "Done"
        if self.status == "CANCELED":
            return "Canceled"
        return "Failed: " + self.friendly_error

    @property
    def friendly_error(self) -> str:
        if self.status == "DONE" and self.delivery_error:
            return f"The result could not be saved: {self.delivery_error}"
        return friendly_error(self.error_code, self.error_message)

    @property
    def error_details(self) -> str:
        lines = [f"Job: {self.id}", f"Tool: {self.tool}", f"Status: {self.status}"]
        if self.error_code:
            lines.append(f"Error code: {self.error_code}")
        if self.error_message:
            lines.append(f"Message: {self.error_message}")
        if self.delivery_error:
            lines.append(f"Saving the result: {self.delivery_error}")
        lines.extend(f"Note: {n}" for n in self.notes)
        if self.skipped:
            lines.append("Not written (a file of that name existed): " + ", ".join(self.skipped))
        lines.extend(f"Output: {o}" for o in self.outputs)
        return "\n".join(lines)


class JobsModel(RowTableModel[JobRow]):
    COLUMNS = ("Tool", "File", "Progress", "Status", "Elapsed", "From")
    PROGRESS_COLUMN = 2
    ELAPSED_COLUMN = 4
    jobs_updated = Signal()

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        super().__init__()
        self._clock = clock

    def cell(self, row: JobRow, column: int, role: int) -> Any:
        if role == Qt.ItemDataRole.DisplayRole:
            elapsed = format_elapsed(elapsed_of(row.started_at, row.finished_at, self._clock()))
            return (row.tool_title, row.files_label, f"{row.progress}%", row.status_label, elapsed,
                    row.source)[column]
        if role == Qt.ItemDataRole.ToolTipRole:
            if row.status == "FAILED" or row.delivery_error:
                return f"{row.friendly_error}\n\nDouble-click for details."
            if row.outputs:
                return "\n".join(row.outputs)
            return row.files_label
        if role == JobIdRole:
            return row.id
        if role == ProgressRole:
            return row.progress
        if role == StatusRole:
            return row.status
        return None

    # ---- contents ----

    @property
    def rows(self) -> list[JobRow]:
        return list(self._rows)

    def job(self, job_id: str) -> JobRow | None:
        return next((r for r in self._rows if r.id == job_id), None)

    def row_of(self, job_id: str) -> int:
        return next((i for i, r in enumerate(self._rows) if r.id == job_id), -1)

    def jobs_at(self, rows: Iterable[int]) -> list[JobRow]:
        return [self._rows[r] for r in sorted(set(rows)) if 0 <= r < len(self._rows)]

    @property
    def active_count(self) -> int:
        return sum(1 for r in self._rows if r.active)

    def apply(self, rows: Sequence[JobRow]) -> None:
        """Bring the table to ``rows`` (newest first) with inserts, removals and changes, not a reset,
        so the selection and scroll position survive live updates."""
        new_ids = [r.id for r in rows]
        wanted = set(new_ids)
        for i in range(len(self._rows) - 1, -1, -1):
            if self._rows[i].id not in wanted:
                self.beginRemoveRows(QModelIndex(), i, i)
                del self._rows[i]
                self.endRemoveRows()
        present = {r.id for r in self._rows}
        kept = [i for i in new_ids if i in present]
        if kept != [r.id for r in self._rows]:  # order changed (should not happen): start over
            self.beginResetModel()
            self._rows = list(rows)
            self.endResetModel()
            self.jobs_updated.emit()
            return
        last = self.columnCount() - 1
        for i, row in enumerate(rows):
            if i < len(self._rows) and self._rows[i].id == row.id:
                if self._rows[i] != row or row.active:
                    self._rows[i] = row
                    self.dataChanged.emit(self.index(i, 0), self.index(i, last))
            else:
                self.beginInsertRows(QModelIndex(), i, i)
                self._rows.insert(i, row)
                self.endInsertRows()
        self.jobs_updated.emit()


@dataclass(frozen=True)
class BatchSummary:
    batch: str
    done: int
    failed: int
    canceled: int

    @property
    def message(self) -> str:
        total = self.done + self.failed + self.canceled
        if self.failed == 0 and self.canceled == 0:
            return f"{total} file{'s' * (total != 1)} converted." if total != 1 else "Your file is converted."
        parts = [f"{self.done} done"]
        if self.failed:
            parts.append(f"{self.failed} failed")
        if self.canceled:
            parts.append(f"{self.canceled} canceled")
        return ", ".join(parts) + "."


class BatchTracker:
    """Knows which jobs were started together and says once when all of a batch are finished."""

    def __init__(self) -> None:
        self._batches: dict[str, list[str]] = {}
        self._seen: set[str] = set()

    def add(self, batch: str, job_ids: Sequence[str]) -> None:
        if job_ids:
            self._batches.setdefault(batch, []).extend(job_ids)

    @property
    def open_batches(self) -> list[str]:
        return list(self._batches)

    def update(self, statuses: dict[str, str]) -> list[BatchSummary]:
        """``statuses``: job id -> status. A job missing from it counts as canceled (removed) once it was
        seen, and as waiting before that (a snapshot taken just before the job was made)."""
        finished = []
        for batch, job_ids in list(self._batches.items()):
            self._seen.update(j for j in job_ids if j in statuses)
            states = [statuses.get(j, "CANCELED" if j in self._seen else "QUEUED") for j in job_ids]
            if all(s in FINISHED for s in states):
                finished.append(BatchSummary(batch, states.count("DONE"), states.count("FAILED"),
                                             states.count("CANCELED")))
                del self._batches[batch]
                self._seen.difference_update(job_ids)
        return finished

"""The jobs table: every job in the data dir (the app's and API clients'), newest first, live."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from PySide6.QtCore import QModelIndex, Qt, Signal

from desktop.models.table import RowTableModel
from localapi.core.codes import friendly_text
from localapi.core.states import JobStatus

JobIdRole = Qt.ItemDataRole.UserRole + 1
ProgressRole = Qt.ItemDataRole.UserRole + 2
StatusRole = Qt.ItemDataRole.UserRole + 3

def format_elapsed(seconds: float | None) -> str:
    if seconds is None or seconds < 0:
        return ""
    seconds = int(seconds)
    if seconds < 60:
        return f"{seconds} s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}:{seconds:02d}"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{seconds:02d}"


def elapsed_of(started_at: float | None, finished_at: float | None, now: float) -> float | None:
    if started_at is None:
        return None
    return (finished_at or now) - started_at


def friendly_error(code: str | None, message: str | None) -> str:
    """A sentence a person understands (from the error-code catalogue); the raw message stays available
    as the details, and stands in for a code the catalogue does not know."""
    return friendly_text(code) or message or "The conversion failed."


@dataclass(frozen=True)
class JobRow:
    """One job as the table shows it: the service's job plus names resolved for people."""

    id: str
    tool: str
    tool_title: str
    files_label: str
    source: str  # "This app" or "API: <key name>"
    status: JobStatus
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
        return self.status.active

    @property
    def can_retry(self) -> bool:
        """Failed or canceled, and made in this app (its files and choices are known)."""
        return self.from_app and self.status in (JobStatus.FAILED, JobStatus.CANCELED)

    @property
    def status_label(self) -> str:
        if self.status == JobStatus.QUEUED:
            return "Waiting"
        if self.status == JobStatus.PROCESSING:
            return f"Converting {self.progress}%"
        if self.status == JobStatus.DONE:
            if self.saving:
                return "Saving result…"
            if self.delivery_error:
                return "Done, but not saved"
            if self.skipped and not self.outputs:
                return "Done (skipped: file exists)"
            return "Done"
        if self.status == JobStatus.CANCELED:
            return "Canceled"
        return "Failed: " + self.friendly_error

    @property
    def friendly_error(self) -> str:
        if self.status == JobStatus.DONE and self.delivery_error:
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
            if row.status == JobStatus.FAILED or row.delivery_error:
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

    def refresh_elapsed(self) -> None:
        """The clock moved: the elapsed time of running jobs reads differently (nothing else changed)."""
        for i, row in enumerate(self._rows):
            if row.active and row.started_at is not None:
                index = self.index(i, self.ELAPSED_COLUMN)
                self.dataChanged.emit(index, index, [Qt.ItemDataRole.DisplayRole])

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
                if self._rows[i] != row:
                    self._rows[i] = row
                    self.dataChanged.emit(self.index(i, 0), self.index(i, last))
            else:
                self.beginInsertRows(QModelIndex(), i, i)
                self._rows.insert(i, row)
                self.endInsertRows()
        self.jobs_updated.emit()

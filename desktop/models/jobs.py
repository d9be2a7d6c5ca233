"""The jobs table: every job in the data dir (the app's and API clients'), newest first, live."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from PySide6.QtCore import QModelIndex, Qt, Signal
from PySide6.QtGui import QColor

from desktop.icons import type_icon
from desktop.models.table import RowTableModel
from localapi.core.codes import friendly_text
from localapi.core.states import JobStatus

JobIdRole = Qt.ItemDataRole.UserRole + 1
ProgressRole = Qt.ItemDataRole.UserRole + 2
StatusRole = Qt.ItemDataRole.UserRole + 3
GrewRole = Qt.ItemDataRole.UserRole + 4  # the result is bigger than its input
WARNING = QColor("#b45309")


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


def format_size(size: int) -> str:
    """A size in three figures: ``1.07 MB``, ``340 KB``, ``912 bytes``."""
    if size < 1000:
        return f"{size} byte{'s' * (size != 1)}"
    value = float(size)
    for unit in ("KB", "MB", "GB", "TB"):
        value /= 1000
        if value < 999.5 or unit == "TB":
            break
    decimals = 2 if value < 9.995 else 1 if value < 99.95 else 0
    return f"{value:.{decimals}f} {unit}"


def size_change(before: int | None, after: int | None) -> int | None:
    """How much bigger (+) or smaller (-) ``after`` is than ``before``, in whole percent."""
    if not before or after is None:
        return None
    return round((after - before) * 100 / before)


def format_change(percent: int) -> str:
    return "same size" if percent == 0 else f"{percent:+d} %"


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
    output_bytes: int | None = None  # the saved results' size
    input_bytes: int | None = None  # the inputs' size
    refusal: str | None = None  # a file refused before converting (no job): why, in words
    details: str = ""  # more about a refusal
    can_unlock: bool = False  # failed for want of a password that the row may ask for
    workflow_id: str | None = None  # the workflow this job is a step of
    step: int = 0  # which step of it (0-based)
    steps: int = 0  # how many steps the workflow has (0: not known yet)

    @property
    def step_label(self) -> str:
        """``Step 1/2`` for a job of a workflow, else empty."""
        if self.workflow_id is None:
            return ""
        return f"Step {self.step + 1}/{self.steps}" if self.steps else f"Step {self.step + 1}"

    @property
    def tool_label(self) -> str:
        """The tool's title, with the workflow step when the job is one: ``Image to PDF · Step 1/2``."""
        return f"{self.tool_title} · {self.step_label}" if self.workflow_id else self.tool_title

    @property
    def first_file(self) -> str:
        """The name of the job's (first) file, as :attr:`files_label` starts: ``a.pdf`` of ``a.pdf + 2 more``."""
        return self.files_label.rsplit(" + ", 1)[0] if self.files_label.endswith(" more") else self.files_label

    @property
    def refused(self) -> bool:
        return self.refusal is not None

    @property
    def active(self) -> bool:
        return self.status.active

    @property
    def can_retry(self) -> bool:
        """Failed or canceled, and made in this app (its files and choices are known)."""
        return self.from_app and self.workflow_id is None and self.status in (JobStatus.FAILED, JobStatus.CANCELED)

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
    def result_name(self) -> str:
        """The saved result's file name (``+ N more`` for several)."""
        if not self.outputs:
            return ""
        first = Path(self.outputs[0]).name
        return first if len(self.outputs) == 1 else f"{first} + {len(self.outputs) - 1} more"

    @property
    def change(self) -> int | None:
        return size_change(self.input_bytes, self.output_bytes)

    @property
    def grew(self) -> bool:
        """The result is bigger than its input: worth a warning when a tool was meant to shrink it."""
        return (self.change or 0) > 0

    @property
    def result_text(self) -> str:
        """``report-compressed.pdf — 1.07 MB, -85 %``: what a finished job saved, its size and the change."""
        if not self.outputs:
            return ""
        if self.output_bytes is None:
            return self.result_name
        text = f"{self.result_name} — {format_size(self.output_bytes)}"
        change = self.change
        return text if change is None else f"{text}, {format_change(change)}"

    @property
    def friendly_error(self) -> str:
        if self.refusal is not None:
            return self.refusal
        if self.status == JobStatus.DONE and self.delivery_error:
            return f"The result could not be saved: {self.delivery_error}"
        return friendly_error(self.error_code, self.error_message)

    @property
    def error_details(self) -> str:
        if self.refused:
            return "\n".join([f"Refused before converting: {self.files_label}", f"Tool: {self.tool}",
                              self.details or self.refusal or ""])
        lines = [f"Job: {self.id}", f"Tool: {self.tool}", f"Status: {self.status}"]
        if self.workflow_id is not None:
            lines.insert(1, f"Workflow: {self.workflow_id} ({self.step_label.lower()})")
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


class ProgressRates:
    """How fast each running job moves, and when it should end, both smoothed.

    The rate (progress per second) is an exponential moving average weighted by the time between
    reports, over about ``smoothing`` seconds, so uneven steps do not swing it. The time left follows
    ``remaining / rate`` over about ``follow`` seconds, so even a real change of pace moves it within a
    few seconds rather than at once; between reports it counts down with the clock and never goes below
    zero. Nothing is said before ``settle`` seconds and two reports, when a rate would be a guess.
    """

    def __init__(self, smoothing: float = 8.0, follow: float = 3.0, settle: float = 2.0) -> None:
        self.smoothing = smoothing
        self.follow = follow
        self.settle = settle
        self._state: dict[str, _Pace] = {}

    def feed(self, job_id: str, progress: int, now: float) -> None:
        pace = self._state.get(job_id)
        if pace is None:
            self._state[job_id] = _Pace(now, progress, now, progress)
            return
        if progress <= pace.progress or now <= pace.at:
            return
        dt = now - pace.at
        if pace.rate is None:
            pace.rate = (progress - pace.first_progress) / (now - pace.first)
        else:
            pace.rate += (1 - math.exp(-dt / self.smoothing)) * ((progress - pace.progress) / dt - pace.rate)
        aim = (100 - progress) / pace.rate if pace.rate > 0 else None
        if aim is not None:
            left = None if pace.left is None else max(0.0, pace.left - dt)
            pace.left = aim if left is None else left + (1 - math.exp(-dt / self.follow)) * (aim - left)
        pace.at, pace.progress = now, progress

    def seconds_left(self, job_id: str, now: float) -> float | None:
        pace = self._state.get(job_id)
        if pace is None or pace.left is None or now - pace.first < self.settle:
            return None
        return max(0.0, pace.left - (now - pace.at))

    def keep(self, job_ids: Iterable[str]) -> None:
        wanted = set(job_ids)
        for job_id in [j for j in self._state if j not in wanted]:
            del self._state[job_id]


@dataclass
class _Pace:
    first: float  # when the job was first seen running
    first_progress: int
    at: float  # the last report
    progress: int
    rate: float | None = None  # % per second
    left: float | None = None  # seconds left as of ``at``


def format_left(seconds: float) -> str:
    """``about 1:20 left``; under a few seconds, ``almost done``."""
    if seconds < 3:
        return "almost done"
    if seconds >= 60:
        seconds = round(seconds / 5) * 5  # a minute-long wait need not tick by the second
    return f"about {format_elapsed(seconds)} left"


class JobsModel(RowTableModel[JobRow]):
    COLUMNS = ("Tool", "File", "Progress", "Status", "Result", "Elapsed", "From", "")
    FILE_COLUMN = 1
    PROGRESS_COLUMN = 2
    STATUS_COLUMN = 3
    RESULT_COLUMN = 4
    ELAPSED_COLUMN = 5
    SOURCE_COLUMN = 6
    ACTIONS_COLUMN = 7  # the row's own buttons (the view puts them there)
    jobs_updated = Signal()

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        super().__init__()
        self._clock = clock
        self.rates = ProgressRates()

    def status_text(self, row: JobRow) -> str:
        """The status as the table shows it: with the time left while a job runs, once it can be told."""
        if row.status == JobStatus.PROCESSING:
            left = self.rates.seconds_left(row.id, self._clock())
            if left is not None:
                return f"{row.status_label} · {format_left(left)}"
        return row.status_label

    def cell(self, row: JobRow, column: int, role: int) -> Any:
        if role == Qt.ItemDataRole.DisplayRole:
            if column == self.ACTIONS_COLUMN:
                return None
            elapsed = format_elapsed(elapsed_of(row.started_at, row.finished_at, self._clock()))
            progress = "" if row.refused else f"{row.progress}%"
            return (row.tool_label, row.files_label, progress, self.status_text(row), row.result_text,
                    elapsed, row.source)[column]
        if role == Qt.ItemDataRole.ToolTipRole:
            if column == self.SOURCE_COLUMN:
                return row.source  # "API: <key name>" in full, however narrow the column
            if row.status == JobStatus.FAILED or row.delivery_error:
                return f"{row.friendly_error}\n\nDouble-click for details."
            if column == self.STATUS_COLUMN:
                return self.status_text(row)
            if column == self.RESULT_COLUMN and row.grew:
                return "The result is bigger than the input.\n" + "\n".join(row.outputs)
            if row.outputs:
                return "\n".join(row.outputs)
            return row.files_label
        if role == Qt.ItemDataRole.ForegroundRole and column == self.RESULT_COLUMN and row.grew:
            return WARNING
        if role == Qt.ItemDataRole.DecorationRole and column == self.FILE_COLUMN and row.files_label:
            return type_icon(row.first_file)
        if role == JobIdRole:
            return row.id
        if role == ProgressRole:
            return None if row.refused else row.progress
        if role == StatusRole:
            return row.status
        if role == GrewRole:
            return row.grew
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
        """The clock moved: the elapsed time of running jobs reads differently, and so does the time
        left of those that tell one (nothing else changed)."""
        now = self._clock()
        for i, row in enumerate(self._rows):
            if row.active and row.started_at is not None:
                index = self.index(i, self.ELAPSED_COLUMN)
                self.dataChanged.emit(index, index, [Qt.ItemDataRole.DisplayRole])
                if row.status == JobStatus.PROCESSING and self.rates.seconds_left(row.id, now) is not None:
                    status = self.index(i, self.STATUS_COLUMN)
                    self.dataChanged.emit(status, status, [Qt.ItemDataRole.DisplayRole])

    def apply(self, rows: Sequence[JobRow]) -> None:
        """Bring the table to ``rows`` (newest first) with inserts, removals and changes, not a reset,
        so the selection and scroll position survive live updates."""
        now = self._clock()
        for row in rows:
            if row.status == JobStatus.PROCESSING:
                self.rates.feed(row.id, row.progress, now)
        self.rates.keep(r.id for r in rows if r.status == JobStatus.PROCESSING)
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

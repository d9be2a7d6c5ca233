"""The jobs view: a row per job with a real progress bar; cancel, retry, open, show in folder, remove."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QModelIndex, QPersistentModelIndex, Qt, QTimer, QUrl
from PySide6.QtGui import QDesktopServices, QPainter
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QMessageBox,
    QPushButton,
    QStyle,
    QStyledItemDelegate,
    QStyleOptionProgressBar,
    QStyleOptionViewItem,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from desktop.controllers.jobs import JobsController
from desktop.models.jobs import JobRow, JobsModel, ProgressRole, StatusRole
from localapi.core.states import JobStatus


def reveal_command(path: Path, platform: str = sys.platform) -> list[str] | None:
    """The command that shows ``path`` selected in the file manager; ``None``: open its folder instead."""
    if platform == "win32":
        return ["explorer", f"/select,{path}"]
    if platform == "darwin":
        return ["open", "-R", str(path)]
    return None


def open_with_system(path: Path) -> None:
    QDesktopServices.openUrl(QUrl.fromLocalFile(str(path)))


def reveal_in_folder(path: Path) -> None:
    command = reveal_command(path)
    if command is None:
        open_with_system(path.parent)
    else:
        subprocess.Popen(command)  # noqa: S603 - a fixed program and our own path


class ProgressDelegate(QStyledItemDelegate):
    """Draws the job's progress as the platform's progress bar."""

    def paint(self, painter: QPainter, option: QStyleOptionViewItem,
              index: QModelIndex | QPersistentModelIndex) -> None:
        progress = index.data(ProgressRole)
        if progress is None:
            super().paint(painter, option, index)
            return
        bar = QStyleOptionProgressBar()
        bar.rect = option.rect.adjusted(2, 3, -2, -3)
        bar.minimum = 0
        bar.maximum = 100
        bar.progress = int(progress)
        bar.text = f"{int(progress)}%"
        bar.textVisible = True
        bar.state = option.state | QStyle.StateFlag.State_Horizontal
        if index.data(StatusRole) in (JobStatus.FAILED, JobStatus.CANCELED):
            bar.state &= ~QStyle.StateFlag.State_Enabled
        style = option.widget.style() if option.widget is not None else None
        if style is not None:
            style.drawControl(QStyle.ControlElement.CE_ProgressBar, bar, painter, option.widget)


class JobsView(QWidget):
    def __init__(self, model: JobsModel, controller: JobsController,
                 open_path: Callable[[Path], None] = open_with_system,
                 reveal: Callable[[Path], None] = reveal_in_folder, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.model = model
        self.controller = controller
        self._open_path = open_path
        self._reveal = reveal
        self.table = QTableView()
        self.table.setModel(model)
        self.table.setAccessibleName("Jobs")
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.verticalHeader().hide()
        self.table.setAlternatingRowColors(True)
        self.table.setItemDelegateForColumn(JobsModel.PROGRESS_COLUMN, ProgressDelegate(self.table))
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        header.setSectionResizeMode(1, QHeaderView.ResizeMode.Stretch)
        header.setSectionResizeMode(3, QHeaderView.ResizeMode.Stretch)
        header.resizeSection(0, 150)
        header.resizeSection(JobsModel.PROGRESS_COLUMN, 140)
        self.table.doubleClicked.connect(self._double_clicked)

        self.cancel_button = QPushButton("&Cancel")
        self.cancel_button.setToolTip("Cancel the selected jobs (Esc)")
        self.retry_button = QPushButton("&Retry")
        self.open_button = QPushButton("&Open result")
        self.reveal_button = QPushButton("Show in fol&der")
        self.details_button = QPushButton("D&etails…")
        self.remove_button = QPushButton("Re&move")
        self.remove_button.setToolTip("Remove the selected jobs from the list (files you saved stay)")
        self.summary = QLabel()
        buttons = QHBoxLayout()
        for b in (self.cancel_button, self.retry_button, self.open_button, self.reveal_button,
                  self.details_button, self.remove_button):
            buttons.addWidget(b)
        buttons.addStretch(1)
        buttons.addWidget(self.summary)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(buttons)
        layout.addWidget(self.table, 1)

        self.cancel_button.clicked.connect(self.cancel_selected)
        self.retry_button.clicked.connect(self.retry_selected)
        self.open_button.clicked.connect(self.open_selected)
        self.reveal_button.clicked.connect(self.reveal_selected)
        self.details_button.clicked.connect(self.show_details)
        self.remove_button.clicked.connect(self.remove_selected)
        self.table.selectionModel().selectionChanged.connect(self._update_buttons)
        model.jobs_updated.connect(self._update_buttons)
        # jobs change through the model's signals; only the elapsed time moves with the clock
        self.clock = QTimer(self)
        self.clock.setInterval(1000)
        self.clock.timeout.connect(model.refresh_elapsed)
        self.clock.start()
        self.details_box: QMessageBox | None = None
        self._update_buttons()

    # ---- selection ----

    def selected(self) -> list[JobRow]:
        rows = {i.row() for i in self.table.selectionModel().selectedRows()}
        return self.model.jobs_at(rows)

    def select_job(self, job_id: str) -> None:
        row = self.model.row_of(job_id)
        if row >= 0:
            self.table.selectRow(row)

    def _update_buttons(self, *_: object) -> None:
        jobs = self.selected()
        one = jobs[0] if len(jobs) == 1 else None
        self.cancel_button.setEnabled(any(j.active for j in jobs))
        self.retry_button.setEnabled(any(j.can_retry for j in jobs))
        self.open_button.setEnabled(one is not None and bool(one.outputs))
        self.reveal_button.setEnabled(one is not None and bool(one.outputs))
        self.details_button.setEnabled(one is not None)
        self.remove_button.setEnabled(any(not j.active for j in jobs))
        active = self.model.active_count
        self.summary.setText(f"{active} running or waiting" if active else "")

    # ---- actions ----

    def cancel_selected(self) -> bool:
        ids = [j.id for j in self.selected() if j.active]
        if ids:
            self.controller.cancel(ids)
        return bool(ids)

    def retry_selected(self) -> None:
        for job in self.selected():
            if job.can_retry:
                self.controller.retry(job)

    def remove_selected(self) -> None:
        ids = [j.id for j in self.selected() if not j.active]
        if ids:
            self.controller.remove(ids)

    def open_selected(self) -> None:
        jobs = self.selected()
        if len(jobs) == 1 and jobs[0].outputs:
            self._open_path(Path(jobs[0].outputs[0]))

    def reveal_selected(self) -> None:
        jobs = self.selected()
        if len(jobs) == 1 and jobs[0].outputs:
            self._reveal(Path(jobs[0].outputs[0]))

    def show_details(self) -> None:
        jobs = self.selected()
        if len(jobs) != 1:
            return
        job = jobs[0]
        box = QMessageBox(self)
        box.setWindowTitle(f"{job.tool_title}: {job.files_label}")
        failed = job.status == JobStatus.FAILED or job.delivery_error
        box.setIcon(QMessageBox.Icon.Warning if failed else QMessageBox.Icon.Information)
        box.setText(job.friendly_error if failed else job.status_label)
        box.setDetailedText(job.error_details)
        box.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        box.setStandardButtons(QMessageBox.StandardButton.Close)
        self.details_box = box
        box.open()

    def _double_clicked(self, index: QModelIndex) -> None:
        job = self.model.jobs_at([index.row()])
        if job and job[0].outputs:
            self._open_path(Path(job[0].outputs[0]))
        else:
            self.show_details()

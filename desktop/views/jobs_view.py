"""The jobs view: a row per job with a real progress bar, what it saved, and its own buttons (cancel,
open, show in folder, retry, details, a password to unlock with); Stop all and the selection's actions
above the list."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QModelIndex, QPersistentModelIndex, Qt, QTimer, Signal
from PySide6.QtGui import QPainter
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
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
from desktop.views.empty_hint import EmptyHint
from desktop.views.shell import open_with_system, reveal_in_folder
from localapi.core.states import JobStatus


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


class RowActions(QWidget):
    """The buttons on one job's row: Cancel while it waits or runs; Open and Show in folder once its
    result is saved; Retry and Details when it failed; a password and "Unlock and convert" when a
    password is what it lacked. Shows what fits the row it was last given (:meth:`show_row`)."""

    cancel = Signal(str)  # job id
    open = Signal(str)
    reveal = Signal(str)
    retry = Signal(str)
    details = Signal(str)
    unlock = Signal(str, str)  # job id, password

    def __init__(self, row: JobRow, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.job_id = row.id
        self.row: JobRow | None = None
        self.cancel_button = self._button("Cancel", "Stop this job", lambda: self.cancel.emit(self.job_id))
        self.open_button = self._button("Open", "Open the result", lambda: self.open.emit(self.job_id))
        self.reveal_button = self._button("Show in folder", "Show the result in its folder",
                                          lambda: self.reveal.emit(self.job_id))
        self.retry_button = self._button("Retry", "Run it again with the same files and settings",
                                         lambda: self.retry.emit(self.job_id))
        self.details_button = self._button("Details…", "What went wrong, in full",
                                           lambda: self.details.emit(self.job_id))
        self.password_edit = QLineEdit()
        self.password_edit.setEchoMode(QLineEdit.EchoMode.Password)
        self.password_edit.setPlaceholderText("Password")
        self.password_edit.setAccessibleName("Password for this file")
        self.password_edit.setFixedWidth(130)
        self.unlock_button = self._button("Unlock and convert", "Open the file with this password and go on",
                                          self._unlock)
        self.password_edit.returnPressed.connect(self._unlock)
        self.password_edit.textChanged.connect(lambda text: self.unlock_button.setEnabled(bool(text)))
        layout = QHBoxLayout(self)
        layout.setContentsMargins(2, 0, 2, 0)
        layout.setSpacing(4)
        for widget in (self.cancel_button, self.open_button, self.reveal_button, self.password_edit,
                       self.unlock_button, self.retry_button, self.details_button):
            layout.addWidget(widget)
        layout.addStretch(1)
        self.show_row(row)

    def tab_stops(self) -> list[QWidget]:
        """The row's buttons in the order they are shown."""
        return [self.cancel_button, self.open_button, self.reveal_button, self.password_edit, self.unlock_button,
                self.retry_button, self.details_button]

    def _button(self, text: str, tip: str, slot: Callable[[], None]) -> QPushButton:
        button = QPushButton(text)
        button.setToolTip(tip)
        button.setAccessibleName(text)
        button.setFocusPolicy(Qt.FocusPolicy.TabFocus)
        button.clicked.connect(slot)
        return button

    def _unlock(self) -> None:
        password = self.password_edit.text()
        if password and self.unlock_button.isVisible() and self.unlock_button.isEnabled():
            self.unlock_button.setEnabled(False)
            self.password_edit.clear()
            self.unlock.emit(self.job_id, password)

    def show_row(self, row: JobRow) -> None:
        if row == self.row:
            return
        self.row = row
        failed = row.status in (JobStatus.FAILED, JobStatus.CANCELED) or bool(row.delivery_error)
        self.cancel_button.setVisible(row.active)
        self.open_button.setVisible(bool(row.outputs))
        self.reveal_button.setVisible(bool(row.outputs))
        self.retry_button.setVisible(row.can_retry and not row.can_unlock)  # again without it would fail again
        self.details_button.setVisible(failed)
        self.password_edit.setVisible(row.can_unlock)
        self.unlock_button.setVisible(row.can_unlock)
        self.unlock_button.setEnabled(bool(self.password_edit.text()))


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
        self.table.setTabKeyNavigation(False)  # Tab leaves the list; the arrows move in it
        self.table.verticalHeader().hide()
        self.table.setAlternatingRowColors(True)
        self.table.setItemDelegateForColumn(JobsModel.PROGRESS_COLUMN, ProgressDelegate(self.table))
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        header.setSectionResizeMode(1, QHeaderView.ResizeMode.Stretch)
        header.setSectionResizeMode(JobsModel.STATUS_COLUMN, QHeaderView.ResizeMode.Stretch)
        header.setSectionResizeMode(JobsModel.RESULT_COLUMN, QHeaderView.ResizeMode.Stretch)
        header.setSectionResizeMode(JobsModel.SOURCE_COLUMN, QHeaderView.ResizeMode.ResizeToContents)
        header.resizeSection(0, 130)
        header.resizeSection(JobsModel.PROGRESS_COLUMN, 140)
        header.resizeSection(JobsModel.ELAPSED_COLUMN, 70)
        header.resizeSection(JobsModel.ACTIONS_COLUMN, 240)
        self.table.verticalHeader().setDefaultSectionSize(QLineEdit().sizeHint().height() + 8)
        self.table.setWordWrap(False)  # one line a job; the tooltip has the whole text
        self.table.doubleClicked.connect(self._double_clicked)
        self.empty_hint = EmptyHint(self.table, "No jobs yet. Add files above (or drop them anywhere in the window), "
                                                "pick a tool, and Convert: each job shows here with its progress.")

        self.stop_all_button = QPushButton("Stop all")
        self.stop_all_button.setToolTip("Cancel every job that is waiting or running")
        self.stop_all_button.setAccessibleName("Stop all")
        self.clear_button = QPushButton("C&lear finished")
        self.clear_button.setToolTip("Take finished, failed and canceled jobs off the list (saved files stay)")
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
        for b in (self.stop_all_button, self.cancel_button, self.retry_button, self.open_button, self.reveal_button,
                  self.details_button, self.remove_button, self.clear_button):
            buttons.addWidget(b)
        buttons.addStretch(1)
        buttons.addWidget(self.summary)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(buttons)
        layout.addWidget(self.table, 1)

        self.stop_all_button.clicked.connect(self.stop_all)
        self.clear_button.clicked.connect(controller.clear_finished)
        controller.replaced.connect(self._replaced)
        self._follow: set[str] = set()  # rows retried or unlocked here: the selection moves to their new job
        self._select_when_shown: str | None = None
        self.cancel_button.clicked.connect(self.cancel_selected)
        self.retry_button.clicked.connect(self.retry_selected)
        self.open_button.clicked.connect(self.open_selected)
        self.reveal_button.clicked.connect(self.reveal_selected)
        self.details_button.clicked.connect(self.show_details)
        self.remove_button.clicked.connect(self.remove_selected)
        self.table.selectionModel().selectionChanged.connect(self._update_buttons)
        model.jobs_updated.connect(self._jobs_updated)
        # jobs change through the model's signals; only the elapsed time moves with the clock
        self.clock = QTimer(self)
        self.clock.setInterval(1000)
        self.clock.timeout.connect(model.refresh_elapsed)
        self.clock.start()
        self.details_box: QMessageBox | None = None
        self.buttons = [self.stop_all_button, self.cancel_button, self.retry_button, self.open_button,
                        self.reveal_button, self.details_button, self.remove_button, self.clear_button]
        chain = [self.table, *self.buttons]  # the list, then its buttons, then each row's own
        for first, second in zip(chain, chain[1:], strict=False):
            QWidget.setTabOrder(first, second)
        self._jobs_updated()

    # ---- selection ----

    def selected(self) -> list[JobRow]:
        rows = {i.row() for i in self.table.selectionModel().selectedRows()}
        return self.model.jobs_at(rows)

    def select_job(self, job_id: str) -> None:
        row = self.model.row_of(job_id)
        if row >= 0:
            self.table.selectRow(row)

    def _jobs_updated(self) -> None:
        self._sync_row_actions()
        if self._select_when_shown is not None and self.model.row_of(self._select_when_shown) >= 0:
            self.select_job(self._select_when_shown)
            self._select_when_shown = None
        self._update_buttons()

    def row_actions(self, job_id: str) -> RowActions | None:
        row = self.model.row_of(job_id)
        widget = self.table.indexWidget(self.model.index(row, JobsModel.ACTIONS_COLUMN)) if row >= 0 else None
        return widget if isinstance(widget, RowActions) else None

    def _sync_row_actions(self) -> None:
        """Give each row its buttons; a widget stays with its job as rows come and go above it."""
        for i, row in enumerate(self.model.rows):
            index = self.model.index(i, JobsModel.ACTIONS_COLUMN)
            widget = self.table.indexWidget(index)
            if isinstance(widget, RowActions) and widget.job_id == row.id:
                widget.show_row(row)
                continue
            actions = RowActions(row)
            actions.cancel.connect(lambda job_id: self.controller.cancel([job_id]))
            actions.open.connect(lambda job_id: self._open_result(job_id, self._open_path))
            actions.reveal.connect(lambda job_id: self._open_result(job_id, self._reveal))
            actions.retry.connect(self._retry_one)
            actions.details.connect(self._details_of)
            actions.unlock.connect(self._unlock_one)
            self.table.setIndexWidget(index, actions)
            self._place_in_tab_order(i, actions)
        header = self.table.horizontalHeader()
        wanted = max((w.sizeHint().width() for i in range(self.model.rowCount())
                      if isinstance(w := self.table.indexWidget(self.model.index(i, JobsModel.ACTIONS_COLUMN)),
                                    RowActions)), default=0)
        if wanted > header.sectionSize(JobsModel.ACTIONS_COLUMN):
            header.resizeSection(JobsModel.ACTIONS_COLUMN, wanted)

    def _place_in_tab_order(self, row: int, actions: RowActions) -> None:
        """A new row's buttons come after those of the row above it (the first row's after the list's)."""
        above = self.table.indexWidget(self.model.index(row - 1, JobsModel.ACTIONS_COLUMN)) if row else None
        below = self.table.indexWidget(self.model.index(row + 1, JobsModel.ACTIONS_COLUMN))
        chain = [above.tab_stops()[-1] if isinstance(above, RowActions) else self.buttons[-1], *actions.tab_stops()]
        if isinstance(below, RowActions):
            chain.append(below.tab_stops()[0])
        for first, second in zip(chain, chain[1:], strict=False):
            QWidget.setTabOrder(first, second)

    def _open_result(self, job_id: str, action: Callable[[Path], None]) -> None:
        job = self.model.job(job_id)
        if job is not None and job.outputs:
            action(Path(job.outputs[0]))

    def _retry_one(self, job_id: str) -> None:
        job = self.model.job(job_id)
        if job is not None and job.can_retry:
            self._follow.add(job_id)
            self.controller.retry(job)

    def _unlock_one(self, job_id: str, password: str) -> None:
        job = self.model.job(job_id)
        if job is not None and job.can_unlock:
            self._follow.add(job_id)
            self.controller.unlock(job, password)

    def _details_of(self, job_id: str) -> None:
        self.select_job(job_id)
        self.show_details()

    def _replaced(self, old_id: str, new_id: str) -> None:
        """A job was made in place of a row (Retry, a password, the job after an unlock): when that row
        was acted on here or is selected, the selection follows, so Cancel and Esc reach the new job."""
        selected = {j.id for j in self.selected()}
        if old_id in self._follow or old_id in selected:
            self._follow.discard(old_id)
            self._follow.add(new_id)  # an unlock job hands over to the job after it
            self._select_when_shown = new_id
            self._jobs_updated()

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
        self.stop_all_button.setEnabled(active > 0)
        self.clear_button.setEnabled(any(not r.active for r in self.model.rows))
        self.summary.setText(f"{active} running or waiting" if active else "")

    # ---- actions ----

    def cancel_selected(self) -> bool:
        ids = [j.id for j in self.selected() if j.active]
        if ids:
            self.controller.cancel(ids)
        return bool(ids)

    def stop_all(self) -> list[str]:
        """Cancel every waiting or running job in the list; returns their ids."""
        return self.controller.cancel_all()

    def retry_selected(self) -> None:
        for job in self.selected():
            if job.can_retry:
                self._follow.add(job.id)
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

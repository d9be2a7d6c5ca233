"""The Watch folders panel: folders whose new files are run through a preset, with their last activity and error."""

from __future__ import annotations

import time
from datetime import datetime
from pathlib import Path

from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QComboBox,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from desktop.controllers.presets import PresetsController
from desktop.controllers.watch import WatchController
from desktop.views.keys_panel import Confirm, confirm_dialog
from desktop.views.options_pane import ChooseFolder, choose_folder_dialog
from localapi.core.watch import WatchFolder, WatchResult

EMPTY_HINT = ("A watch folder converts every file that lands in it — saved, copied or downloaded there — with a "
              "preset, and puts the results in an output folder. Files already in it are converted too. Files "
              "that cannot be converted stay where they are; the output folder's failed/ folder says why.\n\n"
              "Click Add… to choose a folder, its output folder and a preset.")
AFTER_CHOICES = (("Keep it where it is", "keep"), ("Move it to .filekiln-done in the folder", "move"),
                 ("Delete it", "delete"))
REFRESH_MS = 20_000  # how often "2 min ago" is worked out again


def ago(ts: float | None, now: float) -> str:
    """``ts`` as a time relative to ``now``: "just now", "5 min ago", "yesterday" ..."""
    if ts is None:
        return "never"
    seconds = max(0.0, now - ts)
    if seconds < 10:
        return "just now"
    if seconds < 60:
        return f"{int(seconds)} s ago"
    if seconds < 3600:
        return f"{int(seconds // 60)} min ago"
    if seconds < 86_400:
        return f"{int(seconds // 3600)} h ago"
    days = int(seconds // 86_400)
    return "yesterday" if days == 1 else f"{days} days ago"


def row_texts(folder: WatchFolder, now: float) -> list[str]:
    """The table's cells for one folder, in :attr:`WatchPanel.COLUMNS` order."""
    return [str(folder.in_dir), str(folder.out_dir), folder.preset, "yes" if folder.recursive else "no",
            folder.after, "paused" if folder.paused else "active", ago(folder.last_activity_at, now),
            folder.last_error or ""]


class AddForm(QGroupBox):
    """The folder to watch, where its results go, the preset, subfolders, and what happens to an input after."""

    def __init__(self, presets: PresetsController, choose_folder: ChooseFolder, parent: QWidget | None = None) -> None:
        super().__init__("Add a watch folder", parent)
        self._presets = presets
        self._choose_folder = choose_folder
        self.in_edit = QLineEdit()
        self.in_edit.setPlaceholderText("The folder to watch")
        self.in_edit.setAccessibleName("Folder to watch")
        self.out_edit = QLineEdit()
        self.out_edit.setPlaceholderText("Where the converted files go")
        self.out_edit.setAccessibleName("Output folder")
        self.in_button = QPushButton("Choose…")
        self.in_button.setAccessibleName("Choose the folder to watch")
        self.in_button.clicked.connect(lambda: self._choose(self.in_edit))
        self.out_button = QPushButton("Choose…")
        self.out_button.setAccessibleName("Choose the output folder")
        self.out_button.clicked.connect(lambda: self._choose(self.out_edit))
        self.preset_combo = QComboBox()
        self.preset_combo.setAccessibleName("Preset")
        self.subfolders_box = QCheckBox("Include subfolders (their tree is kept in the output folder)")
        self.after_combo = QComboBox()
        self.after_combo.setAccessibleName("After converting a file")
        for text, value in AFTER_CHOICES:
            self.after_combo.addItem(text, value)
        self.problem = QLabel()
        self.problem.setWordWrap(True)
        self.submit_button = QPushButton("Watch t&his folder")  # W is the tab's
        self.submit_button.setAccessibleName("Watch this folder")
        self.cancel_button = QPushButton("Cancel")
        form = QFormLayout(self)
        form.addRow(_label("&Folder", self.in_edit), _beside(self.in_edit, self.in_button))
        form.addRow(_label("&Output folder", self.out_edit), _beside(self.out_edit, self.out_button))
        form.addRow("Prese&t", self.preset_combo)
        form.addRow("", self.subfolders_box)
        form.addRow("After converti&ng", self.after_combo)  # A is Add…
        buttons = QHBoxLayout()
        buttons.addWidget(self.problem, 1)
        buttons.addWidget(self.cancel_button)
        buttons.addWidget(self.submit_button)
        form.addRow(buttons)
        presets.changed.connect(self.show_presets)
        self.show_presets()

    def show_presets(self) -> None:
        chosen = self.preset_combo.currentData()
        self.preset_combo.clear()
        for preset in self._presets.presets:
            self.preset_combo.addItem(preset.name, preset.name)
            self.preset_combo.setItemData(self.preset_combo.count() - 1, preset.description,
                                          Qt.ItemDataRole.ToolTipRole)
        index = self.preset_combo.findData(chosen)
        self.preset_combo.setCurrentIndex(max(index, 0))

    def _choose(self, edit: QLineEdit) -> None:
        folder = self._choose_folder(edit.text() or str(Path.home()))
        if folder:
            edit.setText(folder)

    def values(self) -> tuple[Path, Path, str, bool, str] | None:
        """(folder, output folder, preset, subfolders, after), or None with :attr:`problem` saying what is missing."""
        in_text, out_text = self.in_edit.text().strip(), self.out_edit.text().strip()
        preset = self.preset_combo.currentData()
        missing = ("the folder to watch" if not in_text else "the output folder" if not out_text
                   else "a preset" if not preset else None)
        if missing:
            self.problem.setText(f"Choose {missing}.")
            return None
        self.problem.clear()
        return Path(in_text), Path(out_text), str(preset), self.subfolders_box.isChecked(), \
            str(self.after_combo.currentData())

    def clear(self) -> None:
        self.in_edit.clear()
        self.out_edit.clear()
        self.subfolders_box.setChecked(False)
        self.after_combo.setCurrentIndex(0)
        self.problem.clear()


def _label(text: str, buddy: QWidget) -> QLabel:
    label = QLabel(text)  # a row whose field is a layout gets no buddy of its own: the mnemonic needs one
    label.setBuddy(buddy)
    return label


def _beside(edit: QLineEdit, button: QPushButton) -> QHBoxLayout:
    row = QHBoxLayout()
    row.addWidget(edit, 1)
    row.addWidget(button)
    return row


class WatchPanel(QWidget):
    """The watch folders as a table, Add… / Pause / Resume / Remove, and the add form."""

    COLUMNS = ("Folder", "Output folder", "Preset", "Subfolders", "After", "State", "Last activity", "Last error")
    ACTIVITY, ERROR = 6, 7

    def __init__(self, controller: WatchController, presets: PresetsController,
                 choose_folder: ChooseFolder | None = None, confirm: Confirm | None = None,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.controller = controller
        self._confirm = confirm or confirm_dialog(self)
        self.folders: list[WatchFolder] = []

        self.table = QTableWidget(0, len(self.COLUMNS))
        self.table.setHorizontalHeaderLabels(list(self.COLUMNS))
        self.table.setAccessibleName("Watch folders")
        self.table.verticalHeader().hide()
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setTabKeyNavigation(False)  # Tab leaves the list; the arrows move in it
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setWordWrap(False)
        self.table.setTextElideMode(Qt.TextElideMode.ElideMiddle)  # a path's end names the folder
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        header.setStretchLastSection(True)
        for column, width in enumerate((240, 240, 140, 80, 70, 70, 110)):
            self.table.setColumnWidth(column, width)
        for column in (3, 4, 5):  # Subfolders, After, State: a word each, shown whole
            header.setSectionResizeMode(column, QHeaderView.ResizeMode.ResizeToContents)
        self.hint = QLabel(EMPTY_HINT)
        self.hint.setWordWrap(True)
        self.hint.setAlignment(Qt.AlignmentFlag.AlignTop)
        self.hint.setAccessibleName("No watch folders yet")

        self.add_button = QPushButton("&Add…")
        self.add_button.setAccessibleName("Add a watch folder")
        self.pause_button = QPushButton("&Pause")
        self.pause_button.setAccessibleName("Pause the selected watch folder")
        self.remove_button = QPushButton("&Remove")
        self.remove_button.setAccessibleName("Remove the selected watch folder")
        self.status = QLabel()
        self.status.setWordWrap(True)
        self.form = AddForm(presets, choose_folder or choose_folder_dialog(self))
        self.form.hide()

        top = QHBoxLayout()
        for button in (self.add_button, self.pause_button, self.remove_button):
            top.addWidget(button)
        top.addWidget(self.status, 1)
        layout = QVBoxLayout(self)
        layout.addLayout(top)
        layout.addWidget(self.form)
        layout.addWidget(self.table, 1)
        layout.addWidget(self.hint, 1)

        self.add_button.clicked.connect(self.open_form)
        self.pause_button.clicked.connect(self.toggle_pause)
        self.remove_button.clicked.connect(self.remove_selected)
        self.form.submit_button.clicked.connect(self.submit)
        self.form.cancel_button.clicked.connect(self.close_form)
        self.table.itemSelectionChanged.connect(self._update_buttons)
        controller.changed.connect(self.show_folders)
        controller.added.connect(self._added)
        controller.failed.connect(self._failed)
        controller.result.connect(self._result)
        self._clock = QTimer(self)
        self._clock.setInterval(REFRESH_MS)
        self._clock.timeout.connect(self._show_times)
        self._clock.start()
        self.show_folders()

    # ---- the table ----

    def show_folders(self) -> None:
        chosen = self.selected()
        self.folders = list(self.controller.folders)
        now = time.time()
        self.table.setRowCount(len(self.folders))
        for i, folder in enumerate(self.folders):
            for j, text in enumerate(row_texts(folder, now)):
                item = QTableWidgetItem(text)
                item.setToolTip(text)
                if j == self.ACTIVITY and folder.last_activity_at is not None:
                    item.setToolTip(datetime.fromtimestamp(folder.last_activity_at).strftime("%Y-%m-%d %H:%M:%S"))
                self.table.setItem(i, j, item)
        empty = not self.folders
        self.table.setVisible(not empty)
        self.hint.setVisible(empty)
        if chosen is not None:
            self.select(chosen.id)
        self._update_buttons()

    def _show_times(self) -> None:
        now = time.time()
        for i, folder in enumerate(self.folders):
            item = self.table.item(i, self.ACTIVITY)
            if item is not None:
                item.setText(ago(folder.last_activity_at, now))

    def row_of(self, folder_id: str) -> int | None:
        return next((i for i, f in enumerate(self.folders) if f.id == folder_id), None)

    def cell(self, folder_id: str, column: int) -> str:
        """The text shown for one folder in ``column`` ("" when it is not listed)."""
        row = self.row_of(folder_id)
        item = self.table.item(row, column) if row is not None else None
        return item.text() if item is not None else ""

    def select(self, folder_id: str) -> None:
        row = self.row_of(folder_id)
        if row is not None:
            self.table.selectRow(row)

    def selected(self) -> WatchFolder | None:
        rows = self.table.selectionModel().selectedRows()
        if not rows or rows[0].row() >= len(self.folders):
            return None
        return self.folders[rows[0].row()]

    def _update_buttons(self) -> None:
        folder = self.selected()
        self.pause_button.setEnabled(folder is not None)
        self.remove_button.setEnabled(folder is not None)
        paused = folder is not None and folder.paused
        self.pause_button.setText("&Resume" if paused else "&Pause")
        self.pause_button.setAccessibleName(f"{'Resume' if paused else 'Pause'} the selected watch folder")

    # ---- actions ----

    def open_form(self) -> None:
        self.form.show()
        self.form.in_edit.setFocus()

    def close_form(self) -> None:
        self.form.clear()
        self.form.hide()

    def submit(self) -> None:
        values = self.form.values()
        if values is None:
            return
        self.form.submit_button.setEnabled(False)
        self.status.setText("Adding…")
        self.controller.add(*values)

    def _added(self, folder: WatchFolder) -> None:
        self.form.submit_button.setEnabled(True)
        self.close_form()
        self.select(folder.id)
        self.status.setText(f"Watching {folder.in_dir}.")

    def _failed(self, text: str, details: str) -> None:
        """The window shows the failure too; here it is said where it happened."""
        self.form.submit_button.setEnabled(True)
        if not self.form.isHidden():  # the add form is open (the tab may not be in front)
            self.form.problem.setText(text)
        self.status.setText(text)

    def toggle_pause(self) -> None:
        folder = self.selected()
        if folder is None:
            return
        if folder.paused:
            self.controller.resume(folder.id)
        else:
            self.controller.pause(folder.id)

    def remove_selected(self) -> None:
        folder = self.selected()
        if folder is None:
            return
        if self._confirm("Remove watch folder", f"Stop watching {folder.in_dir}? The files in it and the converted "
                                                "files in the output folder stay where they are."):
            self.controller.remove(folder.id)

    def _result(self, result: WatchResult) -> None:
        if result.ok:
            outputs = ", ".join(p.name for p in result.outputs) or "nothing"
            self.status.setText(f"{result.rel_path}: saved {outputs}." + (f" ({result.message})" if result.message
                                                                           else ""))
        else:
            message = (result.message or "").rstrip()
            if message and message[-1] not in ".!?":
                message += "."
            where = f" See {result.report}." if result.report is not None else ""
            self.status.setText(f"{result.rel_path} could not be converted: {message}{where}")

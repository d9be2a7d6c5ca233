"""The Convert page: files in, a tool and its options, and the Convert button."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from desktop.controllers.batches import BatchTracker
from desktop.controllers.jobs import JobsController
from desktop.models.files import FileEntry, FileListModel, human_size, parse_filter
from desktop.models.jobs import JobRow
from desktop.models.tools import ToolTreeModel
from desktop.store import Prefs, PresetStore
from desktop.views.drop_zone import DropZone, FileListView
from desktop.views.options_pane import AskText, ChooseFolder, OptionsPane
from desktop.views.tool_picker import ToolPicker

ChooseFiles = Callable[[], list[Path]]


class ConvertPanel(QWidget):
    batch_started = Signal(str, int)  # batch id, number of jobs

    def __init__(self, files: FileListModel, tools: ToolTreeModel, controller: JobsController, presets: PresetStore,
                 prefs: Prefs, save_prefs: Callable[[], None], choose_files: ChooseFiles | None = None,
                 choose_input_folder: ChooseFolder | None = None, choose_output_folder: ChooseFolder | None = None,
                 ask_text: AskText | None = None,
                 check_params: Callable[[str, dict[str, Any]], dict[str, str]] | None = None,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.files = files
        self.tools = tools
        self.controller = controller
        self.prefs = prefs
        self._save_prefs = save_prefs
        self._choose_files = choose_files or self._files_dialog
        self._choose_input_folder = choose_input_folder or self._folder_dialog
        self._batch: tuple[str, str] | None = None  # the last Convert's batch id and tool title
        self._batches = BatchTracker()

        self.drop_zone = DropZone()
        self.filter_edit = QLineEdit(prefs.folder_filter)
        self.filter_edit.setPlaceholderText("From folders, only: e.g. *.pdf; *.jpg (empty: all files)")
        self.filter_edit.setAccessibleName("Folder filter")
        self.file_view = FileListView()
        self.file_view.setModel(files)
        self.remove_button = QPushButton("Remove")
        self.clear_button = QPushButton("Clear")
        self.files_label = QLabel()
        left = QWidget()
        left_layout = QVBoxLayout(left)
        left_layout.setContentsMargins(0, 0, 0, 0)
        left_layout.addWidget(self.drop_zone)
        left_layout.addWidget(self.filter_edit)
        left_layout.addWidget(self.file_view, 1)
        row = QHBoxLayout()
        row.addWidget(self.files_label, 1)
        row.addWidget(self.remove_button)
        row.addWidget(self.clear_button)
        left_layout.addLayout(row)

        self.picker = ToolPicker(tools)
        self.options = OptionsPane(presets, prefs, save_prefs, ask_text=ask_text, choose_folder=choose_output_folder,
                                   check_params=check_params)
        self.convert_button = QPushButton("Convert")
        self.convert_button.setDefault(True)
        self.convert_button.setToolTip("Convert (Ctrl+Return)")
        self.convert_button.setAccessibleName("Convert")
        font = self.convert_button.font()
        font.setBold(True)
        self.convert_button.setFont(font)
        self.convert_button.setMinimumHeight(int(self.convert_button.sizeHint().height() * 1.4))
        self.message = QLabel()
        self.message.setWordWrap(True)
        self.message.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.reason_label = QLabel()  # why Convert is disabled, in words beside the button
        self.reason_label.setObjectName("convertReason")
        self.reason_label.setWordWrap(True)
        right = QWidget()
        right_layout = QVBoxLayout(right)
        right_layout.setContentsMargins(0, 0, 0, 0)
        right_layout.addWidget(self.options, 1)
        right_layout.addWidget(self.message)
        right_layout.addWidget(self.reason_label)
        right_layout.addWidget(self.convert_button)

        splitter = QSplitter(Qt.Orientation.Horizontal)
        splitter.addWidget(left)
        splitter.addWidget(self.picker)
        splitter.addWidget(right)
        splitter.setStretchFactor(0, 3)
        splitter.setStretchFactor(1, 2)
        splitter.setStretchFactor(2, 3)
        splitter.setChildrenCollapsible(False)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(splitter)

        self.drop_zone.paths_dropped.connect(self.add_paths)
        self.file_view.paths_dropped.connect(self.add_paths)
        self.drop_zone.add_files_clicked.connect(self.add_files)
        self.drop_zone.add_folder_clicked.connect(self.add_folder)
        self.file_view.remove_requested.connect(self.remove_selected)
        self.remove_button.clicked.connect(self.remove_selected)
        self.clear_button.clicked.connect(files.clear)
        self.clear_button.clicked.connect(lambda: self.show_message(""))
        # the message about the last Convert follows its jobs, and goes with them when the list is cleared
        controller.submitted.connect(self._submitted)
        controller.snapshot.connect(self._jobs_changed)
        controller.cleared.connect(lambda: self.show_message(""))
        self.filter_edit.editingFinished.connect(self._filter_changed)
        files.files_changed.connect(self._files_changed)
        files.loading_changed.connect(lambda _: self._update_state())
        self.file_view.selectionModel().selectionChanged.connect(lambda *_: self._files_changed())
        self.picker.tool_changed.connect(self._tool_changed)
        self.options.validity_changed.connect(lambda _: self._update_state())
        self.options.form.changed.connect(self._update_state)  # the reason in words follows each edit
        self.convert_button.clicked.connect(self.convert)
        self._set_tab_order()
        self._files_changed()

    def _set_tab_order(self) -> None:
        chain: list[QWidget] = [
            self.drop_zone.add_files_button, self.drop_zone.add_folder_button, self.filter_edit, self.file_view,
            self.remove_button, self.clear_button, self.picker.search, self.picker.tree, self.options.format_combo,
            self.options.preset_combo, self.options.save_preset_button, self.options.delete_preset_button,
            self.options.reset_button, self.options.form, self.options.next_to_input, self.options.in_folder,
            self.options.folder_edit, self.options.choose_button, self.options.clash_combo, self.convert_button,
        ]
        for first, second in zip(chain, chain[1:], strict=False):
            QWidget.setTabOrder(first, second)

    # ---- files ----

    def _files_dialog(self) -> list[Path]:
        names, _ = QFileDialog.getOpenFileNames(self, "Add files", str(Path.home()))
        return [Path(n) for n in names]

    def _folder_dialog(self, start: str) -> str | None:
        return QFileDialog.getExistingDirectory(self, "Add a folder", start) or None

    def add_files(self) -> None:
        self.add_paths(self._choose_files())

    def add_folder(self) -> None:
        folder = self._choose_input_folder(str(Path.home()))
        if folder:
            self.add_paths([Path(folder)])

    def add_paths(self, paths: list[Path]) -> None:
        self.files.add_paths(paths, parse_filter(self.filter_edit.text()))

    def remove_selected(self) -> None:
        self.files.remove_rows(self.file_view.selected_rows())

    def _filter_changed(self) -> None:
        self.prefs.folder_filter = self.filter_edit.text()
        self._save_prefs()

    def files_in_play(self) -> list[FileEntry]:
        """The selected files, or all of them when none is selected."""
        rows = self.file_view.selected_rows()
        return self.files.entries_at(rows) if rows else self.files.entries

    def _files_changed(self) -> None:
        entries = self.files_in_play()
        self.tools.set_formats({e.format for e in entries} if entries else None)
        total = self.files.rowCount()
        size = sum(e.size for e in self.files.entries)
        selected = len(self.file_view.selected_rows())
        text = f"{total} file{'s' * (total != 1)}, {human_size(size)}" if total else "No files yet"
        if selected:
            text += f" — {selected} selected"
        self.files_label.setText(text)
        hint = ""
        if entries and not self.tools.visible_tools():
            unknown = [e.path.name for e in entries if e.format is None]
            if unknown:
                hint = f"FileKiln does not recognise {', '.join(unknown[:3])}{'…' * (len(unknown) > 3)}."
            else:
                kinds = ", ".join(sorted({e.type_label for e in entries}))
                hint = f"No tool takes all of these together ({kinds}). Select the files to convert together."
        self.picker.set_hint(hint)
        self._update_state()

    # ---- tool ----

    def _tool_changed(self, tool_id: str | None) -> None:
        self.options.set_tool(self.tools.tool(tool_id))
        self._update_state()

    def select_tool(self, tool_id: str) -> bool:
        return self.picker.select(tool_id)

    # ---- convert ----

    def problems(self) -> list[str]:
        """Why Convert cannot run now (empty when it can)."""
        entries = self.files_in_play()
        tool = self.options.tool
        found = []
        if self.files.loading:
            found.append("Reading the files…")
        if not entries:
            found.append("Add files to convert.")
        if tool is None:
            found.append("Choose a tool.")
            return found
        if not tool.available:
            found.append(tool.reason or f"{tool.title} is not available.")
        if entries and not tool.accepts_all(e.format for e in entries):
            found.append(f"{tool.title} does not take all of these files.")
        too_big = [e.path.name for e in entries if e.size > tool.max_input_size_bytes]
        if too_big:
            found.append(f"Too large for {tool.title} (limit {human_size(tool.max_input_size_bytes)}): "
                         + ", ".join(too_big[:3]))
        if not self.options.form.is_valid():
            found.append(self.options.form.problem_text())
        return found

    def _update_state(self) -> None:
        problems = self.problems()
        self.convert_button.setEnabled(not problems)
        self.convert_button.setToolTip(problems[0] if problems else "Convert (Ctrl+Return)")
        self.reason_label.setText(problems[0] if problems else "")
        self.reason_label.setVisible(bool(problems))

    def convert(self) -> str | None:
        """Queue the jobs; returns the batch id, or ``None`` (with the reason shown) when it cannot."""
        problems = self.problems()
        if problems:
            self.show_message(problems[0])
            return None
        tool = self.options.tool
        assert tool is not None
        entries = self.files_in_play()
        paths = [e.path for e in entries]
        groups = [paths] if tool.merges_inputs else [[p] for p in paths]
        self.options.remember()
        batch = self.controller.submit(groups, tool.id, self.options.params(), self.options.output_format(),
                                       self.options.output_folder(), self.options.clash_policy(),
                                       self.prefs.output_template or None)
        self._batch = (batch, tool.title)
        count = len(groups)
        self.show_message(f"{tool.title}: {count} job{'s' * (count != 1)} queued.")
        self.batch_started.emit(batch, count)
        return batch

    def show_message(self, text: str) -> None:
        self.message.setText(text)

    def _submitted(self, batch: str, job_ids: list[str]) -> None:
        if self._batch is not None and batch == self._batch[0]:
            self._batches.add(batch, job_ids)

    def _jobs_changed(self, rows: list[JobRow]) -> None:
        for summary in self._batches.update({r.id: r.status for r in rows}):
            if self._batch is not None and summary.batch == self._batch[0]:
                text = summary.message
                self.show_message(f"{self._batch[1]}: {text[:1].lower()}{text[1:]}")

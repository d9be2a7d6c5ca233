"""The Convert page: files in, a tool (or a preset) and its options, the steps after it, and Convert.

With no step added, Convert queues ordinary jobs of the chosen tool. With steps added (the workflow
builder) or a preset of several steps chosen, it starts one workflow per file, or one for all the
files when a step merges them (the steps before it run once per file inside the workflow); the
final results land where a job's would.

Files from a dropped (or added) folder keep its tree: their results go to the same subfolder inside
the output folder, a merging tool makes one result per subfolder, and the files the tool (or the
first step) does not take are passed by and named in the message, as ``filekiln convert DIR
--recursive`` does. One progress bar under Convert follows the last Convert's jobs or workflows."""

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
    QScrollArea,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from desktop.controllers.batches import BatchTracker
from desktop.controllers.jobs import JobsController
from desktop.controllers.presets import PresetsController, chain_problem
from desktop.controllers.workflows import FlowBatch, WorkflowEnd, WorkflowsController
from desktop.models.files import FileEntry, FileListModel, group_entries, human_size, parse_filter, split_for_tool
from desktop.models.jobs import JobRow
from desktop.models.tools import ToolInfo, ToolTreeModel
from desktop.store import Prefs, PresetStore
from desktop.views.batch_progress import BatchProgress
from desktop.views.drop_zone import DropZone, FileListView
from desktop.views.fitted_label import FittedLabel
from desktop.views.options_pane import AskText, ChooseFolder, OptionsPane
from desktop.views.tool_picker import ToolPicker
from desktop.views.workflow_builder import WorkflowBuilder
from localapi.core.workflows.records import StepSpec

ChooseFiles = Callable[[], list[Path]]


class ConvertPanel(QWidget):
    batch_started = Signal(str, int)  # batch id, number of jobs

    def __init__(self, files: FileListModel, tools: ToolTreeModel, controller: JobsController, presets: PresetStore,
                 prefs: Prefs, save_prefs: Callable[[], None], choose_files: ChooseFiles | None = None,
                 choose_input_folder: ChooseFolder | None = None, choose_output_folder: ChooseFolder | None = None,
                 ask_text: AskText | None = None,
                 check_params: Callable[[str, dict[str, Any]], dict[str, str]] | None = None,
                 shared_presets: PresetsController | None = None, workflows: WorkflowsController | None = None,
                 parent: QWidget | None = None) -> None:
        """``shared_presets`` and ``workflows``: the service's presets and workflows; without them the
        page has no workflow builder and saves presets in ``presets`` as before."""
        super().__init__(parent)
        self.files = files
        self.shared_presets = shared_presets
        self.workflows = workflows
        self._ask_text = ask_text
        self._flow: FlowBatch | None = None  # the last Convert that started workflows
        self.tools = tools
        self.controller = controller
        self.prefs = prefs
        self._save_prefs = save_prefs
        self._choose_files = choose_files or self._files_dialog
        self._choose_input_folder = choose_input_folder or self._folder_dialog
        self._batch: tuple[str, str] | None = None  # the last Convert's batch id and tool title
        self._batches = BatchTracker()
        self._skipped_note = ""  # the last Convert's files from folders that its tool does not take

        self.drop_zone = DropZone()
        self.filter_edit = QLineEdit(prefs.folder_filter)
        self.filter_edit.setPlaceholderText("From folders, only: e.g. *.pdf; *.jpg (empty: all files)")
        self.filter_edit.setAccessibleName("Folder filter")
        self.file_view = FileListView()
        self.file_view.setModel(files)
        self.remove_button = QPushButton("Remove")
        self.clear_button = QPushButton("Clear")
        self.files_label = QLabel()
        self.files_label.setWordWrap(True)  # "12 files, 1.4 GB" in two lines sooner than a wider minimum
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
                                   check_params=check_params, shared=shared_presets,
                                   save_handler=self.save_as_preset if shared_presets is not None else None)
        self.options.tool_requested.connect(self._tool_requested)  # the first screen's most used tools
        self.builder = WorkflowBuilder(lambda: self.tools.tools, check_params)
        self.builder.setVisible(workflows is not None and shared_presets is not None)
        self.convert_button = QPushButton("Convert")
        self.convert_button.setDefault(True)
        self.convert_button.setToolTip("Convert (Ctrl+Return)")
        self.convert_button.setAccessibleName("Convert")
        font = self.convert_button.font()
        font.setBold(True)
        self.convert_button.setFont(font)
        self.convert_button.setMinimumHeight(int(self.convert_button.sizeHint().height() * 1.4))
        # the two labels keep their height whatever they say, so the panes do not move as they change
        self.message = FittedLabel(lines=2)
        self.message.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.reason_label = FittedLabel(lines=2)  # why Convert is disabled, in words beside the button
        self.reason_label.setObjectName("convertReason")
        self.progress = BatchProgress()  # the last Convert as a whole; each file's status is in the jobs list
        self.options.add_below_settings(self.builder)
        # on a small screen the options scroll, and Convert stays in sight below them
        self.options_scroll = QScrollArea()
        self.options_scroll.setWidgetResizable(True)
        self.options_scroll.setFrameShape(QScrollArea.Shape.NoFrame)
        self.options_scroll.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self.options_scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.options_scroll.setWidget(self.options)
        right = QWidget()
        right_layout = QVBoxLayout(right)
        right_layout.setContentsMargins(0, 0, 0, 0)
        right_layout.addWidget(self.options_scroll, 1)
        right_layout.addWidget(self.message)
        right_layout.addWidget(self.reason_label)
        right_layout.addWidget(self.convert_button)
        right_layout.addWidget(self.progress)

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
        controller.cleared.connect(self.progress.hide_if_finished)
        self.filter_edit.editingFinished.connect(self._filter_changed)
        files.files_changed.connect(self._files_changed)
        files.loading_changed.connect(lambda _: self._update_state())
        self.file_view.selectionModel().selectionChanged.connect(lambda *_: self._files_changed())
        self.picker.tool_changed.connect(self._tool_changed)
        self.picker.preset_chosen.connect(self.choose_preset)
        self.options.format_combo.currentIndexChanged.connect(lambda _: self._chain_changed())
        self.builder.changed.connect(self._update_state)
        self.builder.changed.connect(self._title_first_step)
        self.builder.save_requested.connect(self._ask_preset_name)
        if workflows is not None:
            workflows.submitted.connect(self._flows_submitted)
            workflows.finished.connect(self._flow_finished)
        if shared_presets is not None:
            shared_presets.failed.connect(self.show_message)
            shared_presets.saved.connect(lambda name: self.show_message(f"Saved the preset “{name}”."))
        self.options.validity_changed.connect(lambda _: self._update_state())
        self.options.form.changed.connect(self._update_state)  # the reason in words follows each edit
        self.convert_button.clicked.connect(self.convert)
        self._after_convert: list[QWidget] = []
        for scroll in self.options.findChildren(QScrollArea):
            scroll.setFocusPolicy(Qt.FocusPolicy.NoFocus)  # Tab goes to the settings, not to the box around them
        self.file_view.setTabKeyNavigation(False)
        # the fields are made anew for each tool and each added step: each time they take their place again
        self.options.form.rebuilt.connect(self._set_tab_order)
        self.builder.changed.connect(self._set_tab_order)
        self.options.form.rebuilt.connect(self._fit_options_width)
        self.builder.changed.connect(self._fit_options_width)
        self._set_tab_order()
        self._fit_options_width()
        self._files_changed()

    def set_tab_followers(self, widgets: list[QWidget]) -> None:
        """Tab goes on from Convert to ``widgets`` (the jobs list), in this order."""
        self._after_convert = list(widgets)
        self._set_tab_order()

    def tab_chain(self) -> list[QWidget]:
        """The page's widgets in the order Tab visits them (docs/desktop.md, Keyboard)."""
        options = self.options
        steps: list[QWidget] = []
        for editor in self.builder.editors:
            steps += [editor.tool_combo, editor.remove_button, editor.format_combo, *editor.form.tab_stops()]
        return [
            self.drop_zone.add_files_button, self.drop_zone.add_folder_button, self.filter_edit, self.file_view,
            self.remove_button, self.clear_button, self.picker.search, self.picker.tree, options.format_combo,
            options.preset_combo, options.save_preset_button, options.delete_preset_button, options.reset_button,
            *options.form.tab_stops(), *steps, self.builder.add_button, self.builder.save_button,
            options.next_to_input, options.in_folder, options.folder_edit, options.choose_button, options.clash_combo,
            self.convert_button, *self._after_convert,
        ]

    def _set_tab_order(self) -> None:
        chain = self.tab_chain()
        for first, second in zip(chain, chain[1:], strict=False):
            QWidget.setTabOrder(first, second)

    def _fit_options_width(self) -> None:
        """The options scroll up and down only: their pane is as wide as the widest of them needs."""
        bar = self.options_scroll.verticalScrollBar().sizeHint().width()
        self.options_scroll.setMinimumWidth(self.options.minimumSizeHint().width() + bar)

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
        named = [e for e in entries if e.root is None]
        from_folders = [e for e in entries if e.root is not None]
        # files named directly must all be taken; of the files from folders, the tool's are converted
        self.tools.set_formats({e.format for e in named} if entries else None, {e.format for e in from_folders})
        total = self.files.rowCount()
        size = sum(e.size for e in self.files.entries)
        selected = len(self.file_view.selected_rows())
        text = f"{total} file{'s' * (total != 1)}, {human_size(size)}" if total else "No files yet"
        if selected:
            text += f" — {selected} selected"
        self.files_label.setText(text)
        hint = ""
        if entries and not self.tools.visible_tools():
            unknown = [e.path.name for e in named if e.format is None]
            if unknown:
                hint = f"FileKiln does not recognise {', '.join(unknown[:3])}{'…' * (len(unknown) > 3)}."
            elif not named and all(e.format is None for e in from_folders):
                hint = "FileKiln does not recognise any of the files from these folders."
            else:
                kinds = ", ".join(sorted({e.type_label for e in entries}))
                hint = f"No tool takes all of these together ({kinds}). Select the files to convert together."
        self.picker.set_hint(hint)
        self._update_state()

    # ---- tool ----

    def _tool_changed(self, tool_id: str | None) -> None:
        self.options.set_tool(self.tools.tool(tool_id))
        self.builder.clear()  # a new first step starts a new chain
        self._chain_changed()

    def choose_preset(self, name: str) -> None:
        """Fill the page from the preset ``name``: its first step in the options, the rest as added steps."""
        preset = self.shared_presets.get(name) if self.shared_presets is not None else None
        tool = self.tools.tool(preset.steps[0].tool) if preset is not None and preset.steps else None
        if preset is None or tool is None:
            return
        self.options.set_tool(tool)
        self.options.show_choice({"params": preset.steps[0].params, "outputFormat": preset.steps[0].output_format})
        self._chain_changed()
        self.builder.set_steps(preset.steps[1:])
        self._update_state()

    def _title_first_step(self) -> None:
        tool = self.options.tool
        self.options.settings_box.setTitle(f"Step 1: {tool.title}" if self.builder.editors and tool else "Settings")

    def _first_output(self) -> set[str] | None:
        """What the first step makes: its output format, or the inputs' own (a tool that keeps the format)."""
        fmt = self.options.output_format()
        if fmt is None:
            return None
        if fmt != "keep":
            return {fmt}
        formats = {e.format for e in self.entries_to_convert()[0]}
        return {f for f in formats if f} if formats and None not in formats else None

    def _chain_changed(self) -> None:
        self.builder.set_first(self._first_output(), chosen=self.options.tool is not None)
        self._update_state()

    def chain(self) -> list[StepSpec]:
        """The steps Convert runs: the chosen tool with its options, then the added steps."""
        tool = self.options.tool
        if tool is None:
            return []
        return [StepSpec(tool.id, self.options.params(), self.options.output_format()), *self.builder.steps()]

    # ---- presets ----

    def _ask_preset_name(self) -> None:
        if self.options.tool is not None:
            self.options.save_preset()  # asks the name, then hands it to save_as_preset

    def save_as_preset(self, name: str) -> None:
        """Save the chain (the tool, its options and the added steps) as the service preset ``name``."""
        steps = self.chain()
        if self.shared_presets is None or not steps:
            return
        problem = self._chain_problem(steps, None)
        if problem:
            self.show_message(problem)
            return
        titles = [t.title if (t := self.tools.tool(s.tool)) else s.tool for s in steps]
        self.shared_presets.save(name, steps, " → ".join(titles))

    def _tool_requested(self, tool_id: str) -> None:
        if not self.select_tool(tool_id):
            self.show_message("That tool is not in the list now: clear the search, or add files it takes.")

    def select_tool(self, tool_id: str) -> bool:
        return self.picker.select(tool_id)

    # ---- convert ----

    def entries_to_convert(self) -> tuple[list[FileEntry], list[FileEntry]]:
        """(files Convert runs on, files from folders it passes by): those the chosen tool, the first
        step, does not take. Without a tool every file is in play."""
        entries = self.files_in_play()
        tool = self.options.tool
        if tool is None:
            return entries, []
        return split_for_tool(entries, tool.accepts, tool.max_input_size_bytes)

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
        taken, _ = self.entries_to_convert()
        named = [e for e in entries if e.root is None]
        if named and not tool.accepts_all(e.format for e in named):
            found.append(f"{tool.title} does not take all of these files." if len(named) == len(entries)
                         else f"{tool.title} does not take all of the files named directly.")
        elif entries and not taken:
            found.append(f"{tool.title} takes none of the files from these folders.")
        too_big = [e.path.name for e in taken if e.size > tool.max_input_size_bytes]
        if too_big:
            found.append(f"Too large for {tool.title} (limit {human_size(tool.max_input_size_bytes)}): "
                         + ", ".join(too_big[:3]))
        if not self.options.form.is_valid():
            found.append(self.options.form.problem_text())
        if self.builder.editors:
            found.extend(self._builder_problems(taken))
        return found

    def _builder_problems(self, entries: list[FileEntry]) -> list[str]:
        """What is wrong with the added steps; the chain's problem is also shown under them."""
        if any(e.tool_id() is None for e in self.builder.editors):
            text = "No tool takes what the step before makes: remove that step."
            self.builder.show_problem(text)
            return [text]
        if not self.builder.is_complete():
            self.builder.show_problem("")
            return ["Check the settings of the added steps."]
        formats = [e.format for e in entries] if entries else None
        problem = self._chain_problem(self.chain(), formats, len(entries))
        self.builder.show_problem(problem or "")
        return [problem] if problem else []

    def _chain_problem(self, steps: list[StepSpec], formats: list[str | None] | None, count: int = 1) -> str | None:
        if self.workflows is None:
            return None
        return chain_problem(self.workflows.service, steps, formats, count)

    def _update_state(self) -> None:
        if not self.builder.editors:
            self.builder.show_problem("")
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
        taken, passed = self.entries_to_convert()
        self._skipped_note = skipped_note(tool, passed)
        self.options.remember()
        if self.builder.editors and self.workflows is not None:
            # a step that merges takes every file of a folder: the workflow fans out the steps before it itself
            merges = any((t := self.tools.tool(s.tool)) is not None and t.merges_inputs for s in self.chain())
            return self._run_workflows(taken, merges)
        groups = group_entries(taken, tool.merges_inputs)
        batch = self.controller.submit([g.paths for g in groups], tool.id, self.options.params(),
                                       self.options.output_format(), self.options.output_folder(),
                                       self.options.clash_policy(), self.prefs.output_template or None,
                                       subfolders=[g.subfolder for g in groups])
        self._batch = (batch, tool.title)
        count = len(groups)
        self.progress.follow(batch, count)
        self.show_message(f"{tool.title}: {count} job{'s' * (count != 1)} queued.", batch=True)
        self.batch_started.emit(batch, count)
        return batch

    def _run_workflows(self, entries: list[FileEntry], merges: bool) -> str:
        assert self.workflows is not None
        steps = self.chain()
        groups = group_entries(entries, merges)
        batch = self.workflows.run([g.paths for g in groups], steps, self.options.output_folder(),
                                   self.options.clash_policy(), self.prefs.output_template or None,
                                   subfolders=[g.subfolder for g in groups])
        title = self.picker.current_preset or " → ".join(
            t.title if (t := self.tools.tool(s.tool)) else s.tool for s in steps)
        count = len(groups)
        self._flow = FlowBatch(batch, title, count)
        self.progress.follow(batch, count, workflows=True)
        self.show_message(f"{title}: {count} workflow{'s' * (count != 1)} started.", batch=True)
        self.batch_started.emit(batch, count)
        return batch

    def _flows_submitted(self, batch: str, workflow_ids: list[str]) -> None:
        if self._flow is not None and batch == self._flow.batch:
            self._flow.count = len(workflow_ids)  # the others could not start (and said why)
        self.progress.started(batch, workflow_ids, workflows=True)

    def _flow_finished(self, end: WorkflowEnd) -> None:
        self.progress.ended(end.batch, end.workflow_id, end.status)
        if self._flow is not None and end.batch == self._flow.batch:
            text = self._flow.add(end)
            if text:
                self.show_message(text, batch=True)

    def show_message(self, text: str, batch: bool = False) -> None:
        """Show ``text``; ``batch``: it is about the last Convert, so the files it passed by are named too."""
        if batch and self._skipped_note:
            text = f"{text} {self._skipped_note}"
        self.message.setText(text)

    def _submitted(self, batch: str, job_ids: list[str]) -> None:
        if self._batch is not None and batch == self._batch[0]:
            self._batches.add(batch, job_ids)
        self.progress.started(batch, job_ids, workflows=False)

    def _jobs_changed(self, rows: list[JobRow]) -> None:
        self.progress.jobs_changed(rows)
        for summary in self._batches.update({r.id: r.status for r in rows}):
            if self._batch is not None and summary.batch == self._batch[0]:
                text = summary.message
                self.show_message(f"{self._batch[1]}: {text[:1].lower()}{text[1:]}", batch=True)


def skipped_note(tool: ToolInfo, passed: list[FileEntry]) -> str:
    """``Skipped 3 files Image to WebP does not take: notes.txt, sub/readme.md, …`` (empty: none)."""
    if not passed:
        return ""
    names = ", ".join(e.label for e in passed[:3]) + (", …" if len(passed) > 3 else "")
    count = len(passed)
    return f"Skipped {count} file{'s' * (count != 1)} {tool.title} does not take: {names}."

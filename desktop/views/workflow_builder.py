"""The workflow builder: steps after the chosen tool, each with its own tool, output format and settings.

The first step is the tool chosen in the picker (its settings are the options pane's). Each step added
here offers only the tools that take what the step before it makes, and the whole chain is checked as
it is built (the service's own check, :func:`desktop.controllers.presets.chain_problem`), its
problem shown under the steps.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QComboBox,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from desktop.models.tools import ToolInfo, format_label
from desktop.views.field_editors import guard_wheel
from desktop.views.params_form import ParamsForm
from localapi.core.workflows.records import StepSpec

CheckParams = Callable[[str, dict[str, Any]], dict[str, str]]


def next_tools(tools: Iterable[ToolInfo], formats: set[str] | None) -> list[ToolInfo]:
    """The available tools that take every one of ``formats`` (what the step before makes; ``None``:
    not known, so any), by title."""
    found = [t for t in tools if t.available and (formats is None or t.accepts_all(formats))]
    return sorted(found, key=lambda t: t.title.casefold())


class StepEditor(QGroupBox):
    """One added step: its tool (from those that fit), output format and settings, and Remove."""

    changed = Signal()
    remove_requested = Signal(object)  # this editor

    def __init__(self, check_params: CheckParams | None = None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._check_params = check_params
        self._tools: list[ToolInfo] = []
        self.tool_combo = QComboBox()
        self.tool_combo.setAccessibleName("Step tool")
        self.format_combo = QComboBox()
        self.format_combo.setAccessibleName("Step output format")
        self.remove_button = QPushButton("Remove")
        self.remove_button.setToolTip("Remove this step")
        self.form = ParamsForm()
        top = QFormLayout()
        tool_row = QHBoxLayout()
        tool_row.addWidget(self.tool_combo, 1)
        tool_row.addWidget(self.remove_button)
        top.addRow("Tool", tool_row)
        top.addRow("Output format", self.format_combo)
        layout = QVBoxLayout(self)
        layout.addLayout(top)
        layout.addWidget(self.form)
        for combo in (self.tool_combo, self.format_combo):
            guard_wheel(combo)
        self.tool_combo.currentIndexChanged.connect(self._tool_chosen)
        self.format_combo.currentIndexChanged.connect(lambda _: self.changed.emit())
        self.form.changed.connect(self.changed)
        self.remove_button.clicked.connect(lambda: self.remove_requested.emit(self))

    def set_number(self, number: int) -> None:
        self.setTitle(f"Step {number}")

    def set_choices(self, tools: Sequence[ToolInfo]) -> None:
        """Offer ``tools``; the current one stays chosen if it is among them."""
        keep = self.tool_id()
        if [t.id for t in tools] == [t.id for t in self._tools]:
            return
        self._tools = list(tools)
        self.tool_combo.blockSignals(True)
        self.tool_combo.clear()
        for tool in self._tools:
            self.tool_combo.addItem(tool.title, tool.id)
        index = self.tool_combo.findData(keep)
        self.tool_combo.setCurrentIndex(index if index >= 0 else (0 if self._tools else -1))
        self.tool_combo.blockSignals(False)
        if self.tool_id() != keep:
            self._tool_chosen()

    def tool(self) -> ToolInfo | None:
        return next((t for t in self._tools if t.id == self.tool_id()), None)

    def tool_id(self) -> str | None:
        data = self.tool_combo.currentData()
        return str(data) if data is not None else None

    def output_format(self) -> str | None:
        data = self.format_combo.currentData()
        return str(data) if data is not None else None

    def choose(self, spec: StepSpec) -> bool:
        """Show ``spec`` (a preset's step); False when its tool is not offered here."""
        index = self.tool_combo.findData(spec.tool)
        if index < 0:
            return False
        self.tool_combo.setCurrentIndex(index)
        self._tool_chosen()
        self.form.set_values(spec.params)
        fmt = self.format_combo.findData(spec.output_format)
        if fmt >= 0:
            self.format_combo.setCurrentIndex(fmt)
        return True

    def spec(self) -> StepSpec | None:
        tool_id = self.tool_id()
        return None if tool_id is None else StepSpec(tool_id, self.form.params(), self.output_format())

    def _tool_chosen(self, *_: object) -> None:
        tool = self.tool()
        self.format_combo.blockSignals(True)
        self.format_combo.clear()
        for fmt in tool.produces if tool else ():
            self.format_combo.addItem(format_label(fmt), fmt)
        self.format_combo.blockSignals(False)
        check = self._check_params
        checker = (lambda params: check(tool.id, params)) if check is not None and tool is not None else None
        self.form.set_schema(tool.schema if tool else {}, {}, checker)
        self.changed.emit()


class WorkflowBuilder(QWidget):
    """The steps after the first, "Add step", the chain's problem and "Save as preset…"."""

    changed = Signal()  # a step was added, removed or edited
    save_requested = Signal()

    def __init__(self, tools: Callable[[], Sequence[ToolInfo]], check_params: CheckParams | None = None,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._tools = tools
        self._check_params = check_params
        self._first_formats: set[str] | None = None
        self._first_known = False  # a first step is chosen
        self.editors: list[StepEditor] = []
        self.add_button = QPushButton("Add step")
        self.add_button.setToolTip("Run another tool on what the step before makes")
        self.save_button = QPushButton("Save as preset…")
        self.save_button.setToolTip("Save the tool, its settings and the steps after it as a preset")
        self.problem_label = QLabel()
        self.problem_label.setObjectName("chainProblem")
        self.problem_label.setWordWrap(True)
        self.problem_label.setStyleSheet("color: #d33;")
        self.problem_label.hide()
        self._steps_layout = QVBoxLayout()
        self._steps_layout.setContentsMargins(0, 0, 0, 0)
        buttons = QHBoxLayout()
        buttons.addWidget(self.add_button)
        buttons.addStretch(1)
        buttons.addWidget(self.save_button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(self._steps_layout)
        layout.addWidget(self.problem_label)
        layout.addLayout(buttons)
        self.add_button.clicked.connect(lambda: self.add_step())
        self.save_button.clicked.connect(self.save_requested)
        self.set_first(None)

    # ---- the chain ----

    def set_first(self, formats: set[str] | None, chosen: bool = True) -> None:
        """What the first step (the picker's tool) makes: ``formats`` (``None``: not known, e.g. it keeps
        its input's format), or nothing chosen yet (``chosen`` False) when no step can be added."""
        self._first_formats = formats
        self._first_known = chosen
        self.add_button.setEnabled(chosen)
        self.save_button.setEnabled(chosen)
        self._refilter()

    def add_step(self, spec: StepSpec | None = None) -> StepEditor:
        editor = StepEditor(self._check_params)
        editor.changed.connect(self._step_changed)
        editor.remove_requested.connect(self.remove_step)
        self.editors.append(editor)
        self._steps_layout.addWidget(editor)
        self._refilter()
        if spec is not None:
            editor.choose(spec)
            self._refilter()
        self.changed.emit()
        return editor

    def remove_step(self, editor: StepEditor) -> None:
        if editor in self.editors:
            self.editors.remove(editor)
            self._steps_layout.removeWidget(editor)
            editor.deleteLater()
            self._refilter()
            self.changed.emit()

    def clear(self) -> None:
        for editor in list(self.editors):
            self.editors.remove(editor)
            self._steps_layout.removeWidget(editor)
            editor.deleteLater()
        self.show_problem("")
        self.changed.emit()

    def set_steps(self, specs: Sequence[StepSpec]) -> None:
        """Show ``specs`` as the steps after the first (a preset's)."""
        self.blockSignals(True)
        self.clear()
        for spec in specs:
            self.add_step(spec)
        self.blockSignals(False)
        self.changed.emit()

    def steps(self) -> list[StepSpec]:
        return [s for e in self.editors if (s := e.spec()) is not None]

    def is_complete(self) -> bool:
        """Every added step has a tool and valid settings."""
        return all(e.tool_id() is not None and e.form.is_valid() for e in self.editors)

    def show_problem(self, text: str) -> None:
        self.problem_label.setText(text)
        self.problem_label.setVisible(bool(text))

    def _step_changed(self) -> None:
        self._refilter()
        self.changed.emit()

    def _refilter(self) -> None:
        """Offer each step the tools that take what the step before makes."""
        formats = self._first_formats
        tools = list(self._tools())
        for number, editor in enumerate(self.editors, start=2):
            editor.set_number(number)
            editor.blockSignals(True)
            editor.set_choices(next_tools(tools, formats) if self._first_known else [])
            editor.blockSignals(False)
            fmt = editor.output_format()
            if fmt is not None and fmt != "keep":
                formats = {fmt}

"""The chosen tool's options: output format, presets, parameters, output folder and
name clashes. Before a tool is chosen: how FileKiln works, and the most used tools a click away."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QButtonGroup,
    QComboBox,
    QFileDialog,
    QFormLayout,
    QGridLayout,
    QGroupBox,
    QHBoxLayout,
    QInputDialog,
    QLabel,
    QLineEdit,
    QPushButton,
    QRadioButton,
    QScrollArea,
    QVBoxLayout,
    QWidget,
)

from desktop.controllers.presets import PresetsController
from desktop.icons import category_icon
from desktop.models.tools import ToolInfo, format_label
from desktop.store import CLASH_POLICIES, Prefs, PresetStore
from desktop.views.field_editors import guard_wheel
from desktop.views.params_form import ParamsForm

# the tools people reach for most, offered as buttons before any tool is chosen: (id, title, category for the icon)
MOST_USED = (("image-convert", "Convert image", "images"), ("pdf-compress", "Compress PDF", "pdf"),
             ("pdf-merge", "Merge PDFs", "pdf"), ("video-convert", "Convert video", "video"),
             ("transcribe", "Transcribe speech", "transcription"))
HOW_IT_WORKS = ("<b>How it works</b><ol>"
                "<li>Drop files or folders on the area on the left, or press <i>Add files…</i></li>"
                "<li>Pick a tool from the list, or one of these:</li></ol>")
AFTER_CHOOSING = "Then check its settings here and press <b>Convert</b>. Results go next to each file unless " \
                 "you choose a folder below."
CLASH_LABELS = {"rename": "Keep both (rename the new file)", "overwrite": "Overwrite", "skip": "Skip"}
NO_PRESET = "(last used)"
LEGACY = "legacy:"  # the key of a named preset still only in presets.json
AskText = Callable[[str, str], "str | None"]
ChooseFolder = Callable[[str], "str | None"]


def ask_text_dialog(parent: QWidget) -> AskText:
    def ask(title: str, label: str) -> str | None:
        text, ok = QInputDialog.getText(parent, title, label)
        return text if ok and text.strip() else None

    return ask


def choose_folder_dialog(parent: QWidget) -> ChooseFolder:
    def choose(start: str) -> str | None:
        folder = QFileDialog.getExistingDirectory(parent, "Choose the output folder", start)
        return folder or None

    return choose


class FirstSteps(QWidget):
    """What the pane shows before a tool is chosen: the steps, and buttons for the most used tools."""

    tool_requested = Signal(str)  # the id of the tool whose button was pressed

    def __init__(self, tools: tuple[tuple[str, str, str], ...] = MOST_USED, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("firstSteps")
        self.how_to = QLabel(HOW_IT_WORKS)
        self.how_to.setWordWrap(True)
        self.how_to.setTextFormat(Qt.TextFormat.RichText)
        self.buttons: dict[str, QPushButton] = {}
        grid = QGridLayout()
        for i, (tool_id, title, category) in enumerate(tools):
            button = QPushButton(category_icon(category), title)
            button.setObjectName(f"quick_{tool_id}")
            button.clicked.connect(lambda _=False, t=tool_id: self.tool_requested.emit(t))
            self.buttons[tool_id] = button
            grid.addWidget(button, i // 3, i % 3)
        self.after = QLabel(AFTER_CHOOSING)
        self.after.setWordWrap(True)
        self.after.setTextFormat(Qt.TextFormat.RichText)
        layout = QVBoxLayout(self)
        layout.addWidget(self.how_to)
        layout.addLayout(grid)
        layout.addWidget(self.after)
        layout.addStretch(1)


class OptionsPane(QWidget):
    validity_changed = Signal(bool)
    tool_requested = Signal(str)  # a most-used tool's button on the first screen: select this tool

    def __init__(self, presets: PresetStore, prefs: Prefs, save_prefs: Callable[[], None],
                 ask_text: AskText | None = None, choose_folder: ChooseFolder | None = None,
                 check_params: Callable[[str, dict[str, Any]], dict[str, str]] | None = None,
                 shared: PresetsController | None = None, save_handler: Callable[[str], None] | None = None,
                 parent: QWidget | None = None) -> None:
        """``presets`` keeps each tool's last choice, and the named presets of earlier versions.
        ``shared``: the service's presets; with it, this tool's one-step presets are offered, and
        Save hands the name to ``save_handler`` (the Convert page saves the whole chain of steps)."""
        super().__init__(parent)
        self._check_params = check_params
        self.presets = presets
        self.shared = shared
        self._save_handler = save_handler
        self.prefs = prefs
        self._save_prefs = save_prefs
        self._ask_text = ask_text or ask_text_dialog(self)
        self._choose_folder = choose_folder or choose_folder_dialog(self)
        self.tool: ToolInfo | None = None

        self.format_combo = QComboBox()
        self.format_combo.setAccessibleName("Output format")
        self.preset_combo = QComboBox()
        # the one "Preset" on the page: a tool's own params never use the word (video-convert's is "Encoding speed")
        self.preset_combo.setAccessibleName("Preset")
        self.save_preset_button = QPushButton("Save as preset…")
        self.save_preset_button.setToolTip("Save these settings as a preset, to use them again here, in watch folders, "
                                           "from the command line and the API")
        self.delete_preset_button = QPushButton("Delete")
        self.delete_preset_button.setToolTip("Delete the chosen preset")
        self.reset_button = QPushButton("Defaults")
        self.reset_button.setToolTip("Back to the tool's defaults")
        self.form = ParamsForm()
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setWidget(self.form)
        scroll.setFrameShape(QScrollArea.Shape.NoFrame)

        top = QFormLayout()
        top.addRow("Output &format", self.format_combo)
        preset_row = QHBoxLayout()
        preset_row.addWidget(self.preset_combo, 1)
        preset_row.addWidget(self.save_preset_button)
        preset_row.addWidget(self.delete_preset_button)
        preset_row.addWidget(self.reset_button)
        preset_label = QLabel("&Preset")
        preset_label.setBuddy(self.preset_combo)
        top.addRow(preset_label, preset_row)
        params_box = QGroupBox("Settings")
        self.settings_box = params_box
        params_layout = QVBoxLayout(params_box)
        params_layout.addLayout(top)
        params_layout.addWidget(scroll, 1)

        self.next_to_input = QRadioButton("&Next to each file")
        self.in_folder = QRadioButton("In this f&older:")
        self._where = QButtonGroup(self)
        self._where.addButton(self.next_to_input)
        self._where.addButton(self.in_folder)
        self.folder_edit = QLineEdit(prefs.output_folder)
        self.folder_edit.setAccessibleName("Output folder")
        self.folder_edit.setPlaceholderText("Choose a folder")
        self.choose_button = QPushButton("Choose…")
        self.clash_combo = QComboBox()
        self.clash_combo.setAccessibleName("When a file with that name exists")
        for policy in CLASH_POLICIES:
            self.clash_combo.addItem(CLASH_LABELS[policy], policy)
        self.clash_combo.setCurrentIndex(max(self.clash_combo.findData(prefs.clash_policy), 0))
        (self.in_folder if prefs.output_folder else self.next_to_input).setChecked(True)
        output_box = QGroupBox("Output")
        output = QFormLayout(output_box)
        output.addRow(self.next_to_input)
        folder_row = QHBoxLayout()
        folder_row.addWidget(self.in_folder)
        folder_row.addWidget(self.folder_edit, 1)
        folder_row.addWidget(self.choose_button)
        output.addRow(folder_row)
        output.addRow("If the name is &taken", self.clash_combo)

        self.first_steps = FirstSteps()
        self.first_steps.tool_requested.connect(self.tool_requested)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.first_steps, 1)
        layout.addWidget(params_box, 1)
        layout.addWidget(output_box)
        self._layout = layout

        self.preset_combo.activated.connect(self._apply_preset)
        self.save_preset_button.clicked.connect(self.save_preset)
        self.delete_preset_button.clicked.connect(self.delete_preset)
        self.reset_button.clicked.connect(self.form.reset)
        self.choose_button.clicked.connect(self._choose)
        self.folder_edit.textEdited.connect(self._folder_typed)
        self.folder_edit.editingFinished.connect(self._output_changed)
        self.next_to_input.toggled.connect(self._output_changed)
        self.clash_combo.currentIndexChanged.connect(self._output_changed)
        self.form.validity_changed.connect(self.validity_changed)
        if shared is not None:
            shared.changed.connect(lambda: self._refresh_presets(select=self.preset_combo.currentData()))
            shared.saved.connect(lambda name: self._refresh_presets(select=name))
        for combo in (self.format_combo, self.preset_combo, self.clash_combo):
            guard_wheel(combo)  # the wheel scrolls the pane, not the choice under the pointer
        self.set_tool(None)

    def add_below_settings(self, widget: QWidget) -> None:
        """Show ``widget`` (the steps after this tool) between the settings and the output choices."""
        self._layout.insertWidget(self._layout.indexOf(self.settings_box) + 1, widget)

    # ---- the tool ----

    def set_tool(self, tool: ToolInfo | None) -> None:
        self.tool = tool
        self.format_combo.clear()
        enabled = tool is not None
        for w in (self.format_combo, self.preset_combo, self.save_preset_button, self.delete_preset_button,
                  self.reset_button):
            w.setEnabled(enabled)
        self.first_steps.setVisible(tool is None)
        self.settings_box.setVisible(tool is not None)
        if tool is None:
            self.form.set_schema({})
            self._refresh_presets()
            return
        for fmt in tool.produces:
            self.format_combo.addItem(format_label(fmt), fmt)
        last = self.presets.last(tool.id) or {}
        check = self._check_params
        checker = (lambda params: check(tool.id, params)) if check is not None else None
        self.form.set_schema(tool.schema, last.get("params") or {}, checker)
        self._set_format(last.get("outputFormat"))
        self._refresh_presets()
        self.validity_changed.emit(self.form.is_valid())

    def _set_format(self, fmt: str | None) -> None:
        index = self.format_combo.findData(fmt)
        self.format_combo.setCurrentIndex(index if index >= 0 else 0)

    def output_format(self) -> str | None:
        data = self.format_combo.currentData()
        return str(data) if data is not None else None

    def params(self) -> dict[str, Any]:
        return self.form.params()

    def remember(self) -> None:
        """Keep the current choices as this tool's last ones."""
        if self.tool is not None:
            self.presets.set_last(self.tool.id, self.params(), self.output_format())

    # ---- presets ----

    def _listed_presets(self) -> list[tuple[str, str]]:
        """(label, key) of the presets offered for the tool: the service's one-step presets for it, and
        the named presets of ``presets.json`` (keyed ``legacy:<name>``) until they are imported."""
        if self.tool is None:
            return []
        if self.shared is None:
            return [(name, name) for name in self.presets.names(self.tool.id)]
        listed = [(f"{p.name} (built-in)" if p.builtin else p.name, p.name) for p in self.shared.for_tool(self.tool.id)]
        if not self.presets.imported():
            listed.extend((name, f"{LEGACY}{name}") for name in self.presets.names(self.tool.id))
        return listed

    def _chosen(self, key: str | None) -> dict[str, Any]:
        """``{"params", "outputFormat"}`` of the preset ``key`` (``None``: the last choice)."""
        assert self.tool is not None
        if not key:
            return self.presets.last(self.tool.id) or {}
        if self.shared is None or key.startswith(LEGACY):
            return self.presets.get(self.tool.id, key.removeprefix(LEGACY) if self.shared else key) or {}
        preset = self.shared.get(key)
        if preset is None or not preset.steps:
            return {}
        return {"params": preset.steps[0].params, "outputFormat": preset.steps[0].output_format}

    def _deletable(self, key: str | None) -> bool:
        if not key:
            return False
        preset = self.shared.get(key) if self.shared is not None and not key.startswith(LEGACY) else None
        return preset is None or not preset.builtin

    def _refresh_presets(self, select: str | None = None) -> None:
        self.preset_combo.clear()
        self.preset_combo.addItem(NO_PRESET, None)
        for label, key in self._listed_presets():
            self.preset_combo.addItem(label, key)
        index = self.preset_combo.findData(select) if select else 0
        self.preset_combo.setCurrentIndex(max(index, 0))
        self.delete_preset_button.setEnabled(self.tool is not None and self._deletable(
            self.preset_combo.currentData()))

    def _apply_preset(self, index: int) -> None:
        key = self.preset_combo.itemData(index)
        self.delete_preset_button.setEnabled(self._deletable(key))
        if self.tool is None:
            return
        self.show_choice(self._chosen(key))

    def show_choice(self, chosen: dict[str, Any]) -> None:
        """Show ``{"params", "outputFormat"}`` (a preset's first step) in the form."""
        self.form.set_values(chosen.get("params") or {})
        self._set_format(chosen.get("outputFormat"))

    def save_preset(self) -> None:
        if self.tool is None:
            return
        name = self._ask_text("Save preset", f"Name for these {self.tool.title} settings:")
        if not name:
            return
        if self._save_handler is not None:
            self._save_handler(name.strip())  # the list follows once the preset is saved
            return
        self.presets.save(self.tool.id, name, self.params(), self.output_format())
        self._refresh_presets(select=name.strip())

    def delete_preset(self) -> None:
        key = self.preset_combo.currentData()
        if self.tool is None or not key or not self._deletable(key):
            return
        if self.shared is None or key.startswith(LEGACY):
            self.presets.delete(self.tool.id, key.removeprefix(LEGACY) if self.shared else key)
            self._refresh_presets()
        else:
            self.shared.delete(key)  # the list follows once it is gone

    # ---- output ----

    def output_folder(self) -> Path | None:
        """``None``: next to each input."""
        if self.next_to_input.isChecked() or not self.folder_edit.text().strip():
            return None
        return Path(self.folder_edit.text().strip()).expanduser()

    def set_output_folder(self, folder: Path | None) -> None:
        if folder is None:
            self.next_to_input.setChecked(True)
        else:
            self.folder_edit.setText(str(folder))
            self.in_folder.setChecked(True)

    def clash_policy(self) -> str:
        return str(self.clash_combo.currentData())

    def _choose(self) -> None:
        folder = self._choose_folder(self.folder_edit.text() or str(Path.home()))
        if folder:
            self.set_output_folder(Path(folder))

    def _folder_typed(self, text: str) -> None:
        if text.strip():
            self.in_folder.setChecked(True)

    def _output_changed(self, *_: object) -> None:
        self.prefs.output_folder = "" if self.output_folder() is None else str(self.output_folder())
        self.prefs.clash_policy = self.clash_policy()
        self._save_prefs()

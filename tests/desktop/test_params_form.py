"""The parameters form built from a tool's JSON Schema: editors, validation, params, presets."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from PySide6.QtWidgets import QCheckBox, QComboBox, QDoubleSpinBox, QLineEdit, QPlainTextEdit, QSpinBox
from pytestqt.qtbot import QtBot

from desktop.context import Desktop
from desktop.models.tools import ToolInfo
from desktop.store import Prefs, PresetStore
from desktop.views.options_pane import OptionsPane
from desktop.views.params_form import Checker, MultiChoice, ParamsForm
from localapi.config import load_settings
from localapi.core.service import Service


@pytest.fixture(scope="module")
def param_models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    service = Service.open(load_settings(tmp_path_factory.mktemp("data")))
    try:
        return {t.id: t.params for t in service.catalogue}
    finally:
        service.close()


def form_for(qtbot: QtBot, schema: dict[str, Any], checker: Checker | None = None) -> ParamsForm:
    form = ParamsForm()
    qtbot.addWidget(form)
    form.set_schema(schema, checker=checker)
    return form


def test_editors_follow_the_schema_types_and_ranges(qtbot: QtBot, tools: dict[str, ToolInfo]) -> None:
    form = form_for(qtbot, tools["pdf-split"].schema)
    mode, pages, every = form.editors["mode"], form.editors["pages"], form.editors["every"]
    assert isinstance(mode, QComboBox) and [mode.itemData(i) for i in range(mode.count())] == [
        "ranges", "every", "single", "size", "bookmarks"]
    assert mode.currentData() == "single"  # the tool's default
    assert isinstance(pages, QLineEdit) and pages.text() == "1-"
    assert isinstance(every, QSpinBox) and (every.minimum(), every.maximum(), every.value()) == (1, 10000, 1)
    form = form_for(qtbot, tools["image-convert"].schema)
    assert isinstance(form.editors["stripMetadata"], QCheckBox)
    assert isinstance(form.editors["quality"], QSpinBox) and form.editors["quality"].value() == 85
    form = form_for(qtbot, tools["pdf-watermark"].schema)
    opacity = form.editors["opacity"]
    assert isinstance(opacity, QDoubleSpinBox) and (opacity.minimum(), opacity.maximum()) == (0.05, 1.0)


def test_page_ranges_are_validated_as_typed(qtbot: QtBot, tools: dict[str, ToolInfo]) -> None:
    form = form_for(qtbot, tools["pdf-split"].schema)
    pages = form.editors["pages"]
    assert isinstance(pages, QLineEdit)
    with qtbot.waitSignal(form.validity_changed) as blocker:
        pages.setText("1-3;x")
    assert blocker.args == [False]
    error = form.field_errors["pages"]  # said at the field, not in a list at the end of the form
    assert "pages" in form.errors() and "page range" in error.text() and not error.isHidden()
    assert form.error_label.isHidden()
    with qtbot.waitSignal(form.validity_changed) as blocker:
        pages.setText("1-3,5")
    assert blocker.args == [True] and form.is_valid() and error.isHidden()


def test_the_form_produces_the_right_params(qtbot: QtBot, tools: dict[str, ToolInfo],
                                           param_models: dict[str, Any]) -> None:
    form = form_for(qtbot, tools["pdf-split"].schema)
    assert form.params() == {}  # nothing changed: the tool's defaults apply
    form.editors["mode"].setCurrentIndex(0)  # type: ignore[attr-defined]
    form.editors["pages"].setText("1-3,5")  # type: ignore[attr-defined]
    assert form.params() == {"mode": "ranges", "pages": "1-3,5"}
    param_models["pdf-split"].model_validate(form.params())  # the tool's own model accepts them
    form = form_for(qtbot, tools["pdf-rotate"].schema)
    angle = form.editors["angle"]
    assert isinstance(angle, QComboBox)
    angle.setCurrentIndex(angle.findData(270))
    assert form.params() == {"angle": 270}
    param_models["pdf-rotate"].model_validate(form.params())


def test_lists_and_json_fields_give_the_params_the_tool_takes(qtbot: QtBot, desktop: Desktop,
                                                             param_models: dict[str, Any]) -> None:
    form = form_for(qtbot, desktop.tools.tool("pdf-redact").schema,  # type: ignore[union-attr]
                    lambda params: desktop.check_params("pdf-redact", params))
    terms, areas = form.editors["terms"], form.editors["areas"]
    assert isinstance(terms, QPlainTextEdit) and isinstance(areas, QPlainTextEdit)
    terms.setPlainText("Zanzibar\nAda Lovelace\n")
    areas.setPlainText('[{"page": 1, "x0": 10, "y0": 10, "x1": 200, "y1": 60}]')
    params = form.params()
    assert params == {"terms": ["Zanzibar", "Ada Lovelace"],
                      "areas": [{"page": 1, "x0": 10, "y0": 10, "x1": 200, "y1": 60}]}
    assert form.is_valid()
    param_models["pdf-redact"].model_validate(params)
    fill = form_for(qtbot, desktop.tools.tool("pdf-form-fill").schema,  # type: ignore[union-attr]
                    lambda params: desktop.check_params("pdf-form-fill", params))
    values = fill.editors["values"]
    assert isinstance(values, QPlainTextEdit)
    values.setPlainText('{"name": "Ada", "agree": ')
    assert not fill.is_valid() and fill.errors()["values"].startswith("not valid JSON")
    values.setPlainText('{"name": "Ada", "agree": true}')
    assert fill.is_valid() and fill.params() == {"values": {"name": "Ada", "agree": True}}
    values.setPlainText('{"name": {"nested": 1}}')  # JSON, but not what the tool takes: its model says so
    assert not fill.is_valid()
    fill.set_values({"values": {"size": "M"}})
    assert values.toPlainText() and fill.params() == {"values": {"size": "M"}}


def test_every_tool_form_starts_with_params_its_model_accepts(qtbot: QtBot, desktop: Desktop,
                                                              param_models: dict[str, Any]) -> None:
    for tool in desktop.tools.tools:
        form = form_for(qtbot, tool.schema, lambda params, t=tool.id: desktop.check_params(t, params))
        if form.is_valid():
            param_models[tool.id].model_validate(form.params())
        else:  # required fields without a default, or a choice the tool insists on
            assert form.errors(), tool.id


def test_rules_across_fields_come_from_the_tool_itself(qtbot: QtBot, desktop: Desktop) -> None:
    tool = desktop.tools.tool("image-resize")
    assert tool is not None
    form = form_for(qtbot, tool.schema, lambda params: desktop.check_params("image-resize", params))
    assert not form.is_valid() and "give width, height or percent" in form.error_label.text()
    with qtbot.waitSignal(form.validity_changed) as blocker:
        form.editors["width"].setValue(320)  # type: ignore[attr-defined]
    assert blocker.args == [True] and form.params() == {"width": 320}


def test_optional_numbers_offer_the_default_and_required_fields_block(qtbot: QtBot,
                                                                       tools: dict[str, ToolInfo]) -> None:
    form = form_for(qtbot, tools["audio-convert"].schema)
    bitrate = form.editors["bitrate"]
    assert isinstance(bitrate, QSpinBox) and bitrate.text() == "Default" and form.params() == {}
    bitrate.setValue(128)
    assert form.params() == {"bitrate": 128}
    form = form_for(qtbot, tools["pdf-protect"].schema)
    assert not form.is_valid() and form.errors()["userPassword"] == "required"
    password = form.editors["userPassword"]
    assert isinstance(password, QLineEdit) and password.echoMode() == QLineEdit.EchoMode.Password
    password.setText("s3cret")
    permissions = form.editors["permissions"]
    assert isinstance(permissions, MultiChoice)
    assert all(box.isChecked() for box in permissions.boxes.values())  # the default: everything allowed
    permissions.boxes["copy"].setChecked(False)
    params = form.params()
    assert form.is_valid() and params["userPassword"] == "s3cret"
    assert "copy" not in params["permissions"] and "print" in params["permissions"]


def test_set_values_shows_a_preset_and_falls_back_to_defaults(qtbot: QtBot, tools: dict[str, ToolInfo]) -> None:
    form = form_for(qtbot, tools["image-compress"].schema)
    form.set_values({"quality": 40, "targetSizeKb": 200, "unknownOldField": 1})
    assert form.params() == {"quality": 40, "targetSizeKb": 200}
    form.reset()
    assert form.params() == {}


def test_last_choice_and_named_presets_per_tool(qtbot: QtBot, tools: dict[str, ToolInfo], tmp_path: Path) -> None:
    presets = PresetStore(tmp_path / "presets.json")
    names = ["Small"]
    pane = OptionsPane(presets, Prefs(), lambda: None, ask_text=lambda title, label: names.pop(0))
    qtbot.addWidget(pane)
    pane.set_tool(tools["image-convert"])
    assert [pane.format_combo.itemData(i) for i in range(pane.format_combo.count())] == list(
        tools["image-convert"].produces)
    pane.form.editors["quality"].setValue(60)  # type: ignore[attr-defined]
    pane.format_combo.setCurrentIndex(pane.format_combo.findData("webp"))
    pane.remember()
    pane.save_preset()
    pane.set_tool(tools["pdf-compress"])
    pane.set_tool(tools["image-convert"])
    assert pane.params() == {"quality": 60} and pane.output_format() == "webp"  # the last choice
    pane.form.reset()
    small = pane.preset_combo.findData("Small")
    pane.preset_combo.setCurrentIndex(small)
    pane.preset_combo.activated.emit(small)  # as when the user picks it
    assert pane.params() == {"quality": 60}
    pane.delete_preset()
    assert presets.names("image-convert") == [] and pane.preset_combo.count() == 1

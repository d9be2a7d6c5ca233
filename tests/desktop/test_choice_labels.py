"""Every choice the parameters form offers reads as words, for every tool of the catalogue.

The form shows an option through the schema's ``x-enumLabels`` (``FieldSpec.option_label``); an option
without one shows its raw value, an API id such as ``top-left``, ``oddEven`` or ``path``. The rule: every
option of a choice field (enum, multi, choice) has a label, and that label is written for people:
it starts with a capital or a digit and holds no ``_`` and no camelCase word. A label may equal its value
when the value already reads as words (``A4``). The field itself must not be named by a word that says
nothing of what is chosen (``Mode``).
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QCheckBox, QComboBox
from pytestqt.qtbot import QtBot

from converters.catalogue import load_catalogue
from desktop.models.tools import ToolInfo, tool_infos
from desktop.schema_fields import FieldSpec, fields_from_schema
from desktop.views.params_form import MultiChoice, ParamsForm

CHOICE_KINDS = ("enum", "multi", "choice")
# Field names that, shown alone, do not say what the choice is about.
VAGUE_LABELS = {"Mode", "Names", "Presets", "Prefer", "Granularity", "Type", "Option", "Options"}


def _tools() -> list[ToolInfo]:
    return tool_infos(load_catalogue(), lambda tool: (True, None))


TOOLS = _tools()


def shown_text_problem(spec: FieldSpec, option: Any) -> str | None:
    """Why the text the form shows for ``option`` is not words; ``None`` when it is."""
    shown = spec.option_label(option)
    if str(option) not in spec.option_labels:
        return f"shows the raw value {shown!r} (no x-enumLabels entry)"
    if not (shown[:1].isupper() or shown[:1].isdigit()):
        return f"{shown!r} does not start with a capital or a digit"
    if "_" in shown or re.search(r"\b[a-z]+[A-Z]", shown):
        return f"{shown!r} reads as an identifier"
    return None


def choice_problems(tool_id: str, schema: dict[str, Any]) -> list[str]:
    problems = []
    for spec in fields_from_schema(schema):
        if spec.kind not in CHOICE_KINDS:
            continue
        if spec.label in VAGUE_LABELS:
            problems.append(f"{tool_id}.{spec.name}: the field is called {spec.label!r}; give it a title")
        for option in spec.options:
            problem = shown_text_problem(spec, option)
            if problem:
                problems.append(f"{tool_id}.{spec.name} = {option!r}: {problem}")
    return problems


def test_the_catalogue_has_choice_fields_to_check() -> None:
    specs = [s for t in TOOLS for s in fields_from_schema(t.schema) if s.kind in CHOICE_KINDS]
    assert len(specs) > 40


@pytest.mark.parametrize("tool", TOOLS, ids=lambda t: t.id)
def test_every_choice_of_the_tool_reads_as_words(tool: ToolInfo) -> None:
    assert choice_problems(tool.id, tool.schema) == []


def _schema_with(prop: dict[str, Any]) -> dict[str, Any]:
    return {"properties": {"mode": prop}}


@pytest.mark.parametrize(("prop", "expected"), [
    ({"enum": ["top-left", "center"], "title": "Where"}, "'top-left': shows the raw value"),
    ({"enum": ["path", "name"], "title": "File names"}, "'path': shows the raw value"),
    ({"type": "array", "items": {"enum": ["creditCard"]}, "title": "Find"}, "'creditCard': shows the raw value"),
    ({"enum": ["a", "b"], "title": "Where", "x-enumLabels": {"a": "Odd_even", "b": "B"}}, "reads as an identifier"),
    ({"enum": ["a", "b"], "title": "Where", "x-enumLabels": {"a": "oddEven", "b": "B"}}, "does not start with"),
    ({"enum": ["a"], "title": "Where", "x-enumLabels": {"a": "Odd and evenPages"}}, "reads as an identifier"),
    ({"enum": ["a"], "x-enumLabels": {"a": "A"}}, "the field is called 'Mode'"),
])
def test_the_rule_catches_raw_ids_and_vague_names(prop: dict[str, Any], expected: str) -> None:
    problems = choice_problems("sample", _schema_with(prop))
    assert any(expected in p for p in problems), problems


def test_the_rule_accepts_labels_written_for_people() -> None:
    prop = {"enum": ["A4", "same", 90], "title": "Sheet size",
            "x-enumLabels": {"A4": "A4", "same": "Size of the first page", "90": "90° clockwise"}}
    assert choice_problems("sample", _schema_with(prop)) == []


def test_the_form_shows_the_words_and_sends_the_ids(qtbot: QtBot) -> None:
    schemas = {t.id: t.schema for t in TOOLS}
    form = ParamsForm()
    qtbot.addWidget(form)
    form.set_schema(schemas["pdf-split"])
    mode = form.editors["mode"]
    assert isinstance(mode, QComboBox)
    assert [mode.itemText(i) for i in range(mode.count())] == [
        "Page ranges", "Every N pages", "Single pages", "Parts of a size", "Chapters (bookmarks)"]
    assert mode.itemData(0, Qt.ItemDataRole.ToolTipRole).startswith("One file per comma-separated part")
    mode.setCurrentIndex(0)
    assert form.params()["mode"] == "ranges"
    form.set_schema(schemas["pdf-redact"])
    presets = form.editors["presets"]
    assert isinstance(presets, MultiChoice)
    assert [box.text() for box in presets.findChildren(QCheckBox)] == [
        "E-mail addresses", "Phone numbers", "IBANs", "Payment card numbers"]


def raw_choices_named(specs: list[FieldSpec]) -> list[str]:
    """Descriptions that still name a choice by its API value, ``mode "ranges"`` or ``mode ranges``."""
    found = []
    for spec in specs:
        for other in specs:
            for value in other.option_labels:
                if re.search(rf'\b{re.escape(other.name)} "?{re.escape(value)}\b', spec.description, re.IGNORECASE):
                    found.append(f"{spec.name}: {spec.description[:80]}")
    return found


@pytest.mark.parametrize("tool", TOOLS, ids=lambda t: t.id)
def test_descriptions_name_other_fields_choices_by_their_labels(tool: ToolInfo) -> None:
    assert raw_choices_named(fields_from_schema(tool.schema)) == []


def test_a_description_names_the_choice_it_depends_on_in_words() -> None:
    specs = {s.name: s for s in fields_from_schema({t.id: t.schema for t in TOOLS}["pdf-split"])}
    assert specs["pages"].description.startswith("With “Page ranges”: one output file per part")
    assert specs["every"].description == "With “Every N pages”: pages per output file."
    schema = _schema_with({"enum": ["image"], "title": "Flatten", "x-enumLabels": {"image": "Into pictures"}})
    schema["properties"]["dpi"] = {"type": "integer", "description": 'With mode "image": resolution.'}
    schema["properties"]["note"] = {"type": "string", "description": 'With output "pdf": kept; (mode image) too.'}
    specs = {s.name: s for s in fields_from_schema(schema)}
    assert specs["dpi"].description == "With “Into pictures”: resolution."
    assert specs["note"].description == "With output format “pdf”: kept; (“Into pictures”) too."

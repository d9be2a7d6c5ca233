"""A tool's parameters as a form, built from its JSON Schema.

enums -> combo boxes with the schema's labels (``x-enumLabels``) and a line on the chosen value
(``x-enumDescriptions``); numbers -> spin boxes with the schema's range, unit and common values;
times -> m:ss; colours -> text and a picker; booleans -> check boxes; page ranges -> validated
text; several-of-a-list -> check boxes; optional values get a "Default" choice. Each field says
under it, in red, what is wrong with it as it is typed. ``params()`` gives what to send: the
choices that differ from the tool's defaults.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QColor
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QMenu,
    QPlainTextEdit,
    QSpinBox,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from desktop.schema_fields import (
    PAGES_HINT,
    FieldSpec,
    coerce_number_or_text,
    field_text,
    fields_from_schema,
    json_value,
    lines_value,
    params_from_values,
    validate_value,
)
from desktop.views.field_editors import (
    ChooseColour,
    ColourEdit,
    DecimalBox,
    MultiChoice,
    NumberBox,
    TimeEdit,
    guard_wheel,
    pick_colour,
)

__all__ = ["Checker", "MultiChoice", "ParamsForm"]

INT_LIMIT = 2_000_000_000
DEFAULT_TEXT = "Default"
ERROR_STYLE = "color: #d33;"  # red that reads on light and dark palettes alike
HINT_STYLE = "color: palette(mid);"


def tab_stops(widget: QWidget) -> list[QWidget]:
    """The widgets inside ``widget`` that Tab stops at, in the order they were laid out. A widget that
    takes focus is one stop (a spin box's own line edit is not another); one that does not (a box of
    check boxes, a colour's text and button) is looked into."""
    stops: list[QWidget] = []
    for child in widget.children():
        if not isinstance(child, QWidget) or child.isWindow():
            continue
        if child.focusPolicy() & Qt.FocusPolicy.TabFocus and child.focusProxy() is None:
            stops.append(child)
        else:
            stops.extend(tab_stops(child))
    return stops


def _number(value: float) -> str:
    return str(int(value)) if value == int(value) else str(value)


Checker = Callable[[dict[str, Any]], dict[str, str]]


class ParamsForm(QWidget):
    """``checker`` (optional) runs the tool's own validation on the params, for the rules that
    span fields and so are not in the schema (e.g. "give width, height or percent")."""

    changed = Signal()
    validity_changed = Signal(bool)
    rebuilt = Signal()  # the fields were made anew (another tool): their place in the Tab order is to be set again

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.checker: Checker | None = None
        self.choose_colour: ChooseColour | None = None  # None: the colour dialog
        self._layout = QFormLayout(self)
        self._layout.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        self.specs: list[FieldSpec] = []
        self.editors: dict[str, QWidget] = {}
        self.field_errors: dict[str, QLabel] = {}  # under each field: what is wrong with it
        self.hints: dict[str, QLabel] = {}  # under a choice: what the chosen value does
        self.common_buttons: dict[str, QToolButton] = {}  # beside a number: its common values
        self.error_label = QLabel()  # problems that belong to no one field
        self._valid = True
        self._empty = QLabel("This tool has no settings.")

    # ---- building ----

    def set_schema(self, schema: dict[str, Any] | None, values: dict[str, Any] | None = None,
                   checker: Checker | None = None) -> None:
        self.checker = checker
        while self._layout.rowCount():
            self._layout.removeRow(0)  # deletes the row's widgets
        self.editors, self.field_errors, self.hints, self.common_buttons = {}, {}, {}, {}
        self.error_label = self._red_label("formErrors")
        self.specs = fields_from_schema(schema or {})
        for spec in self.specs:
            editor = self._editor(spec)
            editor.setObjectName(f"param_{spec.name}")
            editor.setToolTip(spec.description)
            editor.setAccessibleName(spec.label)
            editor.setAccessibleDescription(spec.description)
            guard_wheel(editor)
            self.editors[spec.name] = editor
            label = QLabel(spec.label + ("*" if spec.required else ""))
            label.setToolTip(spec.description)
            label.setBuddy(editor)
            self._layout.addRow(label, self._field_box(spec, editor))
        if not self.specs:
            self._empty = QLabel("This tool has no settings.")
            self._layout.addRow(self._empty)
        self._layout.addRow(self.error_label)
        self.set_values(values or {})
        self.rebuilt.emit()

    def tab_stops(self) -> list[QWidget]:
        """The widgets Tab stops at, field after field as shown (a colour's text then its picker, a
        number then its common values)."""
        return tab_stops(self)

    @staticmethod
    def _red_label(name: str) -> QLabel:
        label = QLabel()
        label.setWordWrap(True)
        label.setObjectName(name)
        label.setStyleSheet(ERROR_STYLE)
        label.setVisible(False)
        return label

    def _field_box(self, spec: FieldSpec, editor: QWidget) -> QWidget:
        """The editor, its common values, a line on the chosen value and the field's error, stacked."""
        box = QWidget()
        column = QVBoxLayout(box)
        column.setContentsMargins(0, 0, 0, 0)
        column.setSpacing(2)
        if spec.common and isinstance(editor, QSpinBox | QDoubleSpinBox):
            row = QHBoxLayout()
            row.addWidget(editor, 1)
            row.addWidget(self._common_button(spec, editor))
            column.addLayout(row)
        else:
            column.addWidget(editor)
        if spec.option_help:
            hint = QLabel()
            hint.setWordWrap(True)
            hint.setObjectName(f"hint_{spec.name}")
            hint.setStyleSheet(HINT_STYLE)
            self.hints[spec.name] = hint
            column.addWidget(hint)
        error = self._red_label(f"error_{spec.name}")
        error.setAccessibleName(f"{spec.label}: problem")
        self.field_errors[spec.name] = error
        column.addWidget(error)
        return box

    def _common_button(self, spec: FieldSpec, editor: QSpinBox | QDoubleSpinBox) -> QToolButton:
        button = QToolButton()
        button.setText("▾")
        button.setToolTip(f"Common values for {spec.label.lower()}")
        button.setAccessibleName(f"Common values for {spec.label.lower()}")
        button.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        menu = QMenu(button)
        for value in spec.common:
            action = menu.addAction(f"{_number(value)} {spec.unit}".strip())
            action.triggered.connect(lambda _=False, v=value: editor.setValue(v))
        button.setMenu(menu)
        self.common_buttons[spec.name] = button
        return button

    def _editor(self, spec: FieldSpec) -> QWidget:
        editor: QWidget
        if spec.kind in ("enum", "choice"):
            combo = QComboBox()
            if spec.nullable or (not spec.has_default and not spec.required):
                combo.addItem(DEFAULT_TEXT, None)
            for option in spec.options:
                combo.addItem(spec.option_label(option), option)
                if str(option) in spec.option_help:
                    combo.setItemData(combo.count() - 1, spec.option_help[str(option)], Qt.ItemDataRole.ToolTipRole)
            combo.currentIndexChanged.connect(self._on_change)
            editor = combo
        elif spec.kind == "integer":
            spin = NumberBox(spec.start, spec.common, spec.nullable)
            low = int(spec.minimum) + (1 if spec.exclusive_minimum else 0) if spec.minimum is not None else -INT_LIMIT
            high = int(spec.maximum) - (1 if spec.exclusive_maximum else 0) if spec.maximum is not None else INT_LIMIT
            if spec.nullable:
                low -= 1
                spin.setSpecialValueText(DEFAULT_TEXT)
            spin.setRange(low, high)
            if spec.unit:
                spin.setSuffix(f" {spec.unit}")
            spin.valueChanged.connect(self._on_change)
            editor = spin
        elif spec.kind == "number":
            dspin = DecimalBox(spec.start, spec.common, spec.nullable)
            low_f = spec.minimum if spec.minimum is not None else -1e9
            high_f = spec.maximum if spec.maximum is not None else 1e9
            small = high_f - low_f <= 2
            step = 0.05 if small else 1.0
            exact = [*spec.common, *([spec.default] if isinstance(spec.default, int | float) else [])]
            dspin.setDecimals(3 if any(c != round(c, 2) for c in exact) else 2)  # 23.976 fps stays 23.976
            dspin.setSingleStep(step)
            if spec.exclusive_minimum:
                low_f += 0.01
            if spec.exclusive_maximum:
                high_f -= 0.01
            if spec.nullable:
                low_f -= step
                dspin.setSpecialValueText(DEFAULT_TEXT)
            dspin.setRange(low_f, high_f)
            if spec.unit:
                dspin.setSuffix(f" {spec.unit}")
            dspin.valueChanged.connect(self._on_change)
            editor = dspin
        elif spec.kind == "time":
            time = TimeEdit()
            if spec.has_default and spec.default is not None:
                time.setPlaceholderText(f"{spec.default} s — {time.placeholderText()}")
            elif not spec.required:
                time.setPlaceholderText(f"{DEFAULT_TEXT} — {time.placeholderText()}")
            time.textChanged.connect(self._on_change)
            editor = time
        elif spec.kind == "colour":
            colour = ColourEdit(lambda current, parent: self._pick_colour(current, parent))
            if spec.default is None and not spec.required:
                colour.line.setPlaceholderText("#rrggbb, or empty for the default")
            colour.textChanged.connect(self._on_change)
            editor = colour
        elif spec.kind == "boolean":
            box = QCheckBox()
            box.toggled.connect(self._on_change)
            editor = box
        elif spec.kind == "multi":
            multi = MultiChoice(spec.options, spec.option_label)
            multi.changed.connect(self._on_change)
            editor = multi
        elif spec.kind in ("lines", "json"):
            text = QPlainTextEdit()
            text.setPlaceholderText("one per line" if spec.kind == "lines" else "JSON, as in the API")
            text.setTabChangesFocus(True)
            text.setFixedHeight(text.fontMetrics().lineSpacing() * 4 + 12)
            text.textChanged.connect(self._on_change)
            editor = text
        else:
            line = QLineEdit()
            if spec.kind == "pages":
                line.setPlaceholderText(PAGES_HINT)
            elif spec.kind == "number-or-text" and spec.has_default:
                line.setPlaceholderText(f"default: {spec.default}")
            elif not spec.required:
                line.setPlaceholderText("leave empty for the default")
            if spec.secret:
                line.setEchoMode(QLineEdit.EchoMode.Password)
            if spec.max_length:
                line.setMaxLength(spec.max_length)
            line.textChanged.connect(self._on_change)
            editor = line
        return editor

    def _pick_colour(self, current: QColor, parent: QWidget) -> QColor | None:
        return (self.choose_colour or pick_colour)(current, parent)

    # ---- values ----

    def value_of(self, spec: FieldSpec) -> Any:
        editor = self.editors[spec.name]
        if isinstance(editor, QComboBox):
            return editor.currentData()
        if isinstance(editor, QSpinBox | QDoubleSpinBox):
            if spec.nullable and editor.value() == editor.minimum():
                return None
            return editor.value()
        if isinstance(editor, QCheckBox):
            return editor.isChecked()
        if isinstance(editor, MultiChoice | TimeEdit):
            return editor.value()
        if isinstance(editor, QPlainTextEdit):
            text = editor.toPlainText()
            return lines_value(text) if spec.kind == "lines" else json_value(text)
        assert isinstance(editor, QLineEdit | ColourEdit)
        if spec.kind == "number-or-text":
            return coerce_number_or_text(editor.text())
        return editor.text() or None

    def values(self) -> dict[str, Any]:
        return {spec.name: self.value_of(spec) for spec in self.specs}

    def params(self) -> dict[str, Any]:
        """What to send as the job's params."""
        return params_from_values(self.specs, self.values())

    def set_values(self, values: dict[str, Any]) -> None:
        """Show ``values`` (e.g. a preset); fields they do not mention show the tool's default."""
        for spec in self.specs:
            self._set(spec, values.get(spec.name, spec.initial))
        self._on_change()

    def reset(self) -> None:
        self.set_values({})

    def _set(self, spec: FieldSpec, value: Any) -> None:
        editor = self.editors[spec.name]
        editor.blockSignals(True)
        try:
            if isinstance(editor, QComboBox):
                index = editor.findData(value)
                if index < 0 and spec.kind == "choice" and value:
                    editor.addItem(str(value), value)  # e.g. a model folder chosen through the API
                    index = editor.count() - 1
                if index < 0:
                    index = max(editor.findData(spec.default), 0)
                editor.setCurrentIndex(index)
            elif isinstance(editor, QSpinBox):
                editor.setValue(editor.minimum() if value is None else int(value))
            elif isinstance(editor, QDoubleSpinBox):
                editor.setValue(editor.minimum() if value is None else float(value))
            elif isinstance(editor, QCheckBox):
                editor.setChecked(bool(value))
            elif isinstance(editor, MultiChoice):
                editor.set_value(value if isinstance(value, list) else None)
            elif isinstance(editor, TimeEdit):
                editor.set_value(value if isinstance(value, int | float) else None)
            elif isinstance(editor, QPlainTextEdit):
                editor.setPlainText(field_text(spec, value))
            elif isinstance(editor, QLineEdit | ColourEdit):
                editor.setText("" if value is None else str(value))
        finally:
            editor.blockSignals(False)
        if isinstance(editor, ColourEdit):
            editor.line.textChanged.emit(editor.text())  # the swatch follows (signals were not blocked there)

    # ---- validation ----

    def errors(self) -> dict[str, str]:
        found = {}
        for spec in self.specs:
            problem = validate_value(spec, self.value_of(spec))
            if problem:
                found[spec.name] = problem
        if not found and self.checker is not None:
            found = self.checker(self.params())
        return found

    def is_valid(self) -> bool:
        return not self.errors()

    def problem_text(self) -> str:
        """Why these settings cannot be used, in one sentence; empty when they can."""
        errors = self.errors()
        marked = [self._label(n) for n in errors if n in self.field_errors]
        if marked:
            return f"Check the settings marked in red: {', '.join(marked)}."
        return f"Settings: {next(iter(errors.values()))}." if errors else ""

    def _on_change(self, *_: object) -> None:
        errors = self.errors()
        for spec in self.specs:
            problem = errors.get(spec.name)
            editor = self.editors[spec.name]
            line = editor.line if isinstance(editor, ColourEdit) else editor
            if isinstance(line, QLineEdit):
                line.setStyleSheet("QLineEdit { border: 1px solid #d33; }" if problem else "")
            editor.setToolTip(f"{spec.label}: {problem}" if problem else spec.description)
            self.field_errors[spec.name].setText(problem or "")
            self.field_errors[spec.name].setVisible(bool(problem))
            if spec.name in self.hints:
                self.hints[spec.name].setText(spec.option_help.get(str(self.value_of(spec)), ""))
                self.hints[spec.name].setVisible(bool(self.hints[spec.name].text()))
        general = {n: m for n, m in errors.items() if n not in self.field_errors}
        self.error_label.setText("\n".join(m if n == "params" else f"{self._label(n)}: {m}"
                                           for n, m in general.items()))
        self.error_label.setVisible(bool(general))
        valid = not errors
        if valid != self._valid:
            self._valid = valid
            self.validity_changed.emit(valid)
        self.changed.emit()

    def _label(self, name: str) -> str:
        return next((s.label for s in self.specs if s.name == name), "Settings")

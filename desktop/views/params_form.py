"""A tool's parameters as a form, built from its JSON Schema.

enums -> combo boxes, numbers -> spin boxes with the schema's range, booleans -> check
boxes, page ranges -> validated text, several-of-a-list -> check boxes; optional values
get a "Default" choice. ``params()`` gives what to send: the choices that differ from the
tool's defaults.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFormLayout,
    QGridLayout,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QSpinBox,
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

INT_LIMIT = 2_000_000_000
DEFAULT_TEXT = "Default"


class MultiChoice(QWidget):
    """Several of a fixed list, as check boxes."""

    changed = Signal()

    def __init__(self, options: tuple[Any, ...], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        grid = QGridLayout(self)
        grid.setContentsMargins(0, 0, 0, 0)
        self.boxes: dict[Any, QCheckBox] = {}
        for i, option in enumerate(options):
            box = QCheckBox(str(option))
            box.toggled.connect(self.changed)
            grid.addWidget(box, i // 3, i % 3)
            self.boxes[option] = box

    def value(self) -> list[Any]:
        return [o for o, b in self.boxes.items() if b.isChecked()]

    def set_value(self, values: list[Any] | None) -> None:
        chosen = set(values or [])
        for option, box in self.boxes.items():
            box.setChecked(option in chosen)


Checker = Callable[[dict[str, Any]], dict[str, str]]


class ParamsForm(QWidget):
    """``checker`` (optional) runs the tool's own validation on the params, for the rules that
    span fields and so are not in the schema (e.g. "give width, height or percent")."""

    changed = Signal()
    validity_changed = Signal(bool)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.checker: Checker | None = None
        self._layout = QFormLayout(self)
        self._layout.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        self.specs: list[FieldSpec] = []
        self.editors: dict[str, QWidget] = {}
        self.error_label = QLabel()
        self.error_label.setWordWrap(True)
        self.error_label.setObjectName("formErrors")
        self._valid = True
        self._empty = QLabel("This tool has no settings.")

    # ---- building ----

    def set_schema(self, schema: dict[str, Any] | None, values: dict[str, Any] | None = None,
                   checker: Checker | None = None) -> None:
        self.checker = checker
        while self._layout.rowCount():
            self._layout.removeRow(0)  # deletes the row's widgets
        self.editors = {}
        self.error_label = QLabel()
        self.error_label.setWordWrap(True)
        self.specs = fields_from_schema(schema or {})
        for spec in self.specs:
            editor = self._editor(spec)
            editor.setObjectName(f"param_{spec.name}")
            editor.setToolTip(spec.description)
            editor.setAccessibleName(spec.label)
            editor.setAccessibleDescription(spec.description)
            self.editors[spec.name] = editor
            label = QLabel(spec.label + ("*" if spec.required else ""))
            label.setToolTip(spec.description)
            label.setBuddy(editor)
            self._layout.addRow(label, editor)
        if not self.specs:
            self._empty = QLabel("This tool has no settings.")
            self._layout.addRow(self._empty)
        self._layout.addRow(self.error_label)
        self.set_values(values or {})

    def _editor(self, spec: FieldSpec) -> QWidget:
        editor: QWidget
        if spec.kind == "enum":
            combo = QComboBox()
            if spec.nullable or (not spec.has_default and not spec.required):
                combo.addItem(DEFAULT_TEXT, None)
            for option in spec.options:
                combo.addItem(str(option), option)
            combo.currentIndexChanged.connect(self._on_change)
            editor = combo
        elif spec.kind == "integer":
            spin = QSpinBox()
            low = int(spec.minimum) + (1 if spec.exclusive_minimum else 0) if spec.minimum is not None else -INT_LIMIT
            high = int(spec.maximum) - (1 if spec.exclusive_maximum else 0) if spec.maximum is not None else INT_LIMIT
            if spec.nullable:
                low -= 1
                spin.setSpecialValueText(DEFAULT_TEXT)
            spin.setRange(low, high)
            spin.valueChanged.connect(self._on_change)
            editor = spin
        elif spec.kind == "number":
            dspin = QDoubleSpinBox()
            low_f = spec.minimum if spec.minimum is not None else -1e9
            high_f = spec.maximum if spec.maximum is not None else 1e9
            small = high_f - low_f <= 2
            step = 0.05 if small else 1.0
            dspin.setDecimals(2)
            dspin.setSingleStep(step)
            if spec.exclusive_minimum:
                low_f += 0.01
            if spec.exclusive_maximum:
                high_f -= 0.01
            if spec.nullable:
                low_f -= step
                dspin.setSpecialValueText(DEFAULT_TEXT)
            dspin.setRange(low_f, high_f)
            dspin.valueChanged.connect(self._on_change)
            editor = dspin
        elif spec.kind == "boolean":
            box = QCheckBox()
            box.toggled.connect(self._on_change)
            editor = box
        elif spec.kind == "multi":
            multi = MultiChoice(spec.options)
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
        if isinstance(editor, MultiChoice):
            return editor.value()
        if isinstance(editor, QPlainTextEdit):
            text = editor.toPlainText()
            return lines_value(text) if spec.kind == "lines" else json_value(text)
        assert isinstance(editor, QLineEdit)
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
            elif isinstance(editor, QPlainTextEdit):
                editor.setPlainText(field_text(spec, value))
            elif isinstance(editor, QLineEdit):
                editor.setText("" if value is None else str(value))
        finally:
            editor.blockSignals(False)

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

    def _on_change(self, *_: object) -> None:
        errors = self.errors()
        for spec in self.specs:
            editor = self.editors[spec.name]
            invalid = spec.name in errors
            if isinstance(editor, QLineEdit):
                # a red frame reads in light and dark palettes alike
                editor.setStyleSheet("QLineEdit { border: 1px solid #d33; }" if invalid else "")
                editor.setToolTip(f"{spec.label}: {errors[spec.name]}" if invalid else spec.description)
        self.error_label.setText("\n".join(f"{self._label(n)}: {m}" for n, m in errors.items()))
        self.error_label.setVisible(bool(errors))
        valid = not errors
        if valid != self._valid:
            self._valid = valid
            self.validity_changed.emit(valid)
        self.changed.emit()

    def _label(self, name: str) -> str:
        return next((s.label for s in self.specs if s.name == name), "Settings")

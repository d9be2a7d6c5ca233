"""The editors the parameters form is made of, beyond Qt's own: number boxes that start at a
sensible value and step through common values, times as m:ss, colours with a picker, and a
guard that keeps the mouse wheel from changing a setting the pointer merely passes over."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

from PySide6.QtCore import QEvent, QObject, Qt, Signal
from PySide6.QtGui import QColor
from PySide6.QtWidgets import (
    QAbstractSlider,
    QAbstractSpinBox,
    QCheckBox,
    QColorDialog,
    QComboBox,
    QDoubleSpinBox,
    QGridLayout,
    QHBoxLayout,
    QLineEdit,
    QPushButton,
    QSpinBox,
    QWidget,
)

from desktop.schema_fields import TIME_HINT, Unparsed, format_time, time_value

ChooseColour = Callable[[QColor, QWidget], "QColor | None"]


class WheelGuard(QObject):
    """Passes wheel events over an unfocused editor on to its parents, so a form in a scroll area
    scrolls instead of changing whichever spin box, combo box or slider the pointer is over."""

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() == QEvent.Type.Wheel and isinstance(watched, QWidget) and not watched.hasFocus():
            event.ignore()  # ignored and filtered: Qt offers it to the parent widget next
            return True
        return False


def guard_wheel(widget: QWidget) -> None:
    """Spin boxes, combo boxes and sliders: the wheel changes them only once they have focus
    (given by a click or Tab, never by the wheel itself)."""
    if isinstance(widget, QAbstractSpinBox | QComboBox | QAbstractSlider):
        widget.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        widget.installEventFilter(WheelGuard(widget))


def _step(box: QSpinBox | QDoubleSpinBox, steps: int, start: Any, common: tuple[Any, ...],
          nullable: bool) -> bool:
    """Step ``box`` from "Default" to ``start`` and between common values; False: step as usual."""
    value = box.value()
    if nullable and value == box.minimum():
        if steps > 0 and start is not None:
            box.setValue(start)
            return True
        return False
    if steps > 0:
        above = [c for c in common if c > value]
        if above:
            box.setValue(above[0])
            return True
    elif steps < 0:
        below = [c for c in common if c < value]
        if below:
            box.setValue(below[-1])
            return True
    return False


class _CommonSteps:
    """The stepping :class:`NumberBox` and :class:`DecimalBox` share: from "Default" to ``start``, then
    between the common values (see ``_step``); Qt's own step otherwise."""

    start: Any
    common: tuple[Any, ...]
    nullable: bool

    def stepBy(self, steps: int) -> None:  # noqa: N802 - Qt's name
        if not _step(cast("QSpinBox | QDoubleSpinBox", self), steps, self.start, self.common, self.nullable):
            super().stepBy(steps)  # type: ignore[misc]


class NumberBox(_CommonSteps, QSpinBox):
    """A whole number; an optional one has "Default" at the bottom, from which one step up goes to
    ``start`` (128 kbps, 44100 Hz) rather than to the smallest value allowed."""

    def __init__(self, start: Any = None, common: tuple[Any, ...] = (), nullable: bool = False,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.start, self.common, self.nullable = start, common, nullable


class DecimalBox(_CommonSteps, QDoubleSpinBox):
    """:class:`NumberBox` for numbers with decimals."""

    def __init__(self, start: Any = None, common: tuple[Any, ...] = (), nullable: bool = False,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.start, self.common, self.nullable = start, common, nullable


class TimeEdit(QLineEdit):
    """Seconds, typed and shown as m:ss or h:mm:ss (plain seconds are understood too)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setPlaceholderText(TIME_HINT)
        self.editingFinished.connect(self._tidy)

    def value(self) -> float | int | Unparsed | None:
        return time_value(self.text())

    def set_value(self, seconds: float | None) -> None:
        self.setText("" if seconds is None else format_time(float(seconds)))

    def _tidy(self) -> None:
        value = self.value()
        if isinstance(value, int | float) and self.text() != format_time(value):
            self.set_value(value)  # "90" reads back as "1:30"


class ColourEdit(QWidget):
    """A colour as text (#rrggbb) with a button that shows it and opens a colour picker."""

    textChanged = Signal(str)

    def __init__(self, choose: ChooseColour | None = None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.choose = choose or pick_colour
        self.line = QLineEdit()
        self.line.setPlaceholderText("#rrggbb")
        self.button = QPushButton()
        self.button.setToolTip("Choose a colour")
        self.button.setAccessibleName("Choose a colour")
        self.button.setFixedWidth(self.button.sizeHint().height() * 2)
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(self.line, 1)
        row.addWidget(self.button)
        self.setFocusProxy(self.line)
        self.line.textChanged.connect(self._changed)
        self.button.clicked.connect(self._pick)
        self._changed(self.line.text())

    def text(self) -> str:
        return self.line.text()

    def setText(self, text: str) -> None:  # noqa: N802 - reads as QLineEdit's
        self.line.setText(text)

    def _changed(self, text: str) -> None:
        colour = QColor(text)
        shown = colour.name() if text.strip() and colour.isValid() else None
        self.button.setText("" if shown else "…")
        self.button.setStyleSheet(f"QPushButton {{ background: {shown}; }}" if shown else "")
        self.textChanged.emit(text)

    def _pick(self) -> None:
        current = QColor(self.line.text())
        chosen = self.choose(current if current.isValid() else QColor("#ffffff"), self)
        if chosen is not None and chosen.isValid():
            self.line.setText(chosen.name())


def pick_colour(current: QColor, parent: QWidget) -> QColor | None:
    chosen = QColorDialog.getColor(current, parent, "Choose a colour")
    return chosen if chosen.isValid() else None


class MultiChoice(QWidget):
    """Several of a fixed list, as check boxes."""

    changed = Signal()

    def __init__(self, options: tuple[Any, ...], labels: Callable[[Any], str] = str,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        grid = QGridLayout(self)
        grid.setContentsMargins(0, 0, 0, 0)
        self.boxes: dict[Any, QCheckBox] = {}
        for i, option in enumerate(options):
            box = QCheckBox(labels(option))
            box.toggled.connect(self.changed)
            grid.addWidget(box, i // 3, i % 3)
            self.boxes[option] = box

    def value(self) -> list[Any]:
        return [o for o, b in self.boxes.items() if b.isChecked()]

    def set_value(self, values: list[Any] | None) -> None:
        chosen = set(values or [])
        for option, box in self.boxes.items():
            box.setChecked(option in chosen)

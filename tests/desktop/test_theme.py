"""Themes: radio buttons read at a glance in the dark theme too (the ring of an empty one, the chosen one's dot)."""

from __future__ import annotations

from PySide6.QtWidgets import QApplication, QRadioButton, QStyle, QStyleOptionButton

from desktop.theme import apply_theme, is_dark


def indicator_contrast(checked: bool, window: int) -> tuple[int, int]:
    """(the most any pixel across the indicator's middle row differs from the window, the centre's lightness)."""
    radio = QRadioButton("choice")
    radio.setChecked(checked)
    radio.resize(radio.sizeHint())
    image = radio.grab().toImage()
    option = QStyleOptionButton()
    radio.initStyleOption(option)  # type: ignore[arg-type]
    box = radio.style().subElementRect(QStyle.SubElement.SE_RadioButtonIndicator, option, radio)
    y = box.center().y()
    row = [image.pixelColor(x, y).lightness() for x in range(box.left(), box.right() + 1)]
    return max(abs(v - window) for v in row), image.pixelColor(box.center()).lightness()


def test_radio_buttons_stand_out_in_both_themes(qapp: QApplication) -> None:
    try:
        for theme in ("dark", "light"):
            apply_theme(qapp, theme)
            assert is_dark(qapp.palette()) == (theme == "dark")
            window = qapp.palette().window().color().lightness()
            ring, _ = indicator_contrast(False, window)
            _, dot = indicator_contrast(True, window)
            _, empty = indicator_contrast(False, window)
            assert ring >= 60, (theme, "the empty circle hardly shows against the window", ring)
            assert abs(dot - empty) >= 60, (theme, "the chosen one looks like the others", dot, empty)
    finally:
        apply_theme(qapp, "system")

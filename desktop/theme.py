"""Light, dark or the system's colours. Widgets use palette roles only, so both read well."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QGuiApplication, QPalette


def dark_palette() -> QPalette:
    """A dark palette for platforms whose theme does not provide one."""
    p = QPalette()
    base, window, text = QColor(30, 30, 32), QColor(45, 45, 48), QColor(232, 232, 232)
    disabled = QColor(130, 130, 130)
    for role, color in (
        (QPalette.ColorRole.Window, window), (QPalette.ColorRole.WindowText, text),
        (QPalette.ColorRole.Base, base), (QPalette.ColorRole.AlternateBase, QColor(38, 38, 41)),
        (QPalette.ColorRole.ToolTipBase, window), (QPalette.ColorRole.ToolTipText, text),
        (QPalette.ColorRole.PlaceholderText, disabled), (QPalette.ColorRole.Text, text),
        (QPalette.ColorRole.Button, window), (QPalette.ColorRole.ButtonText, text),
        (QPalette.ColorRole.BrightText, QColor(255, 90, 90)), (QPalette.ColorRole.Link, QColor(110, 170, 255)),
        (QPalette.ColorRole.Highlight, QColor(42, 110, 200)),
        (QPalette.ColorRole.HighlightedText, QColor(255, 255, 255)),
        (QPalette.ColorRole.Light, QColor(70, 70, 74)), (QPalette.ColorRole.Midlight, QColor(60, 60, 64)),
        (QPalette.ColorRole.Mid, QColor(50, 50, 54)), (QPalette.ColorRole.Dark, QColor(20, 20, 22)),
        (QPalette.ColorRole.Shadow, QColor(0, 0, 0)),
    ):
        p.setColor(role, color)
    for role in (QPalette.ColorRole.Text, QPalette.ColorRole.WindowText, QPalette.ColorRole.ButtonText):
        p.setColor(QPalette.ColorGroup.Disabled, role, disabled)
    return p


def is_dark(palette: QPalette) -> bool:
    return palette.color(QPalette.ColorRole.Window).lightness() < 128


# In a dark palette Fusion draws a radio button's ring darker than the window and its dot grey on
# near-black: which choice is on is hard to see. A light ring, and the highlight colour for the chosen one.
DARK_INDICATORS = """
QRadioButton::indicator { width: 12px; height: 12px; border-radius: 7px; border: 1px solid #a0a0a6;
                          background: #1e1e20; }
QRadioButton::indicator:checked { border: 1px solid #6eaaff;
    background: qradialgradient(cx: 0.5, cy: 0.5, radius: 0.5, fx: 0.5, fy: 0.5,
                                stop: 0 #6eaaff, stop: 0.5 #6eaaff, stop: 0.6 #1e1e20, stop: 1 #1e1e20); }
QRadioButton::indicator:disabled { border: 1px solid #5a5a5e; }
"""


def apply_theme(app: QGuiApplication, theme: str) -> None:
    """``system`` follows the desktop (and its changes); ``light``/``dark`` force one."""
    scheme = {"light": Qt.ColorScheme.Light, "dark": Qt.ColorScheme.Dark}.get(theme, Qt.ColorScheme.Unknown)
    hints = app.styleHints()
    if hasattr(hints, "setColorScheme"):  # Qt 6.8+
        hints.setColorScheme(scheme)
    app.setPalette(QPalette())  # back to the style's own palette for the scheme
    if theme == "dark" and not is_dark(app.palette()):
        app.setPalette(dark_palette())
    if hasattr(app, "setStyleSheet"):  # a QApplication (widgets), not a bare QGuiApplication
        app.setStyleSheet(DARK_INDICATORS if is_dark(app.palette()) else "")

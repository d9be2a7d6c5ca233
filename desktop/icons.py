"""Icons drawn in code (crisp at every scale factor, nothing to bundle), and file-type icons."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QFileInfo, QPointF, QRectF, Qt
from PySide6.QtGui import QColor, QIcon, QPainter, QPainterPath, QPixmap
from PySide6.QtWidgets import QFileIconProvider

from desktop.models.files import FileEntry


def _kiln(size: int) -> QPixmap:
    pixmap = QPixmap(size, size)
    pixmap.fill(Qt.GlobalColor.transparent)
    p = QPainter(pixmap)
    p.setRenderHint(QPainter.RenderHint.Antialiasing)
    s = float(size)
    body = QPainterPath()
    body.moveTo(0.14 * s, 0.92 * s)
    body.lineTo(0.14 * s, 0.45 * s)
    body.quadTo(0.5 * s, 0.02 * s, 0.86 * s, 0.45 * s)
    body.lineTo(0.86 * s, 0.92 * s)
    body.closeSubpath()
    p.setPen(Qt.PenStyle.NoPen)
    p.setBrush(QColor("#8a3b12"))
    p.drawPath(body)
    p.setBrush(QColor("#2b1a10"))
    p.drawRoundedRect(QRectF(0.32 * s, 0.55 * s, 0.36 * s, 0.37 * s), 0.06 * s, 0.06 * s)
    flame = QPainterPath()
    flame.moveTo(0.5 * s, 0.58 * s)
    flame.cubicTo(QPointF(0.62 * s, 0.7 * s), QPointF(0.6 * s, 0.88 * s), QPointF(0.5 * s, 0.9 * s))
    flame.cubicTo(QPointF(0.4 * s, 0.88 * s), QPointF(0.38 * s, 0.7 * s), QPointF(0.5 * s, 0.58 * s))
    p.setBrush(QColor("#ffb224"))
    p.drawPath(flame)
    p.end()
    return pixmap


def app_icon() -> QIcon:
    icon = QIcon()
    for size in (16, 24, 32, 48, 64, 128, 256):
        icon.addPixmap(_kiln(size))
    return icon


def file_icons() -> Callable[[FileEntry], QIcon]:
    """The platform's icon for each file type, cached by extension."""
    provider = QFileIconProvider()
    cache: dict[str, QIcon] = {}

    def icon_for(entry: FileEntry) -> QIcon:
        suffix = entry.path.suffix.lower()
        if suffix not in cache:
            cache[suffix] = provider.icon(QFileInfo(str(entry.path)))
        return cache[suffix]

    return icon_for

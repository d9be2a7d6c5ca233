"""FileKiln's app icon, loaded from resources/icons, and the platform's file-type icons."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QFileInfo, QRectF, QSize, Qt
from PySide6.QtGui import QIcon, QPainter, QPixmap
from PySide6.QtWidgets import QFileIconProvider

from desktop.models.files import FileEntry
from desktop.resources import resource

if TYPE_CHECKING:
    from PySide6.QtSvg import QSvgRenderer

# the sizes the icon is rendered at (and the PNGs packaging/make_icons.py --resources writes next to the SVG)
APP_ICON_SIZES = (16, 24, 32, 48, 64, 128, 256)


def app_icon_svg() -> Path:
    """The icon's source, resources/icons/filekiln.svg."""
    return resource("icons", "filekiln.svg")


def app_icon_png(size: int) -> Path:
    """The icon rendered at ``size`` px, resources/icons/filekiln-<size>.png."""
    return resource("icons", f"filekiln-{size}.png")


def _svg_renderer(path: Path) -> QSvgRenderer | None:
    """A renderer of the SVG file, or None when QtSvg is missing or the file is not there or not valid."""
    try:
        from PySide6.QtSvg import QSvgRenderer
    except ImportError:  # a Qt without its SVG module: the PNGs do
        return None
    if not path.is_file():
        return None
    renderer = QSvgRenderer(str(path))
    return renderer if renderer.isValid() else None


def render_svg(renderer: QSvgRenderer, size: int) -> QPixmap:
    pixmap = QPixmap(size, size)
    pixmap.fill(Qt.GlobalColor.transparent)
    painter = QPainter(pixmap)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    renderer.render(painter, QRectF(0, 0, size, size))
    painter.end()
    return pixmap


def app_icon() -> QIcon:
    """The kiln, from resources/icons: the SVG rendered at each size (crisp at every size and scale factor), or
    the PNGs made from it when Qt cannot render SVG. Null when neither is found."""
    icon = QIcon()
    renderer = _svg_renderer(app_icon_svg())
    if renderer is not None:
        for size in APP_ICON_SIZES:
            icon.addPixmap(render_svg(renderer, size))
        return icon
    for size in APP_ICON_SIZES:
        png = app_icon_png(size)
        if png.is_file():
            icon.addFile(str(png), QSize(size, size))
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

"""FileKiln's icons, drawn as SVG in resources/icons: the app icon, one per tool category
(``categories/<category>.svg``) and one per family of file types (``types/<family>.svg``).

A file's family comes from the formats the converters know (:data:`converters.inputs.sniff.MIME_TYPES`),
so a format the catalogue learns gets an icon without a second table here.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path, PurePath
from typing import TYPE_CHECKING

from PySide6.QtCore import QFileInfo, QRectF, QSize, Qt
from PySide6.QtGui import QGuiApplication, QIcon, QPainter, QPixmap
from PySide6.QtWidgets import QFileIconProvider

from converters.inputs.sniff import MIME_TYPES
from desktop.models.files import FileEntry
from desktop.resources import resource

if TYPE_CHECKING:
    from PySide6.QtSvg import QSvgRenderer

# the sizes the icon is rendered at (and the PNGs packaging/make_icons.py --resources writes next to the SVG)
APP_ICON_SIZES = (16, 24, 32, 48, 64, 128, 256)
# the sizes the category and file-type icons are rendered at (lists, trees and buttons)
ICON_SIZES = (16, 24, 32, 48)
PRESETS_ICON = "presets"  # the picker's group of presets: categories/presets.svg
GENERIC = "generic"
TYPE_FAMILIES = ("pdf", "image", "audio", "video", "document", "spreadsheet", "presentation", "ebook", "archive",
                 "font", "subtitle", "model3d", "text", GENERIC)

# A format's family by its MIME type: the exceptions first (whole types), then the top-level type.
_FAMILY_BY_MIME = {
    "application/pdf": "pdf", "application/postscript": "pdf", "application/oxps": "pdf",
    "application/msword": "document", "application/rtf": "document", "text/html": "document",
    "application/vnd.oasis.opendocument.text": "document", "message/rfc822": "document",
    "application/vnd.ms-outlook": "document",
    "application/vnd.ms-excel": "spreadsheet", "application/vnd.oasis.opendocument.spreadsheet": "spreadsheet",
    "text/csv": "spreadsheet",
    "application/vnd.ms-powerpoint": "presentation", "application/vnd.oasis.opendocument.presentation": "presentation",
    "application/epub+zip": "ebook", "application/vnd.comicbook+zip": "ebook",
    "application/x-mobipocket-ebook": "ebook", "application/vnd.amazon.ebook": "ebook",
    "application/x-fictionbook+xml": "ebook",
    "application/zip": "archive", "application/x-7z-compressed": "archive", "application/vnd.rar": "archive",
    "application/x-tar": "archive", "application/gzip": "archive", "application/x-bzip2": "archive",
    "application/x-xz": "archive", "application/zstd": "archive",
    "application/x-subrip": "subtitle", "text/vtt": "subtitle", "text/x-ass": "subtitle", "text/x-ssa": "subtitle",
    "text/x-microdvd": "subtitle", "application/ttml+xml": "subtitle",
    "image/vnd.dxf": "model3d", "application/mxf": "video", "application/vnd.apple.mpegurl": "video",
    "application/json": "text", "application/xml": "text",
}
_FAMILY_BY_MIME_PART = {
    "wordprocessingml": "document", "spreadsheetml": "spreadsheet", "presentationml": "presentation",
}
_FAMILY_BY_TOP = {"image": "image", "audio": "audio", "video": "video", "font": "font", "model": "model3d",
                  "text": "text"}
# file name suffixes that name a format by another spelling than its id
_SUFFIX_FORMATS = {
    "jpeg": "jpg", "jpe": "jpg", "tif": "tiff", "htm": "html", "markdown": "md", "text": "txt", "mpg": "mpeg",
    "tgz": "tar.gz", "tbz2": "tar.bz2", "txz": "tar.xz", "oga": "ogg", "aif": "aiff", "m4b": "m4a",
    "azw": "azw3", "kf8": "azw3", "jfif": "jpg", "mts": "ts", "m2ts": "ts", "yml": "txt", "yaml": "txt",
    "log": "txt", "ini": "txt", "toml": "txt",
}
_cache: dict[Path, QIcon] = {}


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


def category_icon_svg(category: str) -> Path:
    """A tool category's icon (or the presets group's, :data:`PRESETS_ICON`):
    resources/icons/categories/<category>.svg."""
    return resource("icons", "categories", f"{category}.svg")


def type_icon_svg(family: str) -> Path:
    """A file family's icon: resources/icons/types/<family>.svg."""
    return resource("icons", "types", f"{family}.svg")


def format_family(fmt: str | None) -> str:
    """The family of a format id (``"docx"`` -> ``"document"``), from its MIME type; :data:`GENERIC` when unknown."""
    mime = MIME_TYPES.get(fmt or "")
    if mime is None:
        return GENERIC
    if mime in _FAMILY_BY_MIME:
        return _FAMILY_BY_MIME[mime]
    for part, family in _FAMILY_BY_MIME_PART.items():
        if part in mime:
            return family
    return _FAMILY_BY_TOP.get(mime.split("/", 1)[0], GENERIC)


def suffix_format(path_or_suffix: str | PurePath) -> str | None:
    """The format id a file name's suffix names: ``"a.JPEG"`` -> ``"jpg"``, ``".tar.gz"``, ``"x.tgz"`` ->
    ``"tar.gz"``, ``"mp3"`` -> ``"mp3"``; None when no known format has it. A bare word is read as a suffix."""
    text = str(path_or_suffix).lower()
    name = PurePath(text).name if isinstance(path_or_suffix, PurePath) or "." in text else f".{text}"
    parts = name.split(".")[1:]
    for start in range(len(parts)):  # the longest known tail first: "a.tar.gz" is tar.gz, not gz
        suffix = ".".join(parts[start:])
        fmt = _SUFFIX_FORMATS.get(suffix, suffix)
        if fmt in MIME_TYPES:
            return fmt
    return None


def type_family(path_or_suffix: str | PurePath) -> str:
    """The family of the file a name or suffix stands for (``"report.pdf"``, ``".pdf"``, ``"pdf"`` -> ``"pdf"``)."""
    return format_family(suffix_format(path_or_suffix))


def _svg_icon(path: Path) -> QIcon:
    """The SVG rendered at :data:`ICON_SIZES`, cached; null when it cannot be rendered (no file, no QtSvg, or no
    application to render with yet: then nothing is cached, so a later call renders it)."""
    if path in _cache:
        return _cache[path]
    if QGuiApplication.instance() is None:
        return QIcon()
    renderer = _svg_renderer(path)
    icon = QIcon()
    if renderer is not None:
        for size in ICON_SIZES:
            icon.addPixmap(render_svg(renderer, size))
    _cache[path] = icon
    return icon


def category_icon(category: str) -> QIcon:
    """The icon of a tool category (``"pdf"``, ``"3d"`` ..., or :data:`PRESETS_ICON`); a category without one of
    its own gets the generic file icon."""
    icon = _svg_icon(category_icon_svg(category))
    return icon if not icon.isNull() else _svg_icon(type_icon_svg(GENERIC))


def family_icon(family: str) -> QIcon:
    """The icon of a file family (:data:`TYPE_FAMILIES`); the generic one for any other."""
    icon = _svg_icon(type_icon_svg(family))
    return icon if not icon.isNull() or family == GENERIC else _svg_icon(type_icon_svg(GENERIC))


def type_icon(path_or_suffix: str | PurePath) -> QIcon:
    """The icon of a file's type, told by its name or suffix (``"a.pdf"``, ``".pdf"``, ``"pdf"``)."""
    return family_icon(type_family(path_or_suffix))


def file_icons() -> Callable[[FileEntry], QIcon]:
    """The icon of each file in the files list: its family's, by the format sniffed from its content (or, for a
    file not recognised, its name). The platform's icon only when ours cannot be rendered."""
    provider: QFileIconProvider | None = None

    def icon_for(entry: FileEntry) -> QIcon:
        nonlocal provider
        family = format_family(entry.format) if entry.format else type_family(entry.path)
        icon = family_icon(family)
        if icon.isNull():
            provider = provider or QFileIconProvider()
            icon = provider.icon(QFileInfo(str(entry.path)))
        return icon

    return icon_for

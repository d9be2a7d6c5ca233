"""The resources folder: found from the source tree and from a frozen (PyInstaller) layout; the app icon loads from
resources/icons (the SVG, or the PNGs made from it)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from PySide6.QtGui import QColor, QImage
from PySide6.QtWidgets import QApplication

from desktop import icons
from desktop.icons import APP_ICON_SIZES, app_icon
from desktop.resources import resource, resources_dir

REPO = Path(__file__).resolve().parents[2]
SIZES = (16, 32, 256)


def _image(icon_size: int) -> QImage:
    return app_icon().pixmap(icon_size, icon_size).toImage()


def _close(color: QColor, expected: str, tolerance: int = 8) -> bool:
    want = QColor(expected)
    return all(abs(a - b) <= tolerance for a, b in ((color.red(), want.red()), (color.green(), want.green()),
                                                     (color.blue(), want.blue())))


def _frozen(monkeypatch: pytest.MonkeyPatch, bundle: Path) -> None:
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    monkeypatch.setattr(sys, "_MEIPASS", str(bundle), raising=False)


def test_source_tree_resources() -> None:
    assert not getattr(sys, "frozen", False)
    assert resources_dir() == REPO / "resources"
    assert resource("icons", "filekiln.svg").is_file()
    for size in APP_ICON_SIZES:
        assert resource("icons", f"filekiln-{size}.png").is_file()


def test_frozen_layout(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    (tmp_path / "resources" / "icons").mkdir(parents=True)
    _frozen(monkeypatch, tmp_path)
    assert resources_dir() == tmp_path / "resources"
    assert resource("icons", "filekiln.svg") == tmp_path / "resources" / "icons" / "filekiln.svg"
    monkeypatch.delattr(sys, "_MEIPASS")  # frozen by something that sets no _MEIPASS: next to the executable
    assert resources_dir() == Path(sys.executable).resolve().parent / "resources"


def test_app_icon_from_svg(qapp: QApplication) -> None:
    assert icons._svg_renderer(icons.app_icon_svg()) is not None, "PySide6 has QtSvg: the SVG is the source"
    icon = app_icon()
    assert not icon.isNull()
    for size in SIZES:
        pixmap = icon.pixmap(size, size)
        assert not pixmap.isNull()
        assert pixmap.width() == size * pixmap.devicePixelRatio()
    image = _image(256)
    assert image.pixelColor(2, 2).alpha() == 0  # transparent corner
    assert _close(image.pixelColor(128, 90), "#8a3b12")  # body
    assert _close(image.pixelColor(50, 200), "#8a3b12")  # wall beside the door
    assert _close(image.pixelColor(90, 220), "#2b1a10")  # door
    assert _close(image.pixelColor(128, 200), "#ffb224")  # flame


def test_app_icon_loads_the_bundled_file(qapp: QApplication, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A frozen app's icon is the file in its bundle: change the file, the icon changes."""
    icons_dir = tmp_path / "resources" / "icons"
    icons_dir.mkdir(parents=True)
    (icons_dir / "filekiln.svg").write_text(
        '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 10 10">'
        '<rect width="10" height="10" fill="#0000ff"/></svg>'
    )
    _frozen(monkeypatch, tmp_path)
    for size in SIZES:
        image = _image(size)
        assert not image.isNull()
        assert _close(image.pixelColor(size // 2, size // 2), "#0000ff")


def test_app_icon_from_pngs_without_svg(qapp: QApplication, monkeypatch: pytest.MonkeyPatch) -> None:
    """A Qt without its SVG module loads the PNGs made from the SVG."""
    monkeypatch.setattr(icons, "_svg_renderer", lambda path: None)
    icon = app_icon()
    assert not icon.isNull()
    assert {s.width() for s in icon.availableSizes()} >= set(APP_ICON_SIZES)
    for size in SIZES:
        assert not icon.pixmap(size, size).isNull()
    assert _close(_image(256).pixelColor(128, 200), "#ffb224")


def test_no_icon_files_gives_a_null_icon(qapp: QApplication, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _frozen(monkeypatch, tmp_path)  # a bundle without resources/
    assert app_icon().isNull()


def test_committed_pngs_match_the_svg(qapp: QApplication) -> None:
    """resources/icons/filekiln-<size>.png are packaging/make_icons.py --resources renders of the SVG."""
    renderer = icons._svg_renderer(icons.app_icon_svg())
    assert renderer is not None
    for size in APP_ICON_SIZES:
        rendered = icons.render_svg(renderer, size).toImage().convertToFormat(QImage.Format.Format_ARGB32)
        committed = QImage(str(icons.app_icon_png(size))).convertToFormat(QImage.Format.Format_ARGB32)
        assert committed.size() == rendered.size(), size
        differing = sum(
            1
            for y in range(size)
            for x in range(size)
            if abs(committed.pixelColor(x, y).alpha() - rendered.pixelColor(x, y).alpha()) > 16
        )
        assert differing <= size * size // 100, f"{size} px: run packaging/make_icons.py --resources"


def test_make_icons_writes_the_installer_icons(qapp: QApplication, tmp_path: Path) -> None:
    sys.path.insert(0, str(REPO / "packaging"))
    try:
        import make_icons
    finally:
        sys.path.remove(str(REPO / "packaging"))
    assert make_icons.write_build_icons(tmp_path) == 0
    for name in ("filekiln.png", "filekiln.ico", "filekiln.icns"):
        assert (tmp_path / name).is_file(), name
    assert QImage(str(tmp_path / "filekiln.png")).width() == 256

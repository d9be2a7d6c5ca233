"""Category and file-type icons: drawn in resources/icons, one per category and file family, shown in the tool
tree, on the first screen's buttons, in the files list and the jobs table, and shipped by the packaging spec."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from PySide6.QtCore import QRectF, Qt
from PySide6.QtGui import QColor, QIcon, QImage
from PySide6.QtSvg import QSvgRenderer
from PySide6.QtWidgets import QApplication, QPushButton

from converters.catalogue import load_catalogue
from converters.inputs.sniff import MIME_TYPES
from desktop import icons
from desktop.icons import (
    GENERIC,
    PRESETS_ICON,
    TYPE_FAMILIES,
    category_icon,
    category_icon_svg,
    family_icon,
    file_icons,
    format_family,
    render_svg,
    type_family,
    type_icon,
    type_icon_svg,
)
from desktop.main_window import MainWindow
from desktop.models.files import FileListModel, scan_files
from desktop.models.jobs import JobRow, JobsModel
from desktop.models.tools import CATEGORY_TITLES, PresetEntry, PresetNameRole, ToolIdRole, ToolInfo, ToolTreeModel
from desktop.resources import resource
from desktop.views.options_pane import MOST_USED
from localapi.core.states import JobStatus
from tests.conftest import image_pdf_bytes

REPO = Path(__file__).resolve().parents[2]
ICON_DIRS = ("categories", "types")
SVGS = sorted(p for d in ICON_DIRS for p in (REPO / "resources" / "icons" / d).glob("*.svg"))
DECORATION = Qt.ItemDataRole.DecorationRole


def image(icon: QIcon, size: int = 24) -> QImage:
    return icon.pixmap(size, size).toImage().convertToFormat(QImage.Format.Format_ARGB32)


def svg_image(path: Path, size: int = 24) -> QImage:
    renderer = QSvgRenderer(str(path))
    assert renderer.isValid(), path
    return render_svg(renderer, size).toImage().convertToFormat(QImage.Format.Format_ARGB32)


def drawn_from(icon: QIcon, path: Path) -> bool:
    """The icon is the SVG at ``path``, rendered (at 16 and 24 px)."""
    return not icon.isNull() and all(image(icon, s) == svg_image(path, s) for s in (16, 24))


def tool(tool_id: str, category: str) -> ToolInfo:
    return ToolInfo(tool_id, category, tool_id.title(), "", ("pdf",), ("pdf",), {}, False, 10**9)


@pytest.mark.parametrize("svg", SVGS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_icon_is_a_valid_24_px_svg(qapp: QApplication, svg: Path) -> None:
    renderer = QSvgRenderer(str(svg))
    assert renderer.isValid()
    assert renderer.viewBoxF() == QRectF(0, 0, 24, 24)
    picture = svg_image(svg, 48)
    assert picture.pixelColor(1, 1).alpha() == 0  # rounded corners: transparent outside the tile
    assert picture.pixelColor(24, 44).alpha() == 255  # a tile, not a bare glyph: readable on light and dark


def test_every_category_and_family_has_its_own_svg() -> None:
    assert len(SVGS) == len(CATEGORY_TITLES) + 1 + len(TYPE_FAMILIES)
    for category in [*CATEGORY_TITLES, PRESETS_ICON]:
        assert category_icon_svg(category).is_file(), category
    for family in TYPE_FAMILIES:
        assert type_icon_svg(family).is_file(), family


def test_every_catalogue_category_gets_an_icon_drawn_from_its_own_svg(qapp: QApplication) -> None:
    categories = {t.category for t in load_catalogue()}
    assert categories and categories <= set(CATEGORY_TITLES)
    generic = type_icon_svg(GENERIC)
    for category in [*categories, PRESETS_ICON]:
        icon = category_icon(category)
        assert drawn_from(icon, category_icon_svg(category)), category
        assert not drawn_from(icon, generic)
        assert {s.width() for s in icon.availableSizes()} >= {16, 24, 32, 48}
    assert drawn_from(category_icon("no-such-category"), generic)  # the fallback, never a null icon


@pytest.mark.parametrize(("name", "family"), [
    (".pdf", "pdf"), ("photo.png", "image"), ("song.MP3", "audio"), ("clip.mp4", "video"), (".docx", "document"),
    (".xlsx", "spreadsheet"), ("slides.pptx", "presentation"), ("book.epub", "ebook"), (".zip", "archive"),
    ("backup.tar.gz", "archive"), (".ttf", "font"), ("film.srt", "subtitle"), ("part.stl", "model3d"),
    ("notes.txt", "text"), ("photo.jpeg", "image"), ("pdf", "pdf"), ("data.xyz123", GENERIC), ("README", GENERIC),
])
def test_type_icon_maps_a_name_or_suffix_to_its_family(qapp: QApplication, name: str, family: str) -> None:
    assert type_family(name) == family
    if "." in name or family == GENERIC:  # a path is a file's name: "pdf" there is a file without a suffix
        assert type_family(Path("/some/folder") / name) == family
    assert drawn_from(type_icon(name), type_icon_svg(family))


def test_every_format_the_converters_know_has_a_family() -> None:
    families = {fmt: format_family(fmt) for fmt in MIME_TYPES}
    assert set(families.values()) <= set(TYPE_FAMILIES)
    assert {fmt for fmt, family in families.items() if family == GENERIC} <= {"p12"}  # a certificate, not a file type
    assert families["odt"] == "document" and families["ods"] == "spreadsheet" and families["dxf"] == "model3d"
    assert format_family(None) == GENERIC


def test_icons_load_from_the_bundle_of_a_frozen_app(qapp: QApplication, monkeypatch: pytest.MonkeyPatch,
                                                    tmp_path: Path) -> None:
    folder = tmp_path / "resources" / "icons" / "categories"
    folder.mkdir(parents=True)
    (folder / "pdf.svg").write_text('<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 24 24">'
                                    '<rect width="24" height="24" fill="#0000ff"/></svg>')
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    monkeypatch.setattr(sys, "_MEIPASS", str(tmp_path), raising=False)
    assert category_icon_svg("pdf") == folder / "pdf.svg"
    assert image(category_icon("pdf")).pixelColor(12, 12) == QColor("#0000ff")


def test_tool_tree_shows_category_icons_on_category_tool_and_preset_rows(qapp: QApplication) -> None:
    model = ToolTreeModel([tool("pdf-merge", "pdf"), tool("image-convert", "images"), tool("mesh", "3d")])
    model.set_presets([PresetEntry("Small PDF", "", ("pdf-merge",), builtin=False)])
    seen = set()
    for r in range(model.rowCount()):
        group = model.index(r, 0)
        children = [model.index(c, 0, group) for c in range(model.rowCount(group))]
        if children[0].data(PresetNameRole) is not None:
            category = PRESETS_ICON
        else:
            category = next(t.category for t in model.tools if t.id == children[0].data(ToolIdRole))
        svg = category_icon_svg(category)
        assert drawn_from(group.data(DECORATION), svg), category
        for child in children:
            assert drawn_from(child.data(DECORATION), svg), child.data()
        seen.add(category)
    assert seen == {PRESETS_ICON, "pdf", "images", "3d"}


def test_the_window_shows_icons_in_the_picker_and_on_the_first_screens_buttons(window: MainWindow) -> None:
    tree = window.convert.picker.tree
    assert 18 <= tree.iconSize().width() <= 20
    first = tree.model().index(0, 0)
    assert not first.data(DECORATION).isNull()
    assert tree.visualRect(tree.model().index(0, 0, first)).height() >= tree.iconSize().height()
    categories = {t.id: t.category for t in window.desktop.tools.tools}
    buttons = window.convert.options.first_steps.findChildren(QPushButton)
    assert len(buttons) == len(MOST_USED)
    for tool_id, _title, category in MOST_USED:
        assert categories[tool_id] == category, tool_id  # the button shows the icon the tool has in the tree
        button = window.convert.options.first_steps.buttons[tool_id]
        assert drawn_from(button.icon(), category_icon_svg(category))


def test_files_list_shows_our_icon_for_each_file(qapp: QApplication, tmp_path: Path) -> None:
    (tmp_path / "scan.pdf").write_bytes(image_pdf_bytes())
    (tmp_path / "mystery.bin").write_bytes(b"\x00\x01nothing known")
    (tmp_path / "renamed.txt").write_bytes(image_pdf_bytes())  # the content decides, not the name
    model = FileListModel(lambda p: "pdf" if p.read_bytes().startswith(b"%PDF") else None, None, file_icons())
    model.add_entries(scan_files([tmp_path], [], model._sniff))
    by_name = {model.index(r, 0).data(): model.index(r, 0).data(DECORATION) for r in range(model.rowCount())}
    assert drawn_from(by_name["scan.pdf"], type_icon_svg("pdf"))
    assert drawn_from(by_name["renamed.txt"], type_icon_svg("pdf"))
    assert drawn_from(by_name["mystery.bin"], type_icon_svg(GENERIC))


def test_jobs_table_shows_the_first_files_icon(qapp: QApplication) -> None:
    model = JobsModel(clock=lambda: 100.0)
    model.apply([JobRow("a", "pdf-merge", "Merge PDFs", "a.pdf + 2 more", "This app", JobStatus.QUEUED, 0, 2.0),
                 JobRow("b", "image-convert", "Convert image", "b.png", "This app", JobStatus.DONE, 100, 1.0),
                 JobRow("c", "image-convert", "Convert image", "", "This app", JobStatus.DONE, 100, 0.5)])
    assert drawn_from(model.index(0, JobsModel.FILE_COLUMN).data(DECORATION), type_icon_svg("pdf"))
    assert drawn_from(model.index(1, JobsModel.FILE_COLUMN).data(DECORATION), type_icon_svg("image"))
    assert model.index(2, JobsModel.FILE_COLUMN).data(DECORATION) is None
    assert model.index(0, 0).data(DECORATION) is None


def test_the_packaging_spec_ships_the_icon_folders() -> None:
    """The spec copies resources/ as it finds it: run its resources block against this tree."""
    spec = (REPO / "packaging" / "filekiln.spec").read_text()
    block = re.search(r'^resources = ROOT / "resources"\n(?:(?:if|    ).*\n)+', spec, re.MULTILINE)
    assert block is not None, "the spec no longer collects resources/ as a folder: list the icons in it"
    datas: list[tuple[str, str]] = []
    exec(block.group(0), {"ROOT": REPO, "Path": Path, "datas": datas})  # noqa: S102 - our own spec's code
    shipped = {(Path(src).relative_to(REPO).as_posix(), dest) for src, dest in datas}
    for svg in SVGS:
        folder = svg.parent.relative_to(REPO).as_posix()
        assert (svg.relative_to(REPO).as_posix(), folder) in shipped
    assert resource("icons", "types", "pdf.svg") == REPO / "resources" / "icons" / "types" / "pdf.svg"


def test_family_icon_of_an_unknown_family_is_the_generic_one(qapp: QApplication) -> None:
    assert drawn_from(family_icon("hologram"), type_icon_svg(GENERIC))
    assert icons.TYPE_FAMILIES[-1] == GENERIC

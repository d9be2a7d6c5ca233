# PyMuPDF annotates only part of its API; calls into the rest are untyped by no fault of ours.
# mypy: disable-error-code="no-untyped-call"
"""Imposition: several pages on one sheet. ``pdf-n-up`` (2, 4, 6 or 9 pages per sheet) and ``pdf-booklet``
(saddle-stitched: printed on both sides, folded in the middle, read like a book)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from converters.base import CamelParams, Context, ConversionError, InputFile, ToolEnv
from converters.engines.mupdf import save_pdf
from converters.tools.pdf.common import PdfTool, show_page, stem_of
from converters.tools.pdf.layout import PAPER, copy_metadata, fit, oriented, upright

if TYPE_CHECKING:
    import pymupdf

Sheet = Literal["A4", "Letter", "same"]
# pages per sheet -> (columns, rows) and whether the sheet lies landscape
GRIDS: dict[int, tuple[int, int, bool]] = {2: (2, 1, True), 4: (2, 2, False), 6: (3, 2, True), 9: (3, 3, False)}
BORDER_WIDTH = 0.5
MIN_CELL = 36.0  # half an inch: a smaller page is not worth printing


def sheet_size(doc: pymupdf.Document, sheet: str, landscape: bool) -> tuple[float, float]:
    """The sheet in points: a paper size, or (``same``) the first page's size as the reader sees it."""
    size = (doc[0].rect.width, doc[0].rect.height) if sheet == "same" else PAPER[sheet]
    return oriented(size, landscape)


def show(sheet: pymupdf.Page, doc: pymupdf.Document, index: int, box: pymupdf.Rect) -> pymupdf.Rect:
    """Show page ``index`` upright, as large as fits in ``box`` and centred; return where it went."""
    page = upright(doc[index])
    where = fit(page.rect.width, page.rect.height, box)
    show_page(sheet, where, doc, index)
    return where


# --------------------------------------------------------------------------- pdf-n-up


class NUpParams(CamelParams):
    pages_per_sheet: Literal[2, 4, 6, 9] = Field(
        2, description="Pages on each sheet: 2 (side by side, landscape sheet), 4 (2 x 2), 6 (3 x 2, landscape) "
        "or 9 (3 x 3).",
        json_schema_extra={
            "x-enumLabels": {"2": "2 (side by side)", "4": "4 (2 × 2)", "6": "6 (3 × 2)", "9": "9 (3 × 3)"},
        },
    )
    order: Literal["across", "down"] = Field(
        "across", description="across: left to right, then the next row; down: top to bottom, then the next column.",
        json_schema_extra={"x-enumLabels": {"across": "Across, then down", "down": "Down, then across"}},
    )
    sheet: Sheet = Field(
        "A4", description="The sheet size; same: the size of the first page.",
        title="Sheet size",
        json_schema_extra={"x-enumLabels": {"A4": "A4", "Letter": "Letter", "same": "Size of the first page"}},
    )
    margin: float = Field(18, ge=0, le=72, description="Space around the sheet's edge and between pages, in points.")
    border: bool = Field(False, description="Draw a thin frame around each page.")


def cells(width: float, height: float, params: NUpParams) -> list[pymupdf.Rect]:
    """The boxes of one sheet, in reading order (``params.order``)."""
    import pymupdf

    columns, rows, _ = GRIDS[params.pages_per_sheet]
    gap = params.margin
    cell_w, cell_h = (width - gap * (columns + 1)) / columns, (height - gap * (rows + 1)) / rows
    boxes = []
    for slot in range(columns * rows):
        column, row = (slot % columns, slot // columns) if params.order == "across" else (slot // rows, slot % rows)
        x0, y0 = gap + column * (cell_w + gap), gap + row * (cell_h + gap)
        boxes.append(pymupdf.Rect(x0, y0, x0 + cell_w, y0 + cell_h))
    return boxes


class PdfNUp(PdfTool):
    """Print several pages on one sheet: 2, 4, 6 or 9 per sheet, each scaled to fit its place."""

    id = "pdf-n-up"
    title = "N-up (pages per sheet)"
    description = "Put 2, 4, 6 or 9 pages on each sheet, scaled to fit, to print a handout or save paper."
    params = NUpParams

    def pages_worked(self, doc: pymupdf.Document, params: Any) -> int | None:
        return int(doc.page_count)

    def check_document(self, doc: pymupdf.Document, params: Any, env: ToolEnv | None) -> None:
        super().check_document(doc, params, env)
        width, height = sheet_size(doc, params.sheet, GRIDS[params.pages_per_sheet][2])
        box = cells(width, height, params)[0]
        if box.width < MIN_CELL or box.height < MIN_CELL:
            raise ConversionError(
                "invalid_params",
                f"A margin of {params.margin:g} pt leaves no room for {params.pages_per_sheet} pages on a "
                f"{width:.0f} x {height:.0f} pt sheet; make it smaller.",
            )

    def convert(self, ctx: Context, source: InputFile, progress: Callable[[float], None]) -> None:
        import pymupdf

        params: NUpParams = ctx.params
        doc = self.open_checked(ctx, source)
        out = pymupdf.open()
        try:
            per_sheet = params.pages_per_sheet
            width, height = sheet_size(doc, params.sheet, GRIDS[per_sheet][2])
            boxes = cells(width, height, params)
            sheet = None
            for index in range(doc.page_count):
                ctx.check_cancelled()
                if index % per_sheet == 0:
                    sheet = out.new_page(width=width, height=height)
                assert sheet is not None
                where = show(sheet, doc, index, boxes[index % per_sheet])
                if params.border:
                    sheet.draw_rect(where, color=(0, 0, 0), width=BORDER_WIDTH)
                progress(0.9 * (index + 1) / doc.page_count)
            copy_metadata(doc, out)
            save_pdf(out, ctx.output_path(stem_of(source), "pdf"))
        finally:
            out.close()
            doc.close()


# --------------------------------------------------------------------------- pdf-booklet


class BookletParams(CamelParams):
    sheet: Sheet = Field(
        "A4", description="The sheet size (landscape, two pages on each side); same: twice the first page's "
        "width, so each page keeps its size.",
        title="Sheet size",
        json_schema_extra={"x-enumLabels": {"A4": "A4", "Letter": "Letter", "same": "Keep the page size"}},
    )
    right_to_left: bool = Field(
        False, description="For right-to-left scripts (Arabic, Hebrew): the booklet opens the other way."
    )


def booklet_order(count: int) -> list[tuple[int, int]]:
    """The (left, right) pages, 1-based, of each side of the folded sheets, in printing order.

    ``count`` is padded to a multiple of 4: pages beyond the document are blank. The outer side of the
    first sheet holds the last page and the first one; its inner side the second and the second-to-last.
    """
    total = math.ceil(count / 4) * 4
    sides = []
    for side in range(total // 2):
        outer, inner = total - side, side + 1
        sides.append((outer, inner) if side % 2 == 0 else (inner, outer))
    return sides


class PdfBooklet(PdfTool):
    """Arrange pages for a saddle-stitched booklet: print double-sided, fold in the middle, staple."""

    id = "pdf-booklet"
    title = "Booklet"
    description = (
        "Arrange pages two per sheet side in booklet order: print double-sided (flip on the short edge), fold "
        "the stack in the middle and staple it, and the pages follow in order."
    )
    params = BookletParams

    def pages_worked(self, doc: pymupdf.Document, params: Any) -> int | None:
        return int(doc.page_count)

    def convert(self, ctx: Context, source: InputFile, progress: Callable[[float], None]) -> None:
        import pymupdf

        params: BookletParams = ctx.params
        doc = self.open_checked(ctx, source)
        out = pymupdf.open()
        try:
            if params.sheet == "same":
                first = doc[0].rect
                width, height = 2 * first.width, first.height
            else:
                width, height = oriented(PAPER[params.sheet], True)
            halves = pymupdf.Rect(0, 0, width / 2, height), pymupdf.Rect(width / 2, 0, width, height)
            sides = booklet_order(doc.page_count)
            for done, pair in enumerate(sides, start=1):
                ctx.check_cancelled()
                sheet = out.new_page(width=width, height=height)
                left, right = (pair[1], pair[0]) if params.right_to_left else pair
                for number, half in zip((left, right), halves, strict=True):
                    if number <= doc.page_count:
                        show(sheet, doc, number - 1, half)
                progress(0.9 * done / len(sides))
            padded = 2 * len(sides) - doc.page_count
            if padded:
                ctx.notes.append(f"{padded} blank page(s) added at the end to fill the last sheet.")
            copy_metadata(doc, out)
            save_pdf(out, ctx.output_path(stem_of(source), "pdf"))
        finally:
            out.close()
            doc.close()

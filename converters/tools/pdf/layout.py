# PyMuPDF annotates only part of its API; calls into the rest are untyped by no fault of ours.
# mypy: disable-error-code="no-untyped-call"
"""PDF tools that change where things sit on the page: page numbers, crop, scale to a paper size, overlay.

Also the helpers the imposition tools (:mod:`converters.tools.pdf.imposition`) share: paper sizes, fitting
a page into a box, turning a source page upright before it is shown on another page.
"""

from __future__ import annotations

import dataclasses
import string
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field, field_validator, model_validator

from converters.base import CamelParams, Context, ConversionError, InputFile, ToolEnv
from converters.engines.mupdf import save_pdf
from converters.inputs.pages import ALL_PAGES, page_set
from converters.tools.pdf.common import (
    OnTop,
    PageSpec,
    PdfTool,
    check_input_count,
    pages_field,
    place_labels,
    show_page,
    stem_of,
)
from converters.tools.pdf.pages import KEPT_METADATA

if TYPE_CHECKING:
    import pymupdf

MM = 72 / 25.4  # points per millimetre
# Sheets in points, portrait; ISO sizes from their millimetres.
PAPER: dict[str, tuple[float, float]] = {
    "A3": (round(297 * MM, 2), round(420 * MM, 2)),
    "A4": (round(210 * MM, 2), round(297 * MM, 2)),
    "A5": (round(148 * MM, 2), round(210 * MM, 2)),
    "Letter": (612.0, 792.0),
    "Legal": (612.0, 1008.0),
}
MIN_SIDE = 3.0  # the smallest page side the PDF specification allows, in points


def upright(page: pymupdf.Page) -> pymupdf.Page:
    """The page with its /Rotate turned into its content (in memory only: the document is not saved).

    ``show_pdf_page`` ignores a source page's /Rotate; an upright page is shown as a reader sees it.
    """
    if page.rotation:
        page.remove_rotation()
    return page


def fit(width: float, height: float, box: pymupdf.Rect) -> pymupdf.Rect:
    """The largest ``width`` x ``height`` rectangle centred in ``box``, proportions kept."""
    import pymupdf

    scale = min(box.width / width, box.height / height)
    w, h = width * scale, height * scale
    x0, y0 = box.x0 + (box.width - w) / 2, box.y0 + (box.height - h) / 2
    return pymupdf.Rect(x0, y0, x0 + w, y0 + h)


def oriented(size: tuple[float, float], landscape: bool) -> tuple[float, float]:
    short, long = sorted(size)
    return (long, short) if landscape else (short, long)


def copy_metadata(source: pymupdf.Document, target: pymupdf.Document) -> None:
    target.set_metadata({key: (source.metadata or {}).get(key) or "" for key in KEPT_METADATA})


# --------------------------------------------------------------------------- pdf-page-numbers

Corner = Literal["bottom-center", "bottom-left", "bottom-right", "top-center", "top-left", "top-right"]
PLACEHOLDERS = ("n", "total")


class PageNumberParams(CamelParams):
    position: Corner = Field(
        "bottom-center", description="Where on the page, as the reader sees it.",
        json_schema_extra={"x-enumLabels": place_labels(Corner)},
    )
    format: str = Field(
        "{n}", min_length=1, max_length=200,
        description='The text written; {n} is the page number and {total} the last number, e.g. "Page {n} of '
        '{total}". Latin-1 characters only (the built-in Helvetica font).',
    )
    start: int = Field(1, ge=-1_000_000, le=1_000_000, description="The number of the document's first page.")
    font_size: float = Field(10, ge=4, le=72, description="Font size in points.")
    margin: float = Field(24, ge=0, le=288, description="Distance from the page edges to the text, in points.")
    pages: PageSpec = pages_field(ALL_PAGES, "Pages that get a number (the others are still counted)")

    @field_validator("format")
    @classmethod
    def _placeholders(cls, value: str) -> str:
        try:
            fields = [(name, spec, conversion) for _, name, spec, conversion in string.Formatter().parse(value)
                      if name is not None]
        except ValueError as exc:
            raise ValueError(f"not a valid format ({exc}); write {{n}} and {{total}}, and {{{{ for a brace") from None
        for name, spec, conversion in fields:
            if name not in PLACEHOLDERS or spec or conversion:
                written = "{" + name + (f"!{conversion}" if conversion else "") + (f":{spec}" if spec else "") + "}"
                raise ValueError(f"{written} is not a placeholder here; only {{n}} and {{total}} can be used")
        bad = sorted({c for c in value if ord(c) > 255 or not c.isprintable()})
        if bad:
            raise ValueError(f"{''.join(bad)!r} cannot be written with the built-in Helvetica font (Latin-1 only)")
        return value


def number_page(page: pymupdf.Page, text: str, params: PageNumberParams) -> None:
    """Write ``text`` at ``params.position`` of the page as the reader sees it, upright whatever its /Rotate."""
    import pymupdf

    size, margin, where = params.font_size, params.margin, params.position
    font = pymupdf.Font("helv")
    width = pymupdf.get_text_length(text, fontname="helv", fontsize=size)
    shown = page.rect  # after the page's rotation
    if where.endswith("left"):
        x = margin
    elif where.endswith("right"):
        x = shown.width - margin - width
    else:
        x = (shown.width - width) / 2
    # The baseline: the text's top (ascender) or bottom (descender) lies ``margin`` from the edge.
    y = margin + size * font.ascender if where.startswith("top") else shown.height - margin + size * font.descender
    start = pymupdf.Point(x, y) * page.derotation_matrix
    page.insert_text(start, text, fontname="helv", fontsize=size, rotate=page.rotation, color=(0, 0, 0),
                     overlay=False)  # then moved on top (OnTop), without reading the page's content


class PdfPageNumbers(PdfTool):
    """Write page numbers (or "Page n of total") on pages, as real text."""

    id = "pdf-page-numbers"
    title = "Add page numbers"
    description = (
        'Number the pages: "{n}" or a text like "Page {n} of {total}", at a corner or the middle of the top or '
        "bottom edge, counting from any first number."
    )
    params = PageNumberParams

    def pages_worked(self, doc: pymupdf.Document, params: Any) -> int | None:
        return len(page_set(params.pages, doc.page_count))

    def convert(self, ctx: Context, source: InputFile, progress: Callable[[float], None]) -> None:
        params: PageNumberParams = ctx.params
        doc = self.open_checked(ctx, source)
        try:
            chosen = sorted(page_set(params.pages, doc.page_count))
            total = doc.page_count + params.start - 1
            on_top = OnTop(doc)
            for done, index in enumerate(chosen, start=1):
                ctx.check_cancelled()
                page = doc[index]
                number_page(page, params.format.format(n=params.start + index, total=total), params)
                on_top.move(page)
                progress(0.9 * done / len(chosen))
            save_pdf(doc, ctx.output_path(stem_of(source), "pdf"))
        finally:
            doc.close()


# --------------------------------------------------------------------------- pdf-crop


class CropParams(CamelParams):
    mode: Literal["margins", "auto"] = Field(
        "margins", description="margins: cut the given margins off each page; auto: cut each page to what is "
        "drawn on it (text, pictures, lines), plus padding.",
        title="Crop",
        json_schema_extra={
            "x-enumLabels": {"margins": "Cut off margins", "auto": "To the content"},
            "x-enumDescriptions": {
                "margins": "Cut the given margins off each page.",
                "auto": "Cut each page to what is drawn on it (text, pictures, lines), plus padding.",
            },
        },
    )
    top: float = Field(0, ge=0, le=14400, description="With mode margins: cut off at the top, as the page is seen.")
    bottom: float = Field(0, ge=0, le=14400, description="With mode margins: cut off at the bottom.")
    left: float = Field(0, ge=0, le=14400, description="With mode margins: cut off at the left.")
    right: float = Field(0, ge=0, le=14400, description="With mode margins: cut off at the right.")
    padding: float = Field(0, ge=0, le=1440, description="With mode auto: room left around the content.")
    unit: Literal["pt", "mm"] = Field(
        "pt", description="Unit of the margins and padding: points (1/72 inch) or mm.",
        json_schema_extra={"x-enumLabels": {"pt": "Points", "mm": "Millimetres"}},
    )
    pages: PageSpec = pages_field(ALL_PAGES, "Pages to crop")

    def points(self, value: float) -> float:
        return value * MM if self.unit == "mm" else value


def margins_box(page: pymupdf.Page, params: CropParams) -> pymupdf.Rect:
    """The page's visible area less the margins, as the reader sees it (rotated page space)."""
    import pymupdf

    shown, pt = page.rect, params.points
    return pymupdf.Rect(pt(params.left), pt(params.top), shown.width - pt(params.right),
                        shown.height - pt(params.bottom))


def content_box(page: pymupdf.Page, params: CropParams) -> pymupdf.Rect | None:
    """What is drawn on the page plus padding, in unrotated page space; ``None`` for a blank page."""
    import pymupdf

    whole = pymupdf.Rect(0, 0, page.cropbox.width, page.cropbox.height)
    found = pymupdf.Rect()  # empty
    for kind, box in page.get_bboxlog():
        rect = pymupdf.Rect(box)
        # invisible text (an OCR layer) is under a picture anyway; a fill over the whole page is its background
        if kind == "ignore-text" or rect.is_empty or rect.contains(whole):
            continue
        found |= rect
    found &= whole
    if found.is_empty:
        return None
    pad = params.points(params.padding)
    return (found + (-pad, -pad, pad, pad)) & whole


def set_visible(page: pymupdf.Page, unrotated: pymupdf.Rect) -> None:
    """Make ``unrotated`` (unrotated page space, origin at the visible area's corner) the page's cropbox."""
    old = page.cropbox
    page.set_cropbox((unrotated + (old.x0, old.y0, old.x0, old.y0)) & page.mediabox)


class PdfCrop(PdfTool):
    """Cut margins off pages, or cut them to their content (the cropbox changes; nothing is removed)."""

    id = "pdf-crop"
    title = "Crop PDF pages"
    description = "Cut margins off pages (in points or mm), or crop each page to its content automatically."
    params = CropParams

    def pages_worked(self, doc: pymupdf.Document, params: Any) -> int | None:
        return len(page_set(params.pages, doc.page_count))

    def check_document(self, doc: pymupdf.Document, params: Any, env: ToolEnv | None) -> None:
        super().check_document(doc, params, env)
        if params.mode != "margins":
            return
        for index in sorted(page_set(params.pages, doc.page_count)):
            page = doc[index]
            box = margins_box(page, params)
            if box.width < MIN_SIDE or box.height < MIN_SIDE:
                raise ConversionError(
                    "invalid_params",
                    f"The margins leave nothing of page {index + 1}, which is {page.rect.width:.0f} x "
                    f"{page.rect.height:.0f} pt ({page.rect.width / MM:.0f} x {page.rect.height / MM:.0f} mm).",
                )

    def convert(self, ctx: Context, source: InputFile, progress: Callable[[float], None]) -> None:
        params: CropParams = ctx.params
        doc = self.open_checked(ctx, source)
        try:
            chosen = sorted(page_set(params.pages, doc.page_count))
            blank = 0
            for done, index in enumerate(chosen, start=1):
                ctx.check_cancelled()
                page = doc[index]
                if params.mode == "margins":
                    set_visible(page, margins_box(page, params) * page.derotation_matrix)
                else:
                    box = content_box(page, params)
                    if box is None:
                        blank += 1
                    else:
                        set_visible(page, box)
                progress(0.9 * done / len(chosen))
            if blank:
                ctx.notes.append(f"{blank} blank page(s) left as they were.")
            if params.mode == "margins" and not any((params.top, params.bottom, params.left, params.right)):
                ctx.notes.append("Every margin is 0: the pages are unchanged.")
            save_pdf(doc, ctx.output_path(stem_of(source), "pdf"))
        finally:
            doc.close()


# --------------------------------------------------------------------------- pdf-scale

class ScaleParams(CamelParams):
    size: Literal["A4", "Letter", "Legal", "A3", "A5", "custom"] = Field(
        "A4", description="The paper size every page gets; custom: width x height below.",
        title="Paper size",
        json_schema_extra={
            "x-enumLabels": {
                "A4": "A4",
                "Letter": "Letter",
                "Legal": "Legal",
                "A3": "A3",
                "A5": "A5",
                "custom": "Custom",
            },
        },
    )
    width: float | None = Field(None, ge=36, le=14400, description="With size custom: the width in points.")
    height: float | None = Field(None, ge=36, le=14400, description="With size custom: the height in points.")
    orientation: Literal["auto", "portrait", "landscape"] = Field(
        "auto", description="auto: each page keeps its own orientation (a landscape page gets a landscape sheet); "
        "portrait or landscape: every page gets that one.",
        json_schema_extra={
            "x-enumLabels": {"auto": "As each page is", "portrait": "Portrait", "landscape": "Landscape"},
        },
    )

    @model_validator(mode="after")
    def _custom_needs_both(self) -> ScaleParams:
        if self.size == "custom" and (self.width is None or self.height is None):
            raise ValueError('size "custom" needs both width and height')
        return self

    def sheet(self) -> tuple[float, float]:
        if self.size == "custom":
            assert self.width is not None and self.height is not None
            return self.width, self.height
        return PAPER[self.size]


class PdfScale(PdfTool):
    """Put every page on one paper size, its content scaled to fit (vectors stay vectors)."""

    id = "pdf-scale"
    title = "Scale PDF pages"
    description = (
        "Resize every page to A4, Letter, Legal, A3, A5 or a custom size, the content scaled to fit and centred."
    )
    params = ScaleParams

    def pages_worked(self, doc: pymupdf.Document, params: Any) -> int | None:
        return int(doc.page_count)

    def convert(self, ctx: Context, source: InputFile, progress: Callable[[float], None]) -> None:
        import pymupdf

        params: ScaleParams = ctx.params
        doc = self.open_checked(ctx, source)
        out = pymupdf.open()
        try:
            for index in range(doc.page_count):
                ctx.check_cancelled()
                page = upright(doc[index])
                if params.orientation == "auto":
                    landscape = page.rect.width > page.rect.height
                else:
                    landscape = params.orientation == "landscape"
                width, height = oriented(params.sheet(), landscape)
                sheet = out.new_page(width=width, height=height)
                show_page(sheet, fit(page.rect.width, page.rect.height, sheet.rect), doc, index)
                progress(0.9 * (index + 1) / doc.page_count)
            copy_metadata(doc, out)
            try:
                out.set_toc(doc.get_toc(simple=True))  # the same pages in the same order
            except (ValueError, RuntimeError):
                ctx.notes.append("The bookmarks could not be carried over.")
            save_pdf(out, ctx.output_path(stem_of(source), "pdf"))
        finally:
            out.close()
            doc.close()


# --------------------------------------------------------------------------- pdf-overlay


class OverlayParams(CamelParams):
    position: Literal["over", "under"] = Field(
        "over", description="over: the stamp is drawn on top of each page; under: behind it, as a background "
        "(hidden where the page paints an opaque background of its own).",
        title="Stamp goes",
        json_schema_extra={
            "x-enumLabels": {"over": "On top", "under": "Behind (as a background)"},
            "x-enumDescriptions": {
                "over": "The stamp is drawn on top of each page.",
                "under": "The stamp goes behind each page, hidden where the page paints an opaque background.",
            },
        },
    )
    mode: Literal["repeat", "first"] = Field(
        "repeat", description="repeat: page n gets the stamp's page n, starting over at the stamp's first page "
        "when it has fewer pages; first: every page gets the stamp's first page.",
        title="Stamp pages",
        json_schema_extra={
            "x-enumLabels": {"repeat": "Page for page", "first": "Its first page everywhere"},
            "x-enumDescriptions": {
                "repeat": "Page n gets the stamp's page n, starting over when the stamp has fewer pages.",
                "first": "Every page gets the stamp's first page.",
            },
        },
    )
    pages: PageSpec = pages_field(ALL_PAGES, "Pages of the first PDF to stamp")


def whole(params: OverlayParams) -> OverlayParams:
    """The same params over every page: the stamp PDF is not held to the base PDF's page range."""
    return params.model_copy(update={"pages": ALL_PAGES})


class PdfOverlay(PdfTool):
    """Draw the pages of a second PDF (letterhead, form, stamp) over or under the pages of the first."""

    id = "pdf-overlay"
    title = "Overlay PDFs"
    description = (
        "Lay the pages of a second PDF (a letterhead, a form, a stamp) over or under the pages of the first, "
        "page by page or its first page on every page."
    )
    params = OverlayParams
    merges_inputs = True
    max_inputs = 2

    def pages_worked(self, doc: pymupdf.Document, params: Any) -> int | None:
        return len(page_set(params.pages, doc.page_count))

    def precheck(self, inputs: Sequence[InputFile], params: Any, env: ToolEnv | None = None) -> None:
        check_input_count(self.id, inputs, (2,))
        super().precheck(inputs[:1], params, env)
        super().precheck(inputs[1:], whole(params), env)

    def run(self, ctx: Context) -> None:
        check_input_count(self.id, ctx.inputs, (2,))
        params: OverlayParams = ctx.params
        first, second = ctx.inputs
        base = self.open_checked(ctx, first)
        try:
            stamp = self.open_checked(dataclasses.replace(ctx, params=whole(params)), second)
        except BaseException:
            base.close()
            raise
        try:
            chosen = sorted(page_set(params.pages, base.page_count))
            on_top = OnTop(base)
            for done, index in enumerate(chosen, start=1):
                ctx.check_cancelled()
                page = base[index]
                number = 0 if params.mode == "first" else index % stamp.page_count
                upright(stamp[number])
                # show_pdf_page places in unrotated page space: turn the stamp with the page so it reads upright
                target = page.rect * page.derotation_matrix
                show_page(page, target, stamp, number, overlay=False, rotate=page.rotation)
                if params.position == "over":
                    on_top.move(page)
                ctx.progress(0.9 * done / len(chosen))
            save_pdf(base, ctx.output_path(stem_of(first), "pdf"))
        finally:
            stamp.close()
            base.close()
        ctx.progress(1.0)


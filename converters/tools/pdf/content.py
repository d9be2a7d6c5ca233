# PyMuPDF annotates only part of its API; calls into the rest are untyped by no fault of ours.
# mypy: disable-error-code="no-untyped-call"
"""PDF tools that change what is drawn on the pages: remove blank pages, flatten, remove annotations.

``rasterise`` (pages as pictures) is shared with pdf-grayscale."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from converters.base import CamelParams, Context, ConversionError, InputFile, ToolEnv
from converters.engines.mupdf import check_render_size, save_pdf
from converters.inputs.limits import pixel_limit
from converters.inputs.pages import ALL_PAGES, page_set
from converters.tools.pdf.common import PageSpec, PdfTool, pages_field, stem_of
from converters.tools.pdf.pages import KEPT_METADATA

if TYPE_CHECKING:
    import pymupdf


def describe_pages(indexes: Iterable[int]) -> str:
    """``[1, 4, 5, 6]`` (0-based) -> ``"2, 5-7"``."""
    runs: list[list[int]] = []
    for index in sorted(indexes):
        if runs and index == runs[-1][-1] + 1:
            runs[-1].append(index)
        else:
            runs.append([index])
    return ", ".join(str(run[0] + 1) if len(run) == 1 else f"{run[0] + 1}-{run[-1] + 1}" for run in runs)


def check_pages_render(doc: pymupdf.Document, dpi: float, env: ToolEnv | None) -> None:
    """Refuse (``input_too_large``) a job whose pages would render above the pixel limit at ``dpi``."""
    limit = pixel_limit(env)
    for index in range(doc.page_count):
        check_render_size(doc[index], dpi, limit)


def rasterise(ctx: Context, doc: pymupdf.Document, dpi: int, gray: bool,
              progress: Callable[[float], None]) -> pymupdf.Document:
    """A new PDF whose pages are pictures of ``doc``'s pages as shown (annotations and form fields drawn in),
    the same size, with the links, bookmarks and document information kept."""
    import pymupdf

    limit = pixel_limit(ctx.env)
    out = pymupdf.open()
    try:
        links: list[list[dict[str, Any]]] = []
        for index in range(doc.page_count):
            ctx.check_cancelled()
            page = doc[index]
            check_render_size(page, dpi, limit)
            pix = page.get_pixmap(dpi=dpi, colorspace=pymupdf.csGRAY if gray else pymupdf.csRGB, alpha=False)
            shown = page.rect
            out.new_page(width=shown.width, height=shown.height).insert_image(shown, pixmap=pix)
            del pix
            links.append([{k: v for k, v in link.items() if k not in ("xref", "id")} for link in page.get_links()])
            progress(0.9 * (index + 1) / doc.page_count)
        # Links go in once every page exists: a link may point to a later page.
        for index, page_links in enumerate(links):
            for link in page_links:
                try:
                    out[index].insert_link(link)
                except (RuntimeError, ValueError, KeyError):
                    pass  # a link MuPDF cannot write back (e.g. to a missing page) is dropped
        try:
            out.set_toc(doc.get_toc(simple=True))
        except (RuntimeError, ValueError):
            ctx.notes.append("The bookmarks could not be carried over (their levels are inconsistent).")
        out.set_metadata({key: (doc.metadata or {}).get(key) or "" for key in KEPT_METADATA})
    except BaseException:
        out.close()
        raise
    return out


DPI_FIELD_DESCRIPTION = 'With mode "image": resolution of the page images, in dots per inch.'
IMAGE_MODE_NOTE = ("The pages are now images: their text can no longer be selected or searched "
                   "(ocr-pdf puts a text layer back).")


# --------------------------------------------------------------------------- pdf-remove-blank-pages

BLANK_DPI = 40  # enough to see a line of text or a smudge; a Letter page is 340 x 440 pixels


class RemoveBlankParams(CamelParams):
    threshold: float = Field(0.5, ge=0, le=100, description="A page without text is blank when at most this "
                                                            "percentage of it is darker than whiteLevel.")
    white_level: int = Field(245, ge=0, le=255, description="Pixels darker than this grey (0 black, 255 white) "
                                                            "count as ink; lighter ones, such as paper tint, as "
                                                            "white.")


def is_blank(page: pymupdf.Page, dark_table: bytes, threshold: float, limit: int) -> bool:
    """Visible text keeps a page. Otherwise it is blank when it draws nothing at all, or when its dark pixels
    (rendered small, in grey) are at most ``threshold`` percent of it."""
    import pymupdf

    log = page.get_bboxlog()
    if any(kind in ("fill-text", "stroke-text") for kind, _ in log):
        return False
    if not log and next(page.annots(), None) is None and page.first_widget is None:
        return True
    shown = page.rect
    # A huge page is looked at more coarsely rather than refused: a blank check needs no detail.
    dpi = min(BLANK_DPI, 72 * math.sqrt(limit / max(shown.width * shown.height, 1.0)))
    pix = page.get_pixmap(dpi=dpi, colorspace=pymupdf.csGRAY, alpha=False)
    dark = pix.samples.translate(dark_table).count(1)
    return dark * 100 <= threshold * pix.width * pix.height


class PdfRemoveBlankPages(PdfTool):
    """Drop the pages that show nothing (or next to nothing): empty pages, blank scans."""

    id = "pdf-remove-blank-pages"
    title = "Remove blank pages"
    description = (
        "Remove empty pages and blank scanned pages. Pages with any visible text are kept; others are blank "
        "when almost nothing on them is darker than the white level."
    )
    params = RemoveBlankParams
    timeout_seconds = 1800.0

    def pages_worked(self, doc: pymupdf.Document, params: Any) -> int | None:
        return int(doc.page_count)

    def convert(self, ctx: Context, source: InputFile, progress: Callable[[float], None]) -> None:
        params: RemoveBlankParams = ctx.params
        limit = pixel_limit(ctx.env)
        dark_table = bytes(1 if value < params.white_level else 0 for value in range(256))  # grey -> is it ink
        doc = self.open_checked(ctx, source)
        try:
            blank = []
            for index in range(doc.page_count):
                ctx.check_cancelled()
                if is_blank(doc[index], dark_table, params.threshold, limit):
                    blank.append(index)
                progress(0.9 * (index + 1) / doc.page_count)
            if len(blank) == doc.page_count:
                ctx.notes.append(f"{source.name}: every page is blank; page 1 is kept, as a PDF needs one page.")
                blank = blank[1:]
            if blank:
                ctx.notes.append(f"{source.name}: removed {len(blank)} blank page{'s' if len(blank) != 1 else ''}"
                                 f" ({describe_pages(blank)}).")
                doomed = set(blank)
                doc.select([index for index in range(doc.page_count) if index not in doomed])
            else:
                ctx.notes.append(f"{source.name}: no blank pages found.")
            save_pdf(doc, ctx.output_path(stem_of(source), "pdf"))
        finally:
            doc.close()
        progress(1.0)


# --------------------------------------------------------------------------- pdf-flatten


class FlattenParams(CamelParams):
    mode: Literal["vector", "image"] = Field(
        "vector", description="vector: draw fields and annotations into the page content, text stays text; "
        "image: turn every page into a picture of itself (nothing can be edited or selected any more).",
        title="Flatten",
        json_schema_extra={
            "x-enumLabels": {"vector": "Into the page (text stays text)", "image": "Into pictures of the pages"},
            "x-enumDescriptions": {
                "vector": "Fields and annotations are drawn into the page content; text stays text.",
                "image": "Every page becomes a picture of itself; nothing can be edited or selected any more.",
            },
        },
    )
    annotations: bool = Field(True, description='Flatten comments, highlights, stamps and other annotations '
                                                '(links stay links). Mode "image" always flattens them.')
    forms: bool = Field(True, description='Flatten form fields: their values become part of the page. '
                                          'Mode "image" always flattens them.')
    dpi: int = Field(150, ge=36, le=600, description=DPI_FIELD_DESCRIPTION)


class PdfFlatten(PdfTool):
    """Make form fields and annotations part of the page, so they can no longer be changed."""

    id = "pdf-flatten"
    title = "Flatten PDF"
    description = (
        "Burn form fields and annotations into the pages so they can no longer be edited, keeping text as "
        'text; or, with mode "image", turn every page into an image.'
    )
    params = FlattenParams
    timeout_seconds = 1800.0

    def pages_worked(self, doc: pymupdf.Document, params: Any) -> int | None:
        return int(doc.page_count)

    def check_document(self, doc: pymupdf.Document, params: Any, env: ToolEnv | None) -> None:
        if params.mode == "image":
            if not (params.annotations and params.forms):
                raise ConversionError("invalid_params", 'Mode "image" flattens annotations and form fields alike; '
                                                        'to keep one kind editable, use mode "vector".')
            check_pages_render(doc, params.dpi, env)
        elif not (params.annotations or params.forms):
            raise ConversionError("invalid_params", "Nothing to flatten: turn on annotations, forms or both.")
        super().check_document(doc, params, env)

    def convert(self, ctx: Context, source: InputFile, progress: Callable[[float], None]) -> None:
        params: FlattenParams = ctx.params
        doc = self.open_checked(ctx, source)
        try:
            if params.mode == "image":
                flat = rasterise(ctx, doc, params.dpi, False, progress)
                try:
                    save_pdf(flat, ctx.output_path(stem_of(source), "pdf"))
                finally:
                    flat.close()
                ctx.notes.append(f"{source.name}: {IMAGE_MODE_NOTE}")
            else:
                annots = widgets = 0
                for index in range(doc.page_count):
                    ctx.check_cancelled()
                    page = doc[index]
                    if params.annotations:
                        annots += len(list(page.annots()))
                    if params.forms:
                        widgets += len(list(page.widgets()))
                    progress(0.5 * (index + 1) / doc.page_count)
                doc.bake(annots=params.annotations, widgets=params.forms)
                progress(0.8)
                if annots or widgets:
                    ctx.notes.append(f"{source.name}: flattened {annots} annotation{'s' if annots != 1 else ''} "
                                     f"and {widgets} form field{'s' if widgets != 1 else ''}.")
                else:
                    ctx.notes.append(f"{source.name}: nothing to flatten (no annotations or form fields).")
                save_pdf(doc, ctx.output_path(stem_of(source), "pdf"))
        finally:
            doc.close()
        progress(1.0)


# --------------------------------------------------------------------------- pdf-remove-annotations


class RemoveAnnotationsParams(CamelParams):
    keep_links: bool = Field(True, description="Keep links (web links and links within the document).")
    keep_forms: bool = Field(True, description="Keep form fields.")
    pages: PageSpec = pages_field(ALL_PAGES, "Pages to clear")


class PdfRemoveAnnotations(PdfTool):
    """Delete comments, highlights, ink, stamps and other annotations; links and form fields are kept by default."""

    id = "pdf-remove-annotations"
    title = "Remove PDF annotations"
    description = (
        "Delete comments, highlights, drawings, stamps and other annotations from all or some pages; "
        "links and form fields stay unless you ask otherwise."
    )
    params = RemoveAnnotationsParams

    def pages_worked(self, doc: pymupdf.Document, params: Any) -> int | None:
        return len(page_set(params.pages, doc.page_count))

    def convert(self, ctx: Context, source: InputFile, progress: Callable[[float], None]) -> None:
        params: RemoveAnnotationsParams = ctx.params
        removed: Counter[str] = Counter()
        doc = self.open_checked(ctx, source)
        try:
            chosen = sorted(page_set(params.pages, doc.page_count))
            for done, index in enumerate(chosen, start=1):
                ctx.check_cancelled()
                clear_page(doc[index], params, removed)
                progress(0.9 * done / len(chosen))
            save_pdf(doc, ctx.output_path(stem_of(source), "pdf"))
        finally:
            doc.close()
        if removed:
            kinds = ", ".join(f"{count} {kind}" for kind, count in sorted(removed.items()))
            ctx.notes.append(f"{source.name}: removed {removed.total()} annotation"
                             f"{'s' if removed.total() != 1 else ''} ({kinds}).")
        else:
            ctx.notes.append(f"{source.name}: no annotations to remove on the pages chosen.")
        progress(1.0)


def clear_page(page: pymupdf.Page, params: RemoveAnnotationsParams, removed: Counter[str]) -> None:
    """Delete the annotations of ``page`` that ``params`` does not keep, counting them by kind in ``removed``."""
    import pymupdf

    # Collected first: deleting while walking the page's list would skip entries. A popup goes with its parent.
    doomed = [annot.xref for annot in page.annots() if annot.type[0] != pymupdf.PDF_ANNOT_POPUP]  # type: ignore[attr-defined]
    for xref in doomed:
        annot = page.load_annot(xref)
        if annot is not None:
            removed[re.sub(r"(?<=[a-z])(?=[A-Z])", " ", annot.type[1]).lower()] += 1  # FreeText -> free text
            page.delete_annot(annot)
    if not params.keep_links:
        for link in page.get_links():
            page.delete_link(link)
            removed["link"] += 1
    if not params.keep_forms:
        for xref in [widget.xref for widget in page.widgets()]:
            widget = page.load_widget(xref)
            if widget is not None:
                page.delete_widget(widget)
                removed["form field"] += 1

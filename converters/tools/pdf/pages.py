# PyMuPDF annotates only part of its API; calls into the rest are untyped by no fault of ours.
# mypy: disable-error-code="no-untyped-call"
"""PDF tools that rearrange pages: merge, split, rotate, extract and delete."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from converters.base import CamelParams, Context, ConversionError, InputFile, ToolEnv
from converters.engines.mupdf import save_pdf
from converters.engines.pictures import IMAGE_FORMATS, precheck_images
from converters.inputs.limits import page_limit
from converters.inputs.pages import ALL_PAGES, describe_group, page_groups, page_set, parse_pages
from converters.tools.pdf.common import PageSpec, PdfTool, pages_field, stem_of
from converters.tools.pdf.render import image_for_pdf, place_image

if TYPE_CHECKING:
    import pymupdf


# --------------------------------------------------------------------------- pdf-merge


class MergeParams(CamelParams):
    bookmarks: bool = Field(
        True, description="Add a bookmark per input file; each file's own bookmarks are kept beneath it."
    )


class PdfMerge(PdfTool):
    """Join PDFs and images into one PDF, in the order the inputs were given."""

    id = "pdf-merge"
    title = "Merge PDFs"
    description = "Combine PDFs (and images, one per page) into a single PDF, in input order."
    accepts = ("pdf",) + tuple(f for f in IMAGE_FORMATS if f != "ico")
    params = MergeParams
    merges_inputs = True
    timeout_seconds = 1800.0

    def pages_worked(self, doc: pymupdf.Document, params: Any) -> int | None:
        return int(doc.page_count)

    def precheck(self, inputs: Sequence[InputFile], params: Any, env: ToolEnv | None = None) -> None:
        super().precheck(inputs, params, env)
        precheck_images(inputs, env)

    def run(self, ctx: Context) -> None:
        import pymupdf

        params: MergeParams = ctx.params
        merged = pymupdf.open()
        limit = page_limit(ctx.env)
        toc: list[list[Any]] = []
        try:
            for number, source in enumerate(ctx.inputs, start=1):
                ctx.check_cancelled()
                first_page = merged.page_count + 1
                if source.format == "pdf":
                    doc = self.open_checked(ctx, source)
                    try:
                        if merged.page_count + doc.page_count > limit:
                            raise ConversionError(
                                "input_too_large",
                                f"The merged PDF would have more than {limit:,} pages "
                                f"({number} of {len(ctx.inputs)} files joined so far).",
                            )
                        own_toc = doc.get_toc(simple=True)
                        merged.insert_pdf(doc)
                    finally:
                        doc.close()
                else:
                    own_toc = []
                    data, size, dpi = image_for_pdf(source, ctx.env)
                    place_image(merged, data, size, dpi, "fit", 0.0)
                toc.append([1, source.name or source.path.name, first_page])
                toc.extend([level + 1, title, page + first_page - 1] for level, title, page in own_toc if page > 0)
                ctx.progress(0.9 * number / len(ctx.inputs))
            if params.bookmarks and len(ctx.inputs) > 1:
                merged.set_toc(toc)
            save_pdf(merged, ctx.output_path(f"{stem_of(ctx.inputs[0])}-merged", "pdf"))
        finally:
            merged.close()
        ctx.progress(1.0)


# --------------------------------------------------------------------------- pdf-split

KEPT_METADATA = ("title", "author", "subject", "keywords", "creator", "producer")


class SplitParams(CamelParams):
    mode: Literal["ranges", "every", "single"] = Field(
        "single",
        description="ranges: one file per comma-separated part of pages; every: a file per N pages; "
        "single: one file per page.",
    )
    pages: PageSpec = pages_field(ALL_PAGES, 'With mode "ranges": one output file per part')
    every: int = Field(1, ge=1, le=10000, description='With mode "every": pages per output file.')


class PdfSplit(PdfTool):
    """Split a PDF into several files (the job result is a ZIP of them)."""

    id = "pdf-split"
    title = "Split PDF"
    description = 'Split a PDF into several files: by ranges ("1-3,5,8-"), every N pages, or one per page.'
    params = SplitParams

    def page_spec(self, params: Any) -> str | None:
        return params.pages if params.mode == "ranges" else None

    def pages_worked(self, doc: pymupdf.Document, params: Any) -> int | None:
        if params.mode == "ranges":
            return sum(len(group) for group in page_groups(params.pages, doc.page_count))
        return int(doc.page_count)

    def convert(self, ctx: Context, source: InputFile, progress: Callable[[float], None]) -> None:
        import pymupdf

        params: SplitParams = ctx.params
        doc = self.open_checked(ctx, source)
        try:
            count = doc.page_count
            if params.mode == "ranges":
                groups = page_groups(params.pages, count)
            else:
                step = 1 if params.mode == "single" else params.every
                groups = [list(range(start, min(start + step, count))) for start in range(0, count, step)]
            for done, group in enumerate(groups, start=1):
                ctx.check_cancelled()
                part = pymupdf.open()
                try:
                    part.insert_pdf(doc, from_page=group[0], to_page=group[-1])
                    part.set_metadata({key: (doc.metadata or {}).get(key) or "" for key in KEPT_METADATA})
                    save_pdf(part, ctx.output_path(f"{stem_of(source)}-p{describe_group(group)}", "pdf"))
                finally:
                    part.close()
                progress(done / len(groups))
        finally:
            doc.close()


# --------------------------------------------------------------------------- pdf-rotate


class RotateParams(CamelParams):
    angle: Literal[90, 180, 270] = Field(90, description="Clockwise turn in degrees, added to each page's rotation.")
    pages: PageSpec = pages_field(ALL_PAGES, "Pages to turn")


class PdfRotate(PdfTool):
    """Turn pages by 90, 180 or 270 degrees (lossless: only the page's /Rotate changes)."""

    id = "pdf-rotate"
    title = "Rotate PDF pages"
    description = "Turn all or some pages clockwise by 90, 180 or 270 degrees."
    params = RotateParams

    def pages_worked(self, doc: pymupdf.Document, params: Any) -> int | None:
        return len(page_set(params.pages, doc.page_count))

    def convert(self, ctx: Context, source: InputFile, progress: Callable[[float], None]) -> None:
        params: RotateParams = ctx.params
        doc = self.open_checked(ctx, source)
        try:
            chosen = sorted(page_set(params.pages, doc.page_count))
            for done, index in enumerate(chosen, start=1):
                ctx.check_cancelled()
                page = doc[index]
                page.set_rotation((page.rotation + params.angle) % 360)
                progress(0.9 * done / len(chosen))
            save_pdf(doc, ctx.output_path(stem_of(source), "pdf"))
        finally:
            doc.close()


# --------------------------------------------------------------------------- pdf-extract-pages / pdf-delete-pages


class ExtractParams(CamelParams):
    pages: PageSpec = pages_field(..., 'Pages to keep, in the order written ("3,1" puts page 3 first)')


class PdfExtractPages(PdfTool):
    """Make a new PDF from chosen pages, in the order written."""

    id = "pdf-extract-pages"
    title = "Extract PDF pages"
    description = 'Keep only the pages you name ("1-3,5,8-"), in the order you name them.'
    params = ExtractParams

    def pages_worked(self, doc: pymupdf.Document, params: Any) -> int | None:
        return len(parse_pages(params.pages, doc.page_count))

    def convert(self, ctx: Context, source: InputFile, progress: Callable[[float], None]) -> None:
        params: ExtractParams = ctx.params
        doc = self.open_checked(ctx, source)
        try:
            doc.select(parse_pages(params.pages, doc.page_count))
            progress(0.5)
            ctx.check_cancelled()
            save_pdf(doc, ctx.output_path(stem_of(source), "pdf"))
        finally:
            doc.close()


class DeleteParams(CamelParams):
    pages: PageSpec = pages_field(..., "Pages to remove")


class PdfDeletePages(PdfTool):
    """Remove chosen pages; at least one page must remain."""

    id = "pdf-delete-pages"
    title = "Delete PDF pages"
    description = 'Remove the pages you name ("2,4-6,10-"); the others keep their order.'
    params = DeleteParams

    def pages_worked(self, doc: pymupdf.Document, params: Any) -> int | None:
        return int(doc.page_count) - len(page_set(params.pages, doc.page_count))  # the pages kept are copied

    def check_document(self, doc: pymupdf.Document, params: Any, env: ToolEnv | None) -> None:
        if len(page_set(params.pages, doc.page_count)) >= doc.page_count:
            raise ConversionError("invalid_pages", "That would delete every page; a PDF needs at least one.")
        self.check_page_limit(doc, params, env)

    def convert(self, ctx: Context, source: InputFile, progress: Callable[[float], None]) -> None:
        params: DeleteParams = ctx.params
        doc = self.open_checked(ctx, source)
        try:
            doomed = page_set(params.pages, doc.page_count)
            doc.select([index for index in range(doc.page_count) if index not in doomed])
            progress(0.5)
            ctx.check_cancelled()
            save_pdf(doc, ctx.output_path(stem_of(source), "pdf"))
        finally:
            doc.close()



# PyMuPDF annotates only part of its API; calls into the rest are untyped by no fault of ours.
# mypy: disable-error-code="no-untyped-call"
"""PDF tools that rearrange pages: merge, split, rotate, extract and delete."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from converters.base import CamelParams, Context, ConversionError, InputFile, ToolEnv, atomic_output
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


def part_of(doc: pymupdf.Document, first: int, last: int) -> pymupdf.Document:
    """A new document of ``doc``'s pages ``first..last`` (0-based), with its title, author and so on."""
    import pymupdf

    part = pymupdf.open()
    part.insert_pdf(doc, from_page=first, to_page=last)
    part.set_metadata({key: (doc.metadata or {}).get(key) or "" for key in KEPT_METADATA})
    return part


def part_bytes(doc: pymupdf.Document, first: int, last: int) -> bytes:
    """Pages ``first..last`` as the PDF file ``save_pdf`` would write."""
    part = part_of(doc, first, last)
    try:
        return bytes(part.tobytes(garbage=3, deflate=True, use_objstms=1))
    finally:
        part.close()


def chapters(doc: pymupdf.Document, level: int, name: str) -> tuple[list[list[int]], list[str]]:
    """The page groups between bookmarks of ``level`` and above, and their titles; pages before the first
    bookmark are a part of their own ("front matter")."""
    starts: dict[int, str] = {}
    for depth, title, page in doc.get_toc(simple=True):
        if depth <= level and page >= 1:
            starts.setdefault(page - 1, title)
    if not starts:
        raise ConversionError("no_bookmarks", f"{name} has no bookmarks{' at level ' + str(level) if level > 1 else ''}"
                                              " to split at; split by ranges instead.")
    if 0 not in starts:
        starts[0] = "front matter"
    firsts = sorted(starts)
    ends = [*firsts[1:], doc.page_count]
    return [list(range(first, end)) for first, end in zip(firsts, ends, strict=True)], [starts[f] for f in firsts]


class SplitParams(CamelParams):
    mode: Literal["ranges", "every", "single", "size", "bookmarks"] = Field(
        "single",
        description="ranges: one file per comma-separated part of pages; every: a file per N pages; "
        "single: one file per page; size: files of at most maxMegabytes each; bookmarks: a file per "
        "bookmark (chapter) down to the bookmark level chosen.",
        title="Split by",
        json_schema_extra={
            "x-enumLabels": {
                "ranges": "Page ranges",
                "every": "Every N pages",
                "single": "Single pages",
                "size": "Parts of a size",
                "bookmarks": "Chapters (bookmarks)",
            },
            "x-enumDescriptions": {
                "ranges": "One file per comma-separated part of the pages below.",
                "every": "A file per N pages.",
                "single": "One file per page.",
                "size": "Files of at most the size below each.",
                "bookmarks": "A file per bookmark (chapter), down to the bookmark level chosen.",
            },
        },
    )
    pages: PageSpec = pages_field(ALL_PAGES, 'With mode "ranges": one output file per part')
    every: int = Field(1, ge=1, le=10000, description='With mode "every": pages per output file.')
    max_megabytes: float = Field(
        10.0, ge=0.1, le=10000, description='With mode "size": the largest a part may be, in MB (10^6 bytes). '
        "A single page larger than that becomes a part of its own.",
    )
    level: int = Field(1, ge=1, le=10, description='With mode "bookmarks": split at bookmarks of this level and '
                                                  "above (1: chapters only).")


class PdfSplit(PdfTool):
    """Split a PDF into several files (the job result is a ZIP of them)."""

    id = "pdf-split"
    title = "Split PDF"
    description = (
        'Split a PDF into several files: by ranges ("1-3,5,8-"), every N pages, one per page, by size in MB, '
        "or at its bookmarks (chapters)."
    )
    params = SplitParams

    def page_spec(self, params: Any) -> str | None:
        return params.pages if params.mode == "ranges" else None

    def pages_worked(self, doc: pymupdf.Document, params: Any) -> int | None:
        if params.mode == "ranges":
            return sum(len(group) for group in page_groups(params.pages, doc.page_count))
        return int(doc.page_count)

    def convert(self, ctx: Context, source: InputFile, progress: Callable[[float], None]) -> None:
        params: SplitParams = ctx.params
        doc = self.open_checked(ctx, source)
        try:
            count = doc.page_count
            names: list[str] | None = None
            if params.mode == "ranges":
                groups = page_groups(params.pages, count)
            elif params.mode == "bookmarks":
                groups, names = chapters(doc, params.level, source.name)
            elif params.mode == "size":
                self.split_by_size(ctx, doc, source, progress)
                return
            else:
                step = 1 if params.mode == "single" else params.every
                groups = [list(range(start, min(start + step, count))) for start in range(0, count, step)]
            for done, group in enumerate(groups, start=1):
                ctx.check_cancelled()
                name = f"{stem_of(source)}-p{describe_group(group)}.pdf"
                if names is not None:
                    title = names[done - 1].replace("/", "_").replace("\\", "_")
                    name = f"{stem_of(source)}-{done:02d}-{title}.pdf"
                part = part_of(doc, group[0], group[-1])
                try:
                    save_pdf(part, ctx.output_path(name, "pdf"))  # the name's own ".pdf" keeps dots in a title
                finally:
                    part.close()
                progress(done / len(groups))
        finally:
            doc.close()

    def split_by_size(self, ctx: Context, doc: pymupdf.Document, source: InputFile,
                      progress: Callable[[float], None]) -> None:
        """Parts as large as fit under the size limit: each part's end is found by doubling, then halving,
        the number of pages, with each candidate written out to measure it (shared fonts and images are
        counted once per part, as they are stored)."""
        limit = int(ctx.params.max_megabytes * 1_000_000)
        count, start = doc.page_count, 0
        while start < count:
            ctx.check_cancelled()
            low, data = start, part_bytes(doc, start, start)
            if len(data) > limit:
                ctx.notes.append(f"Page {start + 1} alone is {len(data) / 1e6:.1f} MB, over the limit: it is a part "
                                 "of its own.")
            else:
                high, step = None, 1
                while high is None and low < count - 1:
                    ctx.check_cancelled()
                    trial = min(low + step, count - 1)
                    candidate = part_bytes(doc, start, trial)
                    if len(candidate) <= limit:
                        low, data, step = trial, candidate, step * 2
                    else:
                        high = trial
                while high is not None and high - low > 1:
                    ctx.check_cancelled()
                    middle = (low + high) // 2
                    candidate = part_bytes(doc, start, middle)
                    if len(candidate) <= limit:
                        low, data = middle, candidate
                    else:
                        high = middle
            group = list(range(start, low + 1))
            with atomic_output(ctx.output_path(f"{stem_of(source)}-p{describe_group(group)}", "pdf")) as tmp:
                tmp.write_bytes(data)
            progress((low + 1) / count)
            start = low + 1


# --------------------------------------------------------------------------- pdf-rotate


class RotateParams(CamelParams):
    angle: Literal[90, 180, 270] = Field(
        90, description="Clockwise turn in degrees, added to each page's rotation.",
        title="Turn",
        json_schema_extra={"x-enumLabels": {"90": "90° clockwise", "180": "180°", "270": "90° anticlockwise"}},
    )
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



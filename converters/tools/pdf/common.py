# PyMuPDF annotates only part of its API; calls into the rest are untyped by no fault of ours.
# mypy: disable-error-code="no-untyped-call"
"""What every PDF tool shares: the ``PdfTool`` base (category, engine, page-range and page-limit checks)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, get_args

from pydantic import AfterValidator, Field

from converters.base import Context, ConversionError, Engine, InputFile, Tool, ToolEnv, safe_stem
from converters.engines.mupdf import PYMUPDF, open_pdf
from converters.inputs.limits import PRECHECK_MAX_BYTES, page_limit
from converters.inputs.pages import PAGE_SPEC_PATTERN, check_page_spec

if TYPE_CHECKING:
    import pymupdf

# A page range field: the pattern lets a form check it as typed, the validator catches "0" and "5-3".
PageSpec = Annotated[str, AfterValidator(check_page_spec)]
REFERENCE = re.compile(r"(\d+)\s+\d+\s+R")


def place_labels(places: Any) -> dict[str, Any]:
    """``x-enumLabels`` for a place on the page, from the ``Literal`` of its values: ``"top-left"`` -> "Top left",
    ``"bottom-center"`` -> "Bottom centre"."""
    return {place: place.replace("-", " ").replace("center", "centre").capitalize() for place in get_args(places)}


def pages_field(default: Any, what: str) -> Any:
    """A ``pages`` field with the page-range pattern in its JSON Schema."""
    return Field(default, pattern=PAGE_SPEC_PATTERN, description=f'{what}, 1-based, e.g. "1-3,5,8-" ("1-" is all).')


def stem_of(source: InputFile) -> str:
    return safe_stem(source.name or source.path.name)


def check_input_count(tool_id: str, inputs: Sequence[InputFile], allowed: Sequence[int]) -> None:
    """Refuse (``invalid_params``) a job with another number of inputs than ``allowed``."""
    if len(inputs) not in allowed:
        wanted = " or ".join(str(n) for n in allowed)
        raise ConversionError("invalid_params", f"{tool_id} takes {wanted} input file{'s' if max(allowed) > 1 else ''}"
                                                f" here; {len(inputs)} were given.")


class PdfTool(Tool):
    """Base of the PDF tools: PyMuPDF, the ``pdf`` category, and job-creation checks."""

    category: ClassVar[str] = "pdf"
    accepts: ClassVar[tuple[str, ...]] = ("pdf",)
    produces: ClassVar[tuple[str, ...]] = ("pdf",)
    engines: ClassVar[tuple[Engine, ...]] = (PYMUPDF,)
    allow_encrypted: ClassVar[bool] = False

    def page_spec(self, params: Any) -> str | None:
        """The page range this job's params name, to check against each document; ``None`` for all pages."""
        spec = getattr(params, "pages", None)
        return spec if isinstance(spec, str) else None

    def pages_worked(self, doc: pymupdf.Document, params: Any) -> int | None:
        """How many pages this job goes through one by one, held against the page limit.

        ``None`` (the default) for tools whose work does not grow page by page, such as
        reading the metadata or rewriting the file as a whole.
        """
        return None

    def check_document(self, doc: pymupdf.Document, params: Any, env: ToolEnv | None) -> None:
        """Checks of an opened document against the params, run at job creation and again when running."""
        from converters.inputs.pages import page_groups

        spec = self.page_spec(params)
        if spec is not None:
            page_groups(spec, doc.page_count)
        self.check_page_limit(doc, params, env)

    def check_page_limit(self, doc: pymupdf.Document, params: Any, env: ToolEnv | None) -> None:
        """Refuse (``input_too_large``) a job that would go through more pages than the limit."""
        worked = self.pages_worked(doc, params)
        limit = page_limit(env)
        if worked is not None and worked > limit:
            raise ConversionError(
                "input_too_large",
                f"The job would go through {worked:,} of the PDF's {doc.page_count:,} pages; the limit is "
                f"{limit:,} page{'s' if limit != 1 else ''}. Take a part out first with pdf-split by ranges.",
            )

    def precheck(self, inputs: Sequence[InputFile], params: Any, env: ToolEnv | None = None) -> None:
        for source in inputs:
            if source.format != "pdf" or source.path.stat().st_size > PRECHECK_MAX_BYTES:
                continue
            doc = open_pdf(source.path, allow_encrypted=self.allow_encrypted)
            try:
                if not doc.needs_pass:
                    self.check_document(doc, params, env)
            finally:
                doc.close()

    def open_checked(self, ctx: Context, source: InputFile) -> pymupdf.Document:
        """Open ``source`` and run :meth:`check_document` on it (the job may have skipped the precheck)."""
        doc = open_pdf(source.path, allow_encrypted=self.allow_encrypted)
        if doc.is_repaired:
            ctx.notes.append(f"{source.name}: the file was damaged and has been repaired; check the result.")
        if not doc.needs_pass:
            try:
                self.check_document(doc, ctx.params, ctx.env)
            except BaseException:
                doc.close()
                raise
        return doc



# --------------------------------------------------------------------------- drawing on pages without reading them


def content_xrefs(doc: pymupdf.Document, page: pymupdf.Page) -> list[int]:
    """The xrefs of the page's content streams, in order, read from /Contents without decompressing them."""
    kind, value = doc.xref_get_key(page.xref, "Contents")
    refs = [int(number) for number in REFERENCE.findall(value)] if kind in ("array", "xref") else []
    if kind == "xref" and refs and not doc.xref_is_stream(refs[0]):  # an indirect array of streams
        refs = [int(number) for number in REFERENCE.findall(doc.xref_object(refs[0], compressed=True))]
    return refs


def new_stream(doc: pymupdf.Document, data: bytes) -> int:
    xref = doc.get_new_xref()
    doc.update_object(xref, "<<>>")
    doc.update_stream(xref, data)
    return xref


class OnTop:
    """Draw on top of pages without reading their content.

    PyMuPDF's ``overlay=True`` first reads a page's whole content to balance its q/Q, which is what a
    content-stream bomb is made to exhaust. Instead, draw underneath (``overlay=False``, which puts the
    new stream first), then :meth:`move` that stream after the page's own content, which is enclosed in
    a ``q``/``Q`` pair so nothing it leaves behind (a changed coordinate system, colour, clip) affects
    what was added, as qpdf and pikepdf do. The two small streams are shared by every page.
    """

    def __init__(self, doc: pymupdf.Document) -> None:
        self.doc = doc
        self.wrap = (new_stream(doc, b"q\n"), new_stream(doc, b"\nQ\n"))

    def move(self, page: pymupdf.Page) -> None:
        """Move the stream just added underneath ``page``'s content on top of it."""
        added, *own = content_xrefs(self.doc, page)
        order = [self.wrap[0], *own, self.wrap[1], added]
        self.doc.xref_set_key(page.xref, "Contents", "[" + " ".join(f"{xref} 0 R" for xref in order) + "]")


def show_page(sheet: pymupdf.Page, where: pymupdf.Rect, doc: pymupdf.Document, index: int, **options: Any) -> int:
    """``sheet.show_pdf_page``, with MuPDF's compression-bomb check (it decompresses the page's content
    to make a form of it) told as ``unsafe_input``."""
    import pymupdf

    try:
        return int(sheet.show_pdf_page(where, doc, index, **options))
    except pymupdf.mupdf.FzErrorFormat as exc:
        if "compression bomb" not in str(exc):
            raise
        raise ConversionError("unsafe_input", f"Page {index + 1}'s content is a compression bomb: a few "
                                              "kilobytes that expand beyond what MuPDF accepts.") from None

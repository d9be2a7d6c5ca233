# PyMuPDF annotates only part of its API; calls into the rest are untyped by no fault of ours.
# mypy: disable-error-code="no-untyped-call"
"""What a PDF carries besides its pages: the outline (``pdf-outline``) and attached files (``pdf-attachments``).

Both read with output format ``json`` / ``keep`` and write with ``pdf``, as ``pdf-metadata`` does.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import Field, TypeAdapter, ValidationError

from converters.base import CamelParams, Context, ConversionError, InputFile, ToolEnv, atomic_output, safe_stem
from converters.engines.mupdf import save_pdf
from converters.inputs.sniff import MIME_TYPES
from converters.tools.pdf.common import PdfTool, check_input_count, stem_of

if TYPE_CHECKING:
    import pymupdf

MAX_JSON_BYTES = 4 * 1024**2  # an outline of 10 000 entries with long titles fits in 2 MB
MAX_BOOKMARKS = 10_000
MAX_ATTACHMENT_BYTES = 512 * 1024**2  # what one attached file may expand to when extracted or added


def write_json(path: Path, data: Any) -> None:
    with atomic_output(path) as tmp:
        tmp.write_text(json.dumps(data, indent=2, ensure_ascii=False), encoding="utf-8")


def first_is_pdf(tool_id: str, inputs: Sequence[InputFile]) -> None:
    if inputs and inputs[0].format != "pdf":
        raise ConversionError("invalid_params", f"{tool_id}: the first input must be the PDF; "
                                                f"{inputs[0].name} is {inputs[0].format}.")


class PdfAndJson(PdfTool):
    """A tool that takes a PDF and, as an optional second input, a JSON file of what to write into it."""

    accepts = ("pdf", "json")
    merges_inputs = True
    max_inputs = 2
    json_holds: str = "what to write"  # the second input, in the words of an error message

    def precheck(self, inputs: Sequence[InputFile], params: Any, env: ToolEnv | None = None) -> None:
        check_input_count(self.id, inputs, (1, 2))
        first_is_pdf(self.id, inputs)
        if len(inputs) == 2 and inputs[1].format != "json":
            raise ConversionError("invalid_params", f"{self.id}'s second input holds {self.json_holds}, as JSON.")
        super().precheck(inputs[:1], params, env)


# --------------------------------------------------------------------------- pdf-outline


class Bookmark(CamelParams):
    level: int = Field(1, ge=1, le=50, description="Depth in the outline: 1 for a chapter, 2 beneath it ...")
    title: str = Field(..., min_length=1, max_length=1000, description="The text shown in the reader's sidebar.")
    page: int = Field(..., ge=1, le=1_000_000, description="The page it opens, 1-based.")


BOOKMARKS = TypeAdapter(list[Bookmark])


class OutlineParams(CamelParams):
    bookmarks: list[Bookmark] | None = Field(
        None, max_length=MAX_BOOKMARKS,
        description='With output "pdf": the new outline, in reading order (an empty list removes it). '
        "A JSON file given as a second input may hold it instead, in the form the json output has.",
    )


def check_outline(bookmarks: Sequence[Bookmark], page_count: int) -> None:
    """The rules a PDF outline must keep: it starts at level 1, goes down one level at a time, pages exist."""
    previous = 0
    for number, mark in enumerate(bookmarks, start=1):
        if mark.level > previous + 1:
            raise ConversionError("invalid_params", f"Bookmark {number} ({mark.title!r}) is at level {mark.level} "
                                                    f"right after level {previous}: go down one level at a time.")
        if mark.page > page_count:
            raise ConversionError("invalid_pages", f"Bookmark {number} ({mark.title!r}) opens page {mark.page}; "
                                                   f"the document has {page_count} pages.")
        previous = mark.level


def bookmarks_from_file(source: InputFile) -> list[Bookmark]:
    """The outline in a JSON file: a list of bookmarks, or ``{"bookmarks": [...]}`` as the json output is."""
    if source.path.stat().st_size > MAX_JSON_BYTES:
        raise ConversionError("input_too_large", f"{source.name} is larger than an outline needs "
                                                 f"({MAX_JSON_BYTES // 1024**2} MB at most).")
    try:
        data = json.loads(source.path.read_text(encoding="utf-8-sig"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise ConversionError("invalid_params", f"{source.name} is not JSON: {exc}.") from None
    if isinstance(data, dict) and "bookmarks" in data:
        data = data["bookmarks"]
    try:
        marks = BOOKMARKS.validate_python(data)
    except ValidationError as exc:
        problem = exc.errors()[0]
        where = ".".join(str(part) for part in problem["loc"]) or "the top level"
        raise ConversionError("invalid_params", f"{source.name}: {where}: {problem['msg']}.") from None
    if len(marks) > MAX_BOOKMARKS:
        raise ConversionError("invalid_params", f"{source.name} has {len(marks):,} bookmarks; at most "
                                                f"{MAX_BOOKMARKS:,} are taken.")
    return marks


class PdfOutline(PdfAndJson):
    """Read a PDF's bookmarks as JSON, or replace them from JSON."""

    id = "pdf-outline"
    title = "PDF bookmarks"
    description = (
        'Output "json": the bookmarks (outline) as a list of level, title and page. Output "pdf": replace them '
        "with the bookmarks given as a param or in a JSON file added as a second input."
    )
    produces = ("json", "pdf")
    params = OutlineParams
    json_holds = "the outline"

    def run(self, ctx: Context) -> None:
        params: OutlineParams = ctx.params
        self.precheck(ctx.inputs, params, ctx.env)
        source = ctx.inputs[0]
        doc = self.open_checked(ctx, source)
        try:
            if ctx.output_format == "json":
                marks = [{"level": level, "title": title, "page": page if page > 0 else None}
                         for level, title, page in doc.get_toc(simple=True)]
                write_json(ctx.output_path(f"{stem_of(source)}-bookmarks", "json"), {"bookmarks": marks})
            else:
                given = bookmarks_from_file(ctx.inputs[1]) if len(ctx.inputs) == 2 else params.bookmarks
                if given is None:
                    raise ConversionError("invalid_params", 'Give the new bookmarks: the "bookmarks" param or a '
                                                            "JSON file as a second input.")
                check_outline(given, doc.page_count)
                ctx.progress(0.5)
                doc.set_toc([[mark.level, mark.title, mark.page] for mark in given])
                save_pdf(doc, ctx.output_path(stem_of(source), "pdf"))
        finally:
            doc.close()
        ctx.progress(1.0)


# --------------------------------------------------------------------------- pdf-attachments

_SUFFIX = re.compile(r"^[A-Za-z0-9]{1,12}$")


class AttachmentsParams(CamelParams):
    description: str = Field(
        "", max_length=1000, description='With output "pdf": a description stored with each file attached.'
    )


def attachment_name(name: str) -> tuple[str, str]:
    """``(stem, extension)`` for an attached file's own name, both safe as one path component."""
    suffix = Path(name.replace("\\", "/")).suffix.lstrip(".")
    return safe_stem(name), suffix.lower() if _SUFFIX.match(suffix) else "bin"


def attached_files(doc: pymupdf.Document) -> Iterator[tuple[str, int, Any]]:
    """``(name, declared size, read)`` for each file the PDF carries: the document's embedded files, then
    those attached to pages as annotations. ``read()`` gives the bytes."""
    import pymupdf

    for name in doc.embfile_names():
        info = doc.embfile_info(name)
        yield info.get("filename") or name, int(info.get("size") or 0), lambda name=name: doc.embfile_get(name)
    for page in doc.pages():
        for annot in page.annots(types=[pymupdf.PDF_ANNOT_FILE_ATTACHMENT]):  # type: ignore[attr-defined]
            info = annot.file_info
            # the annotation is bound to its page only while the page object lives
            yield (info.get("filename") or "attachment", int(info.get("size") or 0),
                   lambda annot=annot, page=page: annot.get_file())


class PdfAttachments(PdfTool):
    """Take the files attached to a PDF out, or attach files to it."""

    id = "pdf-attachments"
    title = "PDF attachments"
    description = (
        'Output "keep": every file attached to the PDF, each in its own format. Output "pdf": the first input '
        "with the other inputs attached to it."
    )
    accepts = ("pdf",) + tuple(fmt for fmt in MIME_TYPES if fmt != "pdf")
    produces = ("keep", "pdf")
    params = AttachmentsParams
    merges_inputs = True

    def precheck(self, inputs: Sequence[InputFile], params: Any, env: ToolEnv | None = None) -> None:
        first_is_pdf(self.id, inputs)
        for source in inputs[1:]:
            if source.path.stat().st_size > MAX_ATTACHMENT_BYTES:
                raise ConversionError("input_too_large", f"{source.name} is larger than a file FileKiln attaches "
                                                         f"({MAX_ATTACHMENT_BYTES // 1024**2} MB at most).")
        super().precheck(inputs[:1], params, env)

    def run(self, ctx: Context) -> None:
        self.precheck(ctx.inputs, ctx.params, ctx.env)
        if ctx.output_format == "pdf":
            self.attach(ctx)
        else:
            check_input_count(self.id, ctx.inputs, (1,))
            self.extract(ctx)
        ctx.progress(1.0)

    def extract(self, ctx: Context) -> None:
        source = ctx.inputs[0]
        doc = self.open_checked(ctx, source)
        try:
            found = list(attached_files(doc))
            if not found:
                raise ConversionError("no_attachments", f"{source.name} has no attached files.")
            for done, (name, size, read) in enumerate(found, start=1):
                ctx.check_cancelled()
                if size > MAX_ATTACHMENT_BYTES:
                    raise ConversionError("input_too_large", f"The attached file {name!r} is {size / 1024**2:,.0f}"
                                                             f" MB; FileKiln extracts up to "
                                                             f"{MAX_ATTACHMENT_BYTES // 1024**2} MB.")
                data = read()
                stem, ext = attachment_name(name)
                with atomic_output(ctx.output_path(f"{stem}.{ext}", ext)) as tmp:  # dots in the stem stay
                    tmp.write_bytes(data)
                ctx.progress(done / len(found))
        finally:
            doc.close()

    def attach(self, ctx: Context) -> None:
        params: AttachmentsParams = ctx.params
        if len(ctx.inputs) < 2:
            raise ConversionError("invalid_params", 'To attach files, give the PDF first and then the files; for '
                                                    'the files a PDF carries, choose output "keep".')
        doc = self.open_checked(ctx, ctx.inputs[0])
        try:
            taken = set(doc.embfile_names())
            for done, source in enumerate(ctx.inputs[1:], start=1):
                ctx.check_cancelled()
                name, n = source.name or source.path.name, 2
                shown = Path(name.replace("\\", "/")).name
                key = shown
                while key in taken:  # the name tree needs unique names; the file keeps its own
                    key, n = f"{shown} ({n})", n + 1
                taken.add(key)
                doc.embfile_add(key, source.path.read_bytes(), filename=shown, desc=params.description or None)
                ctx.progress(0.9 * done / (len(ctx.inputs) - 1))
            save_pdf(doc, ctx.output_path(stem_of(ctx.inputs[0]), "pdf"))
        finally:
            doc.close()

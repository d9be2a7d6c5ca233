"""Documents: office files, Markdown, HTML and friends to PDF, and between each other.

Two engines. The embedded one, always there after ``pip install``: pandoc (``pypandoc-binary``) and Typst
(``typst``) — see :mod:`converters.engines.pandoc`. LibreOffice, when found, for layout fidelity
on office formats and for the formats only it can read (doc, xls, ppt, ods, odp) — see
:mod:`converters.engines.office`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from converters.base import Context, ConversionError, Engine, InputFile, Params, Tool, ToolEnv, atomic_output, scaled
from converters.engines.mupdf import check_pdf
from converters.engines.office import INSTALL_HINT, OFFICE, office_available, office_convert
from converters.engines.pandoc import (
    PANDOC_ENGINE,
    READERS,
    TYPST_ENGINE,
    WRITERS,
    font_dirs,
    pandoc_available,
    pandoc_to_pdf,
    run_pandoc,
    typst_available,
)
from converters.engines.procs import scratch_dir

# Formats only LibreOffice reads; formats it reads better than pandoc (layout, not just content).
LIBREOFFICE_ONLY = frozenset({"doc", "xls", "ppt", "ods", "odp"})
OFFICE_FORMATS = frozenset({"doc", "docx", "odt", "rtf", "xls", "xlsx", "ods", "csv", "ppt", "pptx", "odp"})
PANDOC_PDF_INPUTS = frozenset({"md", "html", "txt", "rst", "docx", "odt", "rtf", "epub", "csv", "xlsx", "pptx"})
LIBREOFFICE_PDF_INPUTS = OFFICE_FORMATS | {"html", "txt"}

LIBREOFFICE_ENGINE = Engine("LibreOffice", executable="soffice", install_hint=INSTALL_HINT)


def office_needed(fmt: str) -> ConversionError:
    return ConversionError(
        "engine_missing", f"{fmt} files need LibreOffice, which is not installed here. {INSTALL_HINT}"
    )


class PdfPageParams(Params):
    page_size: Literal["a4", "letter", "a5", "legal"] = Field(
        "a4", alias="pageSize",
        description="Paper size of a PDF made by pandoc (LibreOffice keeps the document's own).",
        json_schema_extra={"x-enumLabels": {"a4": "A4", "letter": "Letter", "a5": "A5", "legal": "Legal"}},
    )


class ToPdfParams(PdfPageParams):
    engine: Literal["auto", "libreoffice", "pandoc"] = Field(
        "auto",
        description="auto: LibreOffice for office formats when installed, pandoc + Typst otherwise. "
        "libreoffice: office formats, html and txt only. pandoc: everything but doc, xls, ppt, ods, odp.",
        json_schema_extra={
            "x-enumLabels": {"auto": "Automatic", "libreoffice": "LibreOffice", "pandoc": "Pandoc + Typst"},
        },
    )


def pick_pdf_engine(fmt: str, engine: str, env: ToolEnv | None) -> str:
    """Which engine converts ``fmt`` to PDF: ``libreoffice`` or ``pandoc``; raises when none can."""
    has_office = office_available(env or ToolEnv())
    if engine == "pandoc":
        if fmt not in PANDOC_PDF_INPUTS:
            raise ConversionError("unsupported_format", f"pandoc cannot read {fmt}; use engine libreoffice")
        return "pandoc"
    if engine == "libreoffice":
        if fmt not in LIBREOFFICE_PDF_INPUTS:
            raise ConversionError("unsupported_format", f"LibreOffice cannot read {fmt}; use engine pandoc")
        if not has_office:
            raise office_needed(fmt)
        return "libreoffice"
    if fmt in OFFICE_FORMATS and has_office:
        return "libreoffice"
    if fmt in LIBREOFFICE_ONLY:
        raise office_needed(fmt)
    return "pandoc"


class DocumentToPdf(Tool):
    """Any document to PDF: pandoc + Typst built in, LibreOffice for office formats when installed."""

    id = "document-to-pdf"
    category = "documents"
    title = "Document to PDF"
    description = (
        "Word, OpenDocument, RTF, Excel, PowerPoint, CSV, Markdown, HTML, reStructuredText, EPUB or text to PDF. "
        "Built in: pandoc + Typst (content and structure). LibreOffice, when installed, is used for office "
        "formats (page layout as in the original) and is required for doc, xls, ppt, ods and odp."
    )
    accepts = ("md", "html", "txt", "rst", "docx", "odt", "rtf", "epub", "csv", "xlsx", "pptx",
               "doc", "xls", "ppt", "ods", "odp")
    produces = ("pdf",)
    params = ToPdfParams
    engines = (PANDOC_ENGINE, TYPST_ENGINE)
    resident = (OFFICE,)
    max_input_size_bytes = 500 * 1000**2
    timeout_seconds = 600.0

    def unavailable_reason(self, env: ToolEnv | None = None) -> str | None:
        if pandoc_available(env) and typst_available():
            return None
        if office_available(env or ToolEnv()):
            return None
        return "Neither pandoc + Typst (pip install pypandoc-binary typst) nor LibreOffice is installed."

    def precheck(self, inputs: Sequence[InputFile], params: Any, env: ToolEnv | None = None) -> None:
        for source in inputs:
            pick_pdf_engine(source.format, params.engine, env)

    def convert(self, ctx: Context, source: InputFile, progress: Callable[[float], None]) -> None:
        progress(0.05)
        engine = pick_pdf_engine(source.format, ctx.params.engine, ctx.env)
        with scratch_dir() as work, atomic_output(ctx.output_path(source.name, "pdf"), require_content=True) as part:
            progress(0.1)
            if engine == "libreoffice":
                office_convert(
                    ctx.env, source.path, source.format, part, "pdf", scaled(progress, 0.1, 0.85),
                    ctx.cancelled, font_dirs(ctx.env.settings),
                )
            else:
                ctx.notes.extend(pandoc_to_pdf(
                    ctx.env, source.path, source.format, part, work, scaled(progress, 0.1, 0.85), ctx.cancelled,
                    paper=ctx.params.page_size,
                ))
                if source.format in OFFICE_FORMATS:
                    ctx.notes.append(f"{source.name}: converted by the built-in engine (content, not page layout); "
                                     "install LibreOffice for the original layout")
            progress(0.95)
            check_pdf(part)
        progress(1.0)


class ConvertParams(PdfPageParams):
    """The PDF output goes through ``document-to-pdf``, so ``pageSize`` and the engine choice mean the same there."""

    engine: Literal["auto", "libreoffice", "pandoc"] = Field(
        "auto", description="auto: LibreOffice between office formats (doc, docx, odt, rtf) when installed, "
        "pandoc otherwise.",
        json_schema_extra={"x-enumLabels": {"auto": "Automatic", "libreoffice": "LibreOffice", "pandoc": "Pandoc"}},
    )


TEXT_FORMATS = ("md", "html", "docx", "odt", "rtf", "txt", "rst", "epub")
OFFICE_WRITER = frozenset({"doc", "docx", "odt", "rtf"})


def convert_route(src: str, dst: str, engine: str, env: ToolEnv | None) -> str:
    """How ``src`` becomes ``dst``: ``pandoc``, ``libreoffice``, ``sheets`` or ``pdf2docx``; raises otherwise."""
    if src == dst:
        raise ConversionError("unsupported_conversion", f"The file already is {dst}")
    if src == "pdf":
        if dst != "docx":
            raise ConversionError("unsupported_conversion", "PDF converts to docx only")
        return "pdf2docx"
    if src in ("xlsx", "ods"):
        if dst != "csv":
            raise ConversionError("unsupported_conversion", "Spreadsheets convert to csv only")
        return "sheets"
    if dst not in TEXT_FORMATS:
        raise ConversionError("unsupported_conversion", f"{src} does not convert to {dst}")
    has_office = office_available(env or ToolEnv())
    office_pair = src in OFFICE_WRITER and dst in OFFICE_WRITER
    if src == "doc" or engine == "libreoffice":
        if not office_pair and not (src == "doc" and dst in ("txt", "html")):
            raise ConversionError("unsupported_conversion", f"LibreOffice is not used for {src} to {dst}")
        if not has_office:
            raise office_needed(src)
        return "libreoffice"
    if engine == "auto" and office_pair and has_office:
        return "libreoffice"
    return "pandoc"


class DocumentConvert(Tool):
    """Between document formats; spreadsheets to CSV; PDF to an editable Word document."""

    id = "document-convert"
    category = "documents"
    title = "Convert document"
    description = (
        "Between Markdown, HTML, Word (docx), OpenDocument text, RTF, plain text, reStructuredText and EPUB; "
        "Excel/OpenDocument spreadsheets to CSV (one file per sheet); PDF to docx. Legacy Word (.doc) needs "
        "LibreOffice, which is also used between docx, odt and rtf when installed."
    )
    accepts = ("md", "html", "docx", "odt", "rtf", "txt", "rst", "epub", "xlsx", "ods", "pdf", "doc")
    produces = ("docx", "md", "html", "odt", "rtf", "txt", "rst", "epub", "pdf", "csv")
    params = ConvertParams
    engines = (PANDOC_ENGINE,)
    resident = (OFFICE,)
    max_input_size_bytes = 500 * 1000**2
    timeout_seconds = 900.0

    def convert(self, ctx: Context, source: InputFile, progress: Callable[[float], None]) -> None:
        dst = ctx.output_format
        if dst == "pdf":  # one place makes PDFs
            return DocumentToPdf().convert(ctx, source, progress)
        route = convert_route(source.format, dst, ctx.params.engine, ctx.env)
        progress(0.05)
        if route == "sheets":
            return self._sheets(ctx, source, progress)
        with scratch_dir() as work, atomic_output(ctx.output_path(source.name, dst), require_content=True) as part:
            progress(0.1)
            if route == "pdf2docx":
                from converters.tools.documents.pdf_docx import pdf_to_docx

                pdf_to_docx(source.path, part, scaled(progress, 0.1, 0.85), ctx.check_cancelled)
            elif route == "libreoffice":
                office_convert(ctx.env, source.path, source.format, part, dst, scaled(progress, 0.1, 0.85),
                               ctx.cancelled, font_dirs(ctx.env.settings))
            else:
                self._pandoc(ctx, source, dst, part, work)
            progress(0.95)
        progress(1.0)
        return None

    @staticmethod
    def _pandoc(ctx: Context, source: InputFile, dst: str, part: Path, work: Path) -> None:
        if source.format not in READERS:
            raise ConversionError("unsupported_conversion", f"{source.format} cannot be converted to {dst}")
        writer = {"md": "gfm"}.get(dst, WRITERS[dst])
        ctx.notes.extend(run_pandoc(
            ctx.env, source.path, source.format, writer, part, work, ctx.cancelled,
            title_fallback=Path(source.name).stem if dst == "epub" else None,
            embed_resources=dst == "html", keep_images=dst not in ("md", "rst", "txt"),
        ))

    def _sheets(self, ctx: Context, source: InputFile, progress: Callable[[float], None]) -> None:
        from converters.tools.documents.sheets import read_sheets, write_csv

        sheets = read_sheets(source.path, source.format, ctx.cancelled)
        ctx.check_cancelled()
        progress(0.6)
        stem = Path(source.name).stem
        for i, (name, rows) in enumerate(sheets, start=1):
            out_stem = stem if len(sheets) == 1 else f"{stem}-{name}"
            with atomic_output(ctx.output_path(out_stem, "csv")) as part:
                write_csv(rows, part)
            progress(0.6 + 0.35 * i / len(sheets))
        if len(sheets) > 1:
            ctx.notes.append(f"{source.name}: {len(sheets)} sheets, one CSV each")



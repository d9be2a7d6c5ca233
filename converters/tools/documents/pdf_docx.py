"""PDF to an editable Word document with ``pdf2docx`` (paragraphs, tables, images; one page at a time)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

from converters.base import ConversionError


def pdf_to_docx(
    source: Path, target: Path, progress: Callable[[float], None], check_cancelled: Callable[[], None]
) -> int:
    """Convert ``source`` to ``target``; progress per page (parsing 0..0.7, writing 0.7..1). Returns pages."""
    import pymupdf

    try:
        with pymupdf.open(source) as probe:  # type: ignore[no-untyped-call]
            if probe.needs_pass:
                raise ConversionError("password_protected", "The PDF is password protected; unlock it first")
            if probe.page_count == 0:
                raise ConversionError("damaged_input", "The PDF has no pages")
    except (pymupdf.FileDataError, RuntimeError) as exc:
        raise ConversionError("damaged_input", f"The PDF could not be opened: {exc}") from exc

    root = logging.getLogger()
    level = root.level
    from docx import Document
    from pdf2docx import Converter

    root.setLevel(level)  # pdf2docx turns INFO logging on for the whole process at import
    logging.getLogger("pdf2docx").setLevel(logging.WARNING)

    converter = Converter(str(source))
    try:
        settings = converter.default_settings
        settings.update({"ignore_page_error": True, "multi_processing": False})
        converter.load_pages().parse_document(**settings)
        pages = [page for page in converter.pages if not page.skip_parsing]
        for i, page in enumerate(pages, start=1):
            check_cancelled()
            try:
                page.parse(**settings)
            except Exception as exc:  # pdf2docx's own layout errors: keep the other pages
                logging.getLogger(__name__).warning("page %d not parsed: %s", page.id + 1, exc)
            progress(0.7 * i / len(pages))
        document = Document()
        made = 0
        for i, page in enumerate(pages, start=1):
            check_cancelled()
            if page.finalized:
                page.make_docx(document)
                made += 1
            progress(0.7 + 0.3 * i / len(pages))
        if made == 0:
            raise ConversionError("damaged_input", "No page of the PDF could be converted")
        document.save(str(target))
        return made
    finally:
        converter.close()

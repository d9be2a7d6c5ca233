# PyMuPDF annotates only part of its API; calls into the rest are untyped by no fault of ours.
# mypy: disable-error-code="no-untyped-call"
"""PyMuPDF, opened and saved the way every FileKiln tool needs: clear errors, atomic writes, bounded renders."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from converters.base import ConversionError, Engine, atomic_output
from converters.inputs.limits import too_large

if TYPE_CHECKING:
    import pymupdf

PYMUPDF = Engine(
    name="PyMuPDF", module="pymupdf", distribution="pymupdf", install_hint="Install it with: pip install pymupdf"
)


def _quiet_mupdf() -> None:
    import pymupdf

    # MuPDF prints repair warnings to stderr; we turn failures into ConversionError instead.
    pymupdf.TOOLS.mupdf_display_errors(False)


def open_pdf(path: Path, *, allow_encrypted: bool = False) -> pymupdf.Document:
    """Open a PDF or fail with ``damaged_input`` / ``password_protected``.

    A document whose user password is empty (only an owner password restricting
    permissions) opens as usual: every reader shows it without asking.
    """
    import pymupdf

    _quiet_mupdf()
    try:
        doc = pymupdf.open(path, filetype="pdf")
    except (pymupdf.FileDataError, RuntimeError, ValueError) as exc:
        raise ConversionError("damaged_input", f"The PDF cannot be read: {exc}") from None
    if doc.needs_pass and not allow_encrypted:
        doc.close()
        raise ConversionError(
            "password_protected", "The PDF is password protected. Unlock it first with pdf-unlock."
        )
    if not doc.needs_pass and doc.page_count == 0:
        doc.close()
        raise ConversionError("damaged_input", "The PDF has no pages that can be read.")
    return doc


def save_pdf(doc: pymupdf.Document, path: Path, **options: Any) -> None:
    """Save ``doc`` to ``path`` atomically, dropping unused objects and compressing streams."""
    settings: dict[str, Any] = {"garbage": 3, "deflate": True, "use_objstms": 1}
    settings.update(options)
    with atomic_output(path) as tmp:
        try:
            doc.save(tmp, **settings)
        except (RuntimeError, ValueError) as exc:
            raise ConversionError("damaged_input", f"The PDF could not be written back: {exc}") from None


def check_render_size(page: pymupdf.Page, dpi: float, limit: int) -> None:
    """Refuse to render ``page`` at ``dpi`` when the bitmap would exceed ``limit`` pixels."""
    rect = page.rect
    pixels = (rect.width * dpi / 72) * (rect.height * dpi / 72)
    if pixels > limit:
        raise too_large(f"Page {page.number + 1} at {dpi:g} dpi", pixels, limit)



def check_pdf(path: Path) -> int:
    """The page count of a PDF an engine wrote; a PDF with no pages is a failure."""
    import pymupdf

    try:
        with pymupdf.open(path) as doc:
            pages = doc.page_count
    except (pymupdf.FileDataError, RuntimeError) as exc:
        raise ConversionError("engine_failed", f"The engine wrote a broken PDF: {exc}") from exc
    if pages == 0:
        raise ConversionError("damaged_input", "The document produced no pages")
    return pages


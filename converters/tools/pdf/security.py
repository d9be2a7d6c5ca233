# PyMuPDF annotates only part of its API; calls into the rest are untyped by no fault of ours.
# mypy: disable-error-code="no-untyped-call"
"""PDF tools that guard or label a document: protect, unlock, watermark, metadata."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field, SecretStr

from converters.base import CamelParams, Context, ConversionError, InputFile, atomic_output
from converters.engines.mupdf import open_pdf, save_pdf
from converters.engines.pictures import HEX_COLOUR
from converters.inputs.pages import ALL_PAGES, page_set
from converters.tools.pdf.common import PageSpec, PdfTool, pages_field, place_labels, stem_of

if TYPE_CHECKING:
    import pymupdf

Permission = Literal["print", "printHq", "copy", "modify", "annotate", "forms", "accessibility", "assemble"]
PERMISSION_FLAGS: dict[str, str] = {
    "print": "PDF_PERM_PRINT", "printHq": "PDF_PERM_PRINT_HQ", "copy": "PDF_PERM_COPY",
    "modify": "PDF_PERM_MODIFY", "annotate": "PDF_PERM_ANNOTATE", "forms": "PDF_PERM_FORM",
    "accessibility": "PDF_PERM_ACCESSIBILITY", "assemble": "PDF_PERM_ASSEMBLE",
}
ALL_PERMISSIONS: list[Permission] = list(PERMISSION_FLAGS)  # type: ignore[arg-type]
INFO_KEYS = ("title", "author", "subject", "keywords", "creator", "producer", "creationDate", "modDate")


# --------------------------------------------------------------------------- pdf-protect


class ProtectParams(CamelParams):
    user_password: SecretStr = Field(..., min_length=1, max_length=127, description="Password needed to open the PDF.")
    owner_password: SecretStr | None = Field(
        None,
        min_length=1,
        max_length=127,
        description="Password that lifts the restrictions (default: the user password).",
    )
    permissions: list[Permission] = Field(
        list(ALL_PERMISSIONS),  # pydantic copies mutable defaults per instance
        description="What someone who opens the PDF with the user password may do.",
        title="Allowed",
        json_schema_extra={
            "x-enumLabels": {
                "print": "Print",
                "printHq": "Print in high quality",
                "copy": "Copy text and pictures",
                "modify": "Change the content",
                "annotate": "Add comments",
                "forms": "Fill in forms",
                "accessibility": "Extract for accessibility",
                "assemble": "Insert, turn and delete pages",
            },
        },
    )


class PdfProtect(PdfTool):
    """Encrypt a PDF with AES-256 and a password."""

    id = "pdf-protect"
    title = "Protect PDF"
    description = "Encrypt a PDF with AES-256 so it needs a password to open; optionally restrict what readers may do."
    params = ProtectParams

    def convert(self, ctx: Context, source: InputFile, progress: Callable[[float], None]) -> None:
        import pymupdf

        params: ProtectParams = ctx.params
        flags = 0
        for name in params.permissions:
            flags |= int(getattr(pymupdf, PERMISSION_FLAGS[name]))
        doc = self.open_checked(ctx, source)
        try:
            progress(0.3)
            save_pdf(
                doc,
                ctx.output_path(stem_of(source), "pdf"),
                encryption=pymupdf.PDF_ENCRYPT_AES_256,  # type: ignore[attr-defined]
                user_pw=params.user_password.get_secret_value(),
                owner_pw=(params.owner_password or params.user_password).get_secret_value(),
                permissions=flags,
            )
        finally:
            doc.close()
        progress(1.0)


# --------------------------------------------------------------------------- pdf-unlock


class UnlockParams(CamelParams):
    password: SecretStr = Field(..., max_length=127, description="The PDF's user or owner password.")


class PdfUnlock(PdfTool):
    """Remove the password and restrictions from a PDF whose password you know."""

    id = "pdf-unlock"
    title = "Unlock PDF"
    description = "Remove the password (and printing/copying restrictions) from a PDF, given its password."
    params = UnlockParams
    allow_encrypted = True

    def convert(self, ctx: Context, source: InputFile, progress: Callable[[float], None]) -> None:
        import pymupdf

        params: UnlockParams = ctx.params
        doc = open_pdf(source.path, allow_encrypted=True)
        try:
            if doc.needs_pass:
                if not doc.authenticate(params.password.get_secret_value()):
                    raise ConversionError("wrong_password", "The password is wrong: the PDF could not be decrypted.")
                if doc.page_count == 0:
                    raise ConversionError("damaged_input", "The PDF has no pages that can be read.")
            elif not (doc.metadata or {}).get("encryption"):
                ctx.notes.append(f"{source.name}: the PDF was not encrypted; it is returned unchanged in content.")
            progress(0.3)
            save_pdf(doc, ctx.output_path(stem_of(source), "pdf"), encryption=pymupdf.PDF_ENCRYPT_NONE)  # type: ignore[attr-defined]
        finally:
            doc.close()
        progress(1.0)


# --------------------------------------------------------------------------- pdf-watermark

Position = Literal["center", "top-left", "top", "top-right", "left", "right", "bottom-left", "bottom", "bottom-right"]


class WatermarkParams(CamelParams):
    text: str = Field(..., min_length=1, max_length=200, description="The watermark text.")
    opacity: float = Field(0.3, ge=0.05, le=1.0, description="0.05 (faint) to 1 (solid).")
    font_size: float = Field(48, ge=4, le=400, description="Font size in points.")
    rotation: float = Field(45, ge=-180, le=180, description="Counter-clockwise angle of the text, in degrees.")
    position: Position = Field(
        "center", description="Where on the page the text sits.",
        json_schema_extra={"x-enumLabels": place_labels(Position)},
    )
    color: str = Field("#808080", pattern=HEX_COLOUR, description="Text colour as #rrggbb.")
    pages: PageSpec = pages_field(ALL_PAGES, "Pages to mark")


def _rgb(colour: str) -> tuple[float, float, float]:
    digits = colour.lstrip("#")
    if len(digits) == 3:
        digits = "".join(c * 2 for c in digits)
    return (int(digits[0:2], 16) / 255, int(digits[2:4], 16) / 255, int(digits[4:6], 16) / 255)


def _font_for(text: str) -> pymupdf.Font:
    """Helvetica when it has every glyph; else MuPDF's built-in CJK-capable fallback."""
    import pymupdf

    font = pymupdf.Font("helv")
    if all(font.has_glyph(ord(c)) for c in text if not c.isspace()):
        return font
    return pymupdf.Font("cjk")


def stamp(page: pymupdf.Page, text: str, font: pymupdf.Font, params: WatermarkParams) -> None:
    """Write ``text`` on ``page`` as the reader sees it, whatever the page's own /Rotate."""
    import pymupdf

    size = params.font_size
    width, height = font.text_length(text, size), size * (font.ascender - font.descender)
    angle = math.radians(params.rotation)
    box_w = abs(width * math.cos(angle)) + abs(height * math.sin(angle))
    box_h = abs(width * math.sin(angle)) + abs(height * math.cos(angle))
    shown = page.rect  # the page as displayed, after its rotation
    margin = 0.04 * min(shown.width, shown.height)
    where = params.position
    vertical = "top" if where.startswith("top") else "bottom" if where.startswith("bottom") else "middle"
    horizontal = "left" if where.endswith("left") else "right" if where.endswith("right") else "middle"
    x = {"left": margin + box_w / 2, "right": shown.width - margin - box_w / 2}.get(horizontal, shown.width / 2)
    y = {"top": margin + box_h / 2, "bottom": shown.height - margin - box_h / 2}.get(vertical, shown.height / 2)
    centre = pymupdf.Point(x, y) * page.derotation_matrix
    baseline = pymupdf.Point(centre.x - width / 2, centre.y + size * (font.ascender + font.descender) / 2)
    writer = pymupdf.TextWriter(page.rect)
    writer.append(baseline, text, font=font, fontsize=size)
    # In unrotated page space a displayed turn of θ is θ plus the page's own rotation.
    writer.write_text(
        page,
        color=_rgb(params.color),
        opacity=params.opacity,
        morph=(centre, pymupdf.Matrix(params.rotation + page.rotation)),
        overlay=True,
    )


class PdfWatermark(PdfTool):
    """Stamp a line of text on pages, as selectable (and searchable) text."""

    id = "pdf-watermark"
    title = "Watermark PDF"
    description = "Stamp a text watermark on all or some pages: opacity, size, angle, position and colour."
    params = WatermarkParams

    def pages_worked(self, doc: pymupdf.Document, params: Any) -> int | None:
        return len(page_set(params.pages, doc.page_count))

    def convert(self, ctx: Context, source: InputFile, progress: Callable[[float], None]) -> None:
        params: WatermarkParams = ctx.params
        font = _font_for(params.text)
        doc = self.open_checked(ctx, source)
        try:
            chosen = sorted(page_set(params.pages, doc.page_count))
            for done, index in enumerate(chosen, start=1):
                ctx.check_cancelled()
                stamp(doc[index], params.text, font, params)
                progress(0.9 * done / len(chosen))
            save_pdf(doc, ctx.output_path(stem_of(source), "pdf"))
        finally:
            doc.close()


# --------------------------------------------------------------------------- pdf-metadata


class MetadataParams(CamelParams):
    title: str | None = Field(None, max_length=2000, description="New title; leave out to keep the current one.")
    author: str | None = Field(None, max_length=2000, description="New author.")
    subject: str | None = Field(None, max_length=2000, description="New subject.")
    keywords: str | None = Field(None, max_length=2000, description="New keywords, comma-separated.")

    def changes(self) -> dict[str, str]:
        values = {"title": self.title, "author": self.author, "subject": self.subject, "keywords": self.keywords}
        return {key: value for key, value in values.items() if value is not None}


class PdfMetadata(PdfTool):
    """Read a PDF's document information as JSON, or set title, author, subject and keywords."""

    id = "pdf-metadata"
    title = "PDF metadata"
    description = (
        "Without values: read the title, author, subject, keywords, dates and page count as JSON. "
        "With any of title, author, subject, keywords: write them into the PDF."
    )
    produces = ("json", "pdf")
    params = MetadataParams

    def convert(self, ctx: Context, source: InputFile, progress: Callable[[float], None]) -> None:
        params: MetadataParams = ctx.params
        changes = params.changes()
        doc = self.open_checked(ctx, source)
        try:
            metadata: dict[str, str] = doc.metadata or {}
            if changes or ctx.output_format == "pdf":
                info = {key: metadata.get(key) or "" for key in INFO_KEYS} | changes
                doc.set_metadata(info)
                if changes and doc.get_xml_metadata():
                    # Readers prefer XMP over the info dictionary: a stale XMP title would win.
                    doc.del_xml_metadata()
                save_pdf(doc, ctx.output_path(stem_of(source), "pdf"))
            else:
                report = {key: metadata.get(key) or "" for key in INFO_KEYS} | {
                    "pageCount": doc.page_count,
                    "pdfVersion": (metadata.get("format") or "").removeprefix("PDF ").strip(),
                    "encryption": metadata.get("encryption") or None,
                }
                target = ctx.output_path(stem_of(source), "json")
                with atomic_output(target) as tmp:
                    tmp.write_text(json.dumps(report, indent=2, ensure_ascii=False), encoding="utf-8")
        finally:
            doc.close()
        progress(1.0)



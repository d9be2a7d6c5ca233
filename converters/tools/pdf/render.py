# PyMuPDF annotates only part of its API; calls into the rest are untyped by no fault of ours.
# mypy: disable-error-code="no-untyped-call"
"""PDF tools that cross between pages and pixels or text: pdf-to-image, image-to-pdf, pdf-to-text."""

from __future__ import annotations

import io
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

import converters
from converters.base import CamelParams, Context, ConversionError, InputFile, Tool, ToolEnv, atomic_output
from converters.engines.mupdf import PYMUPDF, check_render_size, save_pdf
from converters.engines.pictures import IMAGE_FORMATS, PILLOW, has_alpha, load_picture, open_image, precheck_images
from converters.inputs.limits import pixel_limit
from converters.inputs.pages import ALL_PAGES, parse_pages
from converters.tools.pdf.common import PageSpec, PdfTool, pages_field, stem_of

if TYPE_CHECKING:
    import pymupdf

PAGE_SIZES = {"a4": (595.28, 841.89), "letter": (612.0, 792.0)}
DEFAULT_IMAGE_DPI = 96.0  # how big a "fit" page is for an image that does not say its resolution
PASSTHROUGH = frozenset({"jpg", "png"})  # embedded byte for byte (MuPDF reads them natively)


def image_for_pdf(source: InputFile, env: ToolEnv | None) -> tuple[bytes, tuple[int, int], float]:
    """The bytes to embed for an image input, its upright pixel size and its resolution in dpi.

    JPEG and PNG go in unchanged (no generation loss) unless EXIF asks for a
    rotation MuPDF would ignore; other formats are decoded once and embedded as
    JPEG (photos from lossy formats) or PNG (anything with alpha or from a lossless format).
    """
    image = open_image(source.path, source.format, pixel_limit(env))
    try:
        orientation = image.getexif().get(0x0112, 1)
        raw_dpi = image.info.get("dpi", (0, 0))
        dpi = float(raw_dpi[0]) if raw_dpi and 30 <= float(raw_dpi[0]) <= 2400 else DEFAULT_IMAGE_DPI
        size = image.size
        frames = getattr(image, "n_frames", 1)
    finally:
        image.close()
    if source.format in PASSTHROUGH and orientation == 1 and frames == 1:
        return source.path.read_bytes(), size, dpi
    picture = load_picture(source.path, source.format, env, all_frames=False)
    frame = picture.frames[0]
    buffer = io.BytesIO()
    if source.format in ("webp", "avif", "heic", "jpg") and not has_alpha(frame):
        frame.convert("RGB" if frame.mode != "L" else "L").save(buffer, "JPEG", quality=92)
    else:
        frame.save(buffer, "PNG", compress_level=6)
    return buffer.getvalue(), frame.size, dpi


def place_image(
    doc: pymupdf.Document, data: bytes, size: tuple[int, int], dpi: float, page_size: str, margin: float
) -> None:
    """Append one page showing the image: the image's own size (``fit``) or scaled into A4/Letter."""
    import pymupdf

    width_pt, height_pt = size[0] * 72 / dpi, size[1] * 72 / dpi
    if page_size == "fit":
        page = doc.new_page(width=width_pt + 2 * margin, height=height_pt + 2 * margin)
    else:
        short, long = PAGE_SIZES[page_size]
        landscape = size[0] > size[1]  # the page turns with the picture, as printers' "auto" does
        page = doc.new_page(width=long if landscape else short, height=short if landscape else long)
    box = pymupdf.Rect(margin, margin, page.rect.width - margin, page.rect.height - margin)
    if box.is_empty:
        raise ConversionError("invalid_params", f"A margin of {margin:g} pt leaves no room on the page.")
    page.insert_image(box, stream=data, keep_proportion=True)


# --------------------------------------------------------------------------- image-to-pdf


class ImageToPdfParams(CamelParams):
    page_size: Literal["a4", "letter", "fit"] = Field(
        "a4", description="Page size: A4 or Letter (turned to suit each image), or fit each page to its image.",
        json_schema_extra={"x-enumLabels": {"a4": "A4", "letter": "Letter", "fit": "Fit each image"}},
    )
    margin: float = Field(0.0, ge=0, le=144, description="Blank border around each image, in points (1/72 inch).")


class ImageToPdf(Tool):
    """Make one PDF from all the input images, one image per page, in input order."""

    id = "image-to-pdf"
    category = "pdf"
    title = "Images to PDF"
    description = "Put images into one PDF, one per page, in the order given."
    accepts = tuple(f for f in IMAGE_FORMATS if f != "ico")
    produces = ("pdf",)
    params = ImageToPdfParams
    engines = (PYMUPDF, PILLOW)
    merges_inputs = True

    def precheck(self, inputs: Sequence[InputFile], params: Any, env: ToolEnv | None = None) -> None:
        precheck_images(inputs, env)

    def run(self, ctx: Context) -> None:
        import pymupdf

        params: ImageToPdfParams = ctx.params
        doc = pymupdf.open()
        try:
            for number, source in enumerate(ctx.inputs, start=1):
                ctx.check_cancelled()
                data, size, dpi = image_for_pdf(source, ctx.env)
                place_image(doc, data, size, dpi, params.page_size, params.margin)
                ctx.progress(0.9 * number / len(ctx.inputs))
            save_pdf(doc, ctx.output_path(stem_of(ctx.inputs[0]), "pdf"))
        finally:
            doc.close()
        ctx.progress(1.0)


# --------------------------------------------------------------------------- pdf-to-image


class PdfToImageParams(CamelParams):
    dpi: int = Field(150, ge=36, le=600, description="Resolution of the images, in dots per inch.")
    pages: PageSpec = pages_field(ALL_PAGES, "Pages to render")
    quality: int = Field(90, ge=1, le=100, description="Quality of jpg and webp images, 1-100.")


class PdfToImage(PdfTool):
    """Render pages as images, one file per page."""

    id = "pdf-to-image"
    title = "PDF to images"
    description = "Render each page (or the pages chosen) as a PNG, JPEG or WebP image."
    produces = ("png", "jpg", "webp")
    params = PdfToImageParams
    engines = (PYMUPDF, PILLOW)
    timeout_seconds = 1800.0

    def pages_worked(self, doc: pymupdf.Document, params: Any) -> int | None:
        return len(parse_pages(params.pages, doc.page_count))  # one image file per page named

    def check_document(self, doc: pymupdf.Document, params: Any, env: ToolEnv | None) -> None:
        super().check_document(doc, params, env)
        limit = pixel_limit(env)
        for index in sorted(set(parse_pages(params.pages, doc.page_count))):
            check_render_size(doc[index], params.dpi, limit)

    def convert(self, ctx: Context, source: InputFile, progress: Callable[[float], None]) -> None:
        from PIL import Image

        params: PdfToImageParams = ctx.params
        fmt = ctx.output_format
        doc = self.open_checked(ctx, source)
        try:
            indexes = parse_pages(params.pages, doc.page_count)
            width = len(str(doc.page_count))
            for done, index in enumerate(indexes, start=1):
                ctx.check_cancelled()
                pix = doc[index].get_pixmap(dpi=params.dpi, alpha=False)
                target = ctx.output_path(f"{stem_of(source)}-p{index + 1:0{width}d}", fmt)
                with atomic_output(target) as tmp:
                    if fmt == "png":
                        pix.save(tmp, output="png")
                    else:
                        image = Image.frombytes("RGB", (pix.width, pix.height), pix.samples)
                        options: dict[str, Any] = {"quality": params.quality}
                        image.save(tmp, "JPEG" if fmt == "jpg" else "WEBP", dpi=(params.dpi, params.dpi), **options)
                del pix
                progress(done / len(indexes))
        finally:
            doc.close()


# --------------------------------------------------------------------------- pdf-to-text


class PdfToTextParams(CamelParams):
    pages: PageSpec = pages_field(ALL_PAGES, "Pages to read")


class PdfToText(PdfTool):
    """Extract the text layer: plain text, or structure-aware Markdown (headings, lists, tables)."""

    id = "pdf-to-text"
    title = "PDF to text"
    description = (
        "Extract the text of a PDF as plain text, or as Markdown that keeps headings, lists and tables "
        "(handy for feeding language models). Scanned pages without a text layer need OCR first."
    )
    produces = ("txt", "md")
    params = PdfToTextParams
    timeout_seconds = 1800.0  # the Markdown layout analysis takes a while on long documents

    def pages_worked(self, doc: pymupdf.Document, params: Any) -> int | None:
        return len(parse_pages(params.pages, doc.page_count))

    def convert(self, ctx: Context, source: InputFile, progress: Callable[[float], None]) -> None:
        params: PdfToTextParams = ctx.params
        fmt = ctx.output_format
        doc = self.open_checked(ctx, source)
        try:
            indexes = parse_pages(params.pages, doc.page_count)
            chunks = _markdown(ctx, doc, indexes, progress) if fmt == "md" else _plain(ctx, doc, indexes, progress)
        finally:
            doc.close()
        text = ("\f" if fmt == "txt" else "\n\n").join(chunks)
        if not text.strip():
            ctx.notes.append(f"{source.name}: no text layer found; scanned pages need OCR (ocr-pdf) first.")
        target = ctx.output_path(stem_of(source), fmt)
        with atomic_output(target) as tmp:
            tmp.write_text(text, encoding="utf-8")


def _plain(ctx: Context, doc: pymupdf.Document, indexes: Sequence[int], progress: Callable[[float], None]) -> list[str]:
    """Page texts in reading order; pages are joined with form feeds, as pdftotext does."""
    chunks = []
    for done, index in enumerate(indexes, start=1):
        ctx.check_cancelled()
        chunks.append(doc[index].get_text("text", sort=True).rstrip() + "\n")
        progress(done / len(indexes))
    return chunks


def _markdown(
    ctx: Context, doc: pymupdf.Document, indexes: Sequence[int], progress: Callable[[float], None]
) -> list[str]:
    """Markdown per page through pymupdf4llm; one page at a time for progress and cancellation."""
    try:
        llm = converters.pymupdf4llm()
    except ImportError:
        raise ConversionError("engine_missing", "Markdown output needs pymupdf4llm: pip install pymupdf4llm") from None
    chunks = []
    for done, index in enumerate(indexes, start=1):
        ctx.check_cancelled()
        # OCR belongs to the ocr tools; here a page without a text layer simply yields nothing.
        chunks.append(llm.to_markdown(doc, pages=[index], use_ocr=False, show_progress=False).strip())
        progress(done / len(indexes))
    return chunks



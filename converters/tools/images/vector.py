# PyMuPDF annotates only part of its API; calls into the rest are untyped by no fault of ours.
# mypy: disable-error-code="no-untyped-call"
"""``vector-convert``: SVG, EMF and WMF to PDF, PNG or WebP (and the metafiles to SVG); a PDF page to SVG;
pictures traced to SVG.

Every SVG is sanitised before a renderer sees it (:mod:`converters.engines.vectors`), and an SVG output
made from an SVG is that sanitised copy, so this tool also strips an SVG of what points outside it.
Windows metafiles are drawn by LibreOffice when it is installed (:mod:`converters.engines.metafiles`);
without it they are refused with ``engine_missing`` and the tool stays available for everything else.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Sequence
from typing import Any, Literal

from pydantic import Field

from converters.base import CamelParams, Context, ConversionError, InputFile, Tool, ToolEnv, atomic_output, scaled
from converters.engines import metafiles, vectors
from converters.engines.metafiles import METAFILE_FORMATS
from converters.engines.mupdf import PYMUPDF, open_pdf
from converters.engines.office import INSTALL_HINT, OFFICE, office_available
from converters.engines.pictures import PILLOW, VECTOR_FORMATS, WRITABLE_FORMATS, load_picture, precheck_images
from converters.inputs.limits import pixel_limit

TRACEABLE = tuple(f for f in WRITABLE_FORMATS if f not in ("ico",))
TRACE_PIXEL_LIMIT = 25_000_000  # tracing time grows with the pixels; a 25 MP photo takes about a minute


class VectorParams(CamelParams):
    width: int | None = Field(None, ge=1, le=50_000, description="SVG, EMF or WMF to PNG/WebP: the width in pixels "
                                                                  "(the height follows the proportions).")
    dpi: float | None = Field(None, gt=0, le=2400, description="SVG, EMF or WMF to PNG/WebP without a width: the "
                                                               "resolution (96 is the drawing's own size).")
    background: str | None = Field(None, pattern=r"^#([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$",
                                   description="SVG to PNG/WebP: fill behind the drawing (transparent if empty).")
    page: int = Field(1, ge=1, le=1_000_000, description="PDF to SVG: the page, 1-based.")
    text_as_path: bool = Field(True, description="PDF, EMF or WMF to SVG: draw text as outlines (looks the same "
                                                 "everywhere; off keeps it as text, which needs the fonts).")
    color_mode: Literal["color", "binary"] = Field("color", description="Picture to SVG: trace colours, or black "
                                                                        "and white (for logos and line art).",
        title="Colours",
        json_schema_extra={"x-enumLabels": {"color": "Colour", "binary": "Black and white"}},
    )
    filter_speckle: int = Field(4, ge=0, le=128, description="Picture to SVG: drop specks smaller than this many "
                                                             "pixels.")
    color_precision: int = Field(6, ge=1, le=8, description="Picture to SVG: bits per colour channel kept "
                                                            "(fewer: fewer shapes).")


class VectorConvert(Tool):
    """Convert between vector and raster drawings: render SVG, extract a PDF page as SVG, trace pictures."""

    id = "vector-convert"
    category = "images"
    title = "Convert vector graphics"
    description = (
        "SVG to PDF (vector), PNG or WebP at a chosen width or dpi; Windows metafiles (EMF, WMF) to PDF, SVG, "
        "PNG or WebP when LibreOffice is installed; a PDF page to SVG; a picture (PNG, JPEG ...) traced to SVG, "
        "in colour or black and white. Nothing an SVG points to outside itself is read."
    )
    accepts = (*VECTOR_FORMATS, *METAFILE_FORMATS, "pdf", *TRACEABLE)
    produces = ("svg", "pdf", "png", "webp")
    params = VectorParams
    engines = (vectors.RESVG, vectors.VTRACER, PYMUPDF, PILLOW)
    resident = (OFFICE,)  # LibreOffice, for metafiles only: its slot bounds how many run at once

    def precheck(self, inputs: Sequence[InputFile], params: Any, env: ToolEnv | None = None) -> None:
        """Pictures by their headers; SVGs measured at the size asked for from their root element (read
        from the file's head: the whole file is parsed, and sanitised, by the conversion)."""
        precheck_images([i for i in inputs if i.format in TRACEABLE], env)
        for source in inputs:
            if source.format in METAFILE_FORMATS:
                check_metafile(source, params, env)
            if source.format in VECTOR_FORMATS:
                vectors.pixel_size(vectors.head_size(source.path, source.format), params.width, params.dpi,
                                   pixel_limit(env))

    def convert(self, ctx: Context, source: InputFile, progress: Callable[[float], None]) -> None:
        fmt, stem = ctx.output_format, source.name or source.path.name
        if source.format in VECTOR_FORMATS:
            data = self.from_svg(ctx, source, fmt)
        elif source.format in METAFILE_FORMATS:
            data = self.from_metafile(ctx, source, fmt, progress)
        elif source.format == "pdf":
            data = self.from_pdf(ctx, source, fmt)
        else:
            data = self.from_picture(ctx, source, fmt)
        progress(0.9)
        with atomic_output(ctx.output_path(stem, fmt)) as tmp:
            tmp.write_bytes(data)
        progress(1.0)

    def from_svg(self, ctx: Context, source: InputFile, fmt: str) -> bytes:
        params: VectorParams = ctx.params
        root, removed = vectors.sanitise(vectors.read_svg(source.path, source.format))
        if removed:
            ctx.notes.append(f"{source.name}: {removed} reference{'s' if removed != 1 else ''} to outside the file "
                             "(linked images, stylesheets, scripts) removed before rendering.")
        svg = vectors.markup(root)
        if fmt == "svg":
            return svg.encode("utf-8")
        if fmt == "pdf":
            return vectors.to_pdf(svg, vectors.natural_size(root))
        size = vectors.pixel_size(vectors.natural_size(root), params.width, params.dpi, pixel_limit(ctx.env))
        png = vectors.render_png(svg, size, params.background)
        return png if fmt == "png" else webp_of(png)

    def from_metafile(self, ctx: Context, source: InputFile, fmt: str, progress: Callable[[float], None]) -> bytes:
        import pymupdf

        from converters.engines.pandoc import font_dirs
        from converters.engines.procs import scratch_dir

        params: VectorParams = ctx.params
        header = check_metafile(source, params, ctx.env)
        with scratch_dir() as work:
            pdf = metafiles.to_pdf(ctx.env, source.path, header, work, scaled(progress, 0.05, 0.7), ctx.cancelled,
                                   tuple(font_dirs(ctx.env.settings)))
        if fmt == "pdf":
            return pdf
        with pymupdf.open("pdf", pdf) as doc:
            page = doc[0]
            if fmt == "svg":
                return bytes(page.get_svg_image(text_as_path=params.text_as_path).encode("utf-8"))
            width, height = page.rect.width, page.rect.height
            size = vectors.pixel_size((width * 96 / 72, height * 96 / 72), params.width, params.dpi,
                                      pixel_limit(ctx.env))
            ctx.check_cancelled()
            pixmap = page.get_pixmap(matrix=pymupdf.Matrix(size[0] / width, size[1] / height), alpha=False)
            png = bytes(pixmap.tobytes("png"))
        return png if fmt == "png" else webp_of(png)

    def from_pdf(self, ctx: Context, source: InputFile, fmt: str) -> bytes:
        params: VectorParams = ctx.params
        if fmt != "svg":
            raise ConversionError("unsupported_conversion", "A PDF becomes SVG here; for PNG or WebP pages use "
                                                            "pdf-to-image.")
        doc = open_pdf(source.path)
        try:
            if params.page > doc.page_count:
                raise ConversionError("invalid_pages", f"Page {params.page} does not exist: the document has "
                                                       f"{doc.page_count} pages.")
            return bytes(doc[params.page - 1].get_svg_image(text_as_path=params.text_as_path).encode("utf-8"))
        finally:
            doc.close()

    def from_picture(self, ctx: Context, source: InputFile, fmt: str) -> bytes:
        params: VectorParams = ctx.params
        if fmt != "svg":
            raise ConversionError("unsupported_conversion", "A picture becomes SVG here (tracing); for other "
                                                            "formats use image-convert or image-to-pdf.")
        picture = load_picture(source.path, source.format, ctx.env, ctx.check_cancelled, all_frames=False)
        frame = picture.frames[0]
        if frame.width * frame.height > TRACE_PIXEL_LIMIT:
            raise ConversionError("input_too_large", f"Tracing takes pictures up to {TRACE_PIXEL_LIMIT / 1e6:.0f} "
                                                     "megapixels; resize it first with image-resize.")
        buffer = io.BytesIO()
        frame.convert("RGBA").save(buffer, "PNG", compress_level=1)
        ctx.check_cancelled()
        return vectors.trace(buffer.getvalue(), params.color_mode == "color", params.filter_speckle,
                             params.color_precision).encode("utf-8")


def check_metafile(source: InputFile, params: VectorParams, env: ToolEnv | None) -> metafiles.Metafile:
    """An EMF/WMF header read and checked (and the picture's size at the width or dpi asked for); refused with
    ``engine_missing`` where LibreOffice is not installed."""
    header = metafiles.read_header(source.path, source.format)
    if header.size is not None:
        natural = (header.size[0] * 96 / 72, header.size[1] * 96 / 72)
        vectors.pixel_size(natural, params.width, params.dpi, pixel_limit(env))
    if not office_available(env or ToolEnv()):
        raise ConversionError("engine_missing", f"{source.format.upper()} files are drawn by LibreOffice, which is "
                                                f"not installed here. {INSTALL_HINT}")
    return header


def webp_of(png: bytes) -> bytes:
    from PIL import Image

    out = io.BytesIO()
    with Image.open(io.BytesIO(png)) as image:
        image.save(out, "WEBP", lossless=True)
    return out.getvalue()

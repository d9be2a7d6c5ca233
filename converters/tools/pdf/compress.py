# PyMuPDF annotates only part of its API; calls into the rest are untyped by no fault of ours.
# mypy: disable-error-code="no-untyped-call"
"""``pdf-compress``: images re-encoded at the resolution they are shown at, streams and objects cleaned."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from converters.base import (
    CamelParams,
    Context,
    InputFile,
    atomic_output,
)
from converters.engines.mupdf import save_pdf
from converters.inputs.limits import pixel_limit
from converters.tools.pdf.common import PdfTool, stem_of

if TYPE_CHECKING:
    import pymupdf



LEVELS: dict[str, tuple[int, int]] = {
    # level: (image resolution in dpi, JPEG quality). Each level is strictly smaller than the one before.
    "low": (220, 80),
    "recommended": (150, 60),
    "extreme": (96, 45),
}
# Like Ghostscript's downsample threshold: an image only slightly above the target keeps its pixels.
RESAMPLE_THRESHOLD = 1.25
MIN_SAVING = 0.95  # a re-encoded image must be at least 5% smaller than the original stream to replace it
# the rewritten file must be at least 1% smaller, else the original is kept: a rewrite of a file that
# cannot shrink still differs by a few bytes (a new random file ID), which is no compression
MIN_FILE_SAVING = 0.99


class CompressParams(CamelParams):
    level: Literal["low", "recommended", "extreme"] = Field(
        "recommended",
        description="How hard to compress: each level makes image-heavy PDFs smaller than the last.",
        json_schema_extra={
            "x-enumLabels": {"low": "Light", "recommended": "Recommended", "extreme": "Strong"},
            "x-enumDescriptions": {
                "low": "Images kept sharp for print (220 dpi, JPEG quality 80); scans and photo-heavy PDFs "
                "often shrink by 20-40%.",
                "recommended": "Sharp on screen, fine for most printing (150 dpi, quality 60); scans and photo-heavy "
                "PDFs often shrink by 50-70%.",
                "extreme": "For e-mail and the web (96 dpi, quality 45); images look softer; often 70-90% smaller. "
                "PDFs of text alone change little at any level.",
            },
        },
    )
    image_dpi: int | None = Field(
        None, ge=36, le=600, description="Resample images above this resolution (overrides the level's choice)."
    )
    image_quality: int | None = Field(
        None, ge=1, le=100, description="JPEG quality of re-encoded images, 1-100 (overrides the level's choice)."
    )


def _placements(
    doc: pymupdf.Document, check: Callable[[], None], progress: Callable[[float], None]
) -> dict[int, float]:
    """For each image xref, the lowest resolution (dpi) at which it is shown on any page.

    Placements are matched to xrefs by pixel size rather than with ``get_image_info(xrefs=True)``,
    which decodes every image to hash it. Where several images on a page share a size, each gets
    the lowest resolution among them: never more downsampling than the largest placement allows.
    """
    import math

    shown: dict[int, float] = {}
    count = doc.page_count
    for page in doc.pages():
        check()
        by_size: dict[tuple[int, int], list[int]] = {}
        for entry in page.get_images(full=True):
            by_size.setdefault((entry[2], entry[3]), []).append(entry[0])
        for info in page.get_image_info():
            a, b, c, d = info["transform"][:4]
            width_in, height_in = math.hypot(a, b) / 72, math.hypot(c, d) / 72
            if width_in <= 0 or height_in <= 0:
                continue  # invisible placements say nothing about the needed resolution
            dpi = min(info["width"] / width_in, info["height"] / height_in)
            for xref in by_size.get((info["width"], info["height"]), []):
                shown[xref] = min(shown.get(xref, dpi), dpi)
        progress((page.number + 1) / count)
    return shown


def _key(doc: pymupdf.Document, xref: int, name: str) -> str | None:
    kind, value = doc.xref_get_key(xref, name)
    return None if kind == "null" else str(value)


def _is_photo(image: Any) -> bool:
    """Graphics with few colours (charts, screenshots) stay lossless; photos may become JPEG."""
    thumb = image.reduce(max(1, min(image.size) // 64)) if min(image.size) > 64 else image
    return thumb.getcolors(maxcolors=512) is None


def _decode(doc: pymupdf.Document, xref: int, filters: str, size: tuple[int, int]) -> Any:
    """The image at ``xref`` as a Pillow image in L or RGB, decoded no larger than needed when JPEG."""
    import io

    import pymupdf
    from PIL import Image

    if filters == "/DCTDecode":
        image = Image.open(io.BytesIO(doc.xref_stream_raw(xref)))
        if image.mode in ("L", "RGB"):
            image.draft(image.mode, size)  # DCT scaling: decode at 1/2, 1/4, 1/8 straight away
            return image.convert(image.mode)
    pix = pymupdf.Pixmap(doc, xref)
    if pix.alpha:
        pix = pymupdf.Pixmap(pix, 0)
    if pix.n not in (1, 3):
        pix = pymupdf.Pixmap(pymupdf.csRGB, pix)
    return Image.frombytes("L" if pix.n == 1 else "RGB", (pix.width, pix.height), pix.samples)


def _set_image(doc: pymupdf.Document, xref: int, data: bytes, mode: str, size: tuple[int, int], jpeg: bool) -> None:
    doc.update_stream(xref, data, compress=0 if jpeg else 1)
    doc.xref_set_key(xref, "Filter", "/DCTDecode" if jpeg else "/FlateDecode")
    doc.xref_set_key(xref, "DecodeParms", "null")
    doc.xref_set_key(xref, "Width", str(size[0]))
    doc.xref_set_key(xref, "Height", str(size[1]))
    doc.xref_set_key(xref, "BitsPerComponent", "8")
    doc.xref_set_key(xref, "ColorSpace", "/DeviceGray" if mode == "L" else "/DeviceRGB")


def _resample_mask(doc: pymupdf.Document, xref: int, old: tuple[int, int], new: tuple[int, int]) -> None:
    """Shrink a soft mask that matched its image's old size, so it stops costing full-size bytes."""
    import pymupdf
    from PIL import Image

    mask_ref = _key(doc, xref, "SMask")
    if mask_ref is None or not mask_ref.endswith(" 0 R"):
        return
    mask = int(mask_ref.split()[0])
    if (_key(doc, mask, "Width"), _key(doc, mask, "Height")) != (str(old[0]), str(old[1])):
        return
    pix = pymupdf.Pixmap(doc, mask)
    if pix.n != 1 or pix.alpha:
        return
    image = Image.frombytes("L", (pix.width, pix.height), pix.samples).resize(new, Image.Resampling.BICUBIC)
    _set_image(doc, mask, image.tobytes(), "L", new, jpeg=False)


def recompress_image(doc: pymupdf.Document, xref: int, shown_dpi: float, dpi: int, quality: int, limit: int) -> str:
    """Resample and re-encode one image; returns what happened (``done``, ``kept``, ``skipped``, ``huge``)."""
    import io

    from PIL import Image

    if _key(doc, xref, "ImageMask") == "true" or _key(doc, xref, "Decode") is not None:
        return "skipped"  # stencil masks and remapped samples do not survive a re-encode unchanged
    mask = _key(doc, xref, "Mask")
    if mask is not None and mask.startswith("["):
        return "skipped"  # colour-key masking needs exact sample values
    if _key(doc, xref, "BitsPerComponent") not in (None, "8"):
        return "skipped"  # 1-bit scans and 16-bit images: JPEG suits neither
    width, height = int(_key(doc, xref, "Width") or 0), int(_key(doc, xref, "Height") or 0)
    if width * height > limit:
        return "huge"
    if width < 16 or height < 16:
        return "skipped"
    filters = _key(doc, xref, "Filter") or ""
    scale = dpi / shown_dpi if shown_dpi > dpi * RESAMPLE_THRESHOLD else 1.0
    size = (max(1, round(width * scale)), max(1, round(height * scale)))
    old_length = len(doc.xref_stream_raw(xref))
    image = _decode(doc, xref, filters, size)
    photo = filters == "/DCTDecode" or _is_photo(image)
    if scale == 1.0 and not photo:
        return "kept"  # lossless graphics at a sensible resolution: nothing to gain
    if image.size != size:
        # Bicubic, as Ghostscript's presets use: at these reductions it looks like Lanczos and costs less.
        image = image.resize(size, Image.Resampling.BICUBIC, reducing_gap=2.0)
    if photo:
        buffer = io.BytesIO()
        image.save(buffer, "JPEG", quality=quality, optimize=True)
        data = buffer.getvalue()
    else:
        data = image.tobytes()
    # Flate of raw samples is judged after compression, by the stream length MuPDF wrote.
    if photo and len(data) >= old_length * MIN_SAVING:
        return "kept"
    _set_image(doc, xref, data, image.mode, size, jpeg=photo)
    if size != (width, height):
        _resample_mask(doc, xref, (width, height), size)
    return "done"


class PdfCompress(PdfTool):
    """Shrink a PDF by resampling and re-encoding its images; text, fonts and links are untouched."""

    id = "pdf-compress"
    title = "Compress PDF"
    description = (
        "Make a PDF smaller by resampling and re-encoding its images. Text stays selectable. "
        "A file that would not get at least 1% smaller is returned unchanged."
    )
    params = CompressParams
    timeout_seconds = 1800.0

    def pages_worked(self, doc: pymupdf.Document, params: Any) -> int | None:
        return int(doc.page_count)  # every page is scanned for image placements

    def convert(self, ctx: Context, source: InputFile, progress: Callable[[float], None]) -> None:
        params: CompressParams = ctx.params
        dpi, quality = LEVELS[params.level]
        dpi = params.image_dpi or dpi
        quality = params.image_quality or quality
        limit = pixel_limit(ctx.env)
        doc = self.open_checked(ctx, source)
        try:
            shown = _placements(doc, ctx.check_cancelled, lambda f: progress(0.15 * f))
            outcomes: dict[str, int] = {}
            for number, (xref, shown_dpi) in enumerate(shown.items(), start=1):
                ctx.check_cancelled()
                try:
                    outcome = recompress_image(doc, xref, shown_dpi, dpi, quality, limit)
                except (OSError, RuntimeError, ValueError):
                    outcome = "skipped"  # an image neither MuPDF nor Pillow can decode stays as it is
                outcomes[outcome] = outcomes.get(outcome, 0) + 1
                progress(0.15 + 0.7 * number / len(shown))
            if outcomes.get("huge"):
                ctx.notes.append(
                    f"{source.name}: {outcomes['huge']} image(s) over the {limit / 1e6:.0f}-megapixel limit "
                    "were left as they were."
                )
            target = ctx.output_path(stem_of(source), "pdf")
            strong = params.level == "extreme"
            save_pdf(doc, target, garbage=4 if strong else 3, deflate_images=True, deflate_fonts=True)
        finally:
            doc.close()
        if target.stat().st_size > source.path.stat().st_size * MIN_FILE_SAVING:
            with atomic_output(target) as tmp:
                shutil.copyfile(source.path, tmp)
            ctx.notes.append(f"{source.name}: original kept: compression did not make it at least 1% smaller.")
        progress(1.0)



# PyMuPDF annotates only part of its API; calls into the rest are untyped by no fault of ours.
# mypy: disable-error-code="no-untyped-call"
"""PDF tools on PyMuPDF: the family's shared helpers and ``pdf-compress``.

The other PDF tools live in ``pdf_pages`` (merge, split, rotate, extract,
delete), ``pdf_render`` (to image, from images, to text) and ``pdf_security``
(protect, unlock, watermark, metadata); they build on :class:`PdfTool` here.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal

from pydantic import AfterValidator, ConfigDict, Field
from pydantic.alias_generators import to_camel

from converters.base import (
    Context,
    ConversionError,
    Engine,
    InputFile,
    Params,
    Tool,
    ToolEnv,
    atomic_output,
    safe_stem,
)
from converters.pages import PAGE_SPEC_PATTERN, check_page_spec

if TYPE_CHECKING:
    import pymupdf

PYMUPDF = Engine(
    name="PyMuPDF", module="pymupdf", distribution="pymupdf", install_hint="Install it with: pip install pymupdf"
)

DEFAULT_PIXEL_LIMIT = 100_000_000  # 100 megapixels: a 10000x10000 image, ~400 MB as RGBA
DEFAULT_PAGE_LIMIT = 10_000  # pages a job may go through one by one (render, read, stamp, copy)
PRECHECK_MAX_BYTES = 256 * 1024**2  # above this, opening at job creation is not "cheap": check when running


class CamelParams(Params):
    """Params whose JSON names are camelCase (``imageDpi``) while Python uses snake_case."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, alias_generator=to_camel)


# A page range field: the pattern lets a form check it as typed, the validator catches "0" and "5-3".
PageSpec = Annotated[str, AfterValidator(check_page_spec)]


def pages_field(default: Any, what: str) -> Any:
    """A ``pages`` field with the page-range pattern in its JSON Schema."""
    return Field(default, pattern=PAGE_SPEC_PATTERN, description=f'{what}, 1-based, e.g. "1-3,5,8-" ("1-" is all).')


def pixel_limit(env: ToolEnv | None) -> int:
    """The largest image, in pixels, a tool may decode or render (setting ``max_image_pixels``)."""
    if env is not None:
        value = env.settings.get("max_image_pixels")
        if value:
            return int(value)
    return DEFAULT_PIXEL_LIMIT


def page_limit(env: ToolEnv | None) -> int:
    """The most pages a job may go through one by one (setting ``max_pdf_pages``)."""
    if env is not None:
        value = env.settings.get("max_pdf_pages")
        if value:
            return int(value)
    return DEFAULT_PAGE_LIMIT


def too_large(what: str, pixels: float, limit: int) -> ConversionError:
    return ConversionError(
        "input_too_large",
        f"{what} would be {pixels / 1e6:.0f} megapixels, over the limit of {limit / 1e6:.0f} megapixels.",
    )


def stem_of(source: InputFile) -> str:
    return safe_stem(source.name or source.path.name)


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
        from converters.pages import page_groups

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


# --------------------------------------------------------------------------- pdf-compress

LEVELS: dict[str, tuple[int, int]] = {
    # level: (image resolution in dpi, JPEG quality). Each level is strictly smaller than the one before.
    "low": (220, 80),
    "recommended": (150, 60),
    "extreme": (96, 45),
}
# Like Ghostscript's downsample threshold: an image only slightly above the target keeps its pixels.
RESAMPLE_THRESHOLD = 1.25
MIN_SAVING = 0.95  # a re-encoded image must be at least 5% smaller than the original stream to replace it


class CompressParams(CamelParams):
    level: Literal["low", "recommended", "extreme"] = Field(
        "recommended", description="How hard to compress: each level makes image-heavy PDFs smaller than the last."
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
        "A file that would not get smaller is returned unchanged."
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
        if target.stat().st_size >= source.path.stat().st_size:
            with atomic_output(target) as tmp:
                shutil.copyfile(source.path, tmp)
            ctx.notes.append(f"{source.name}: original kept: compression did not make it smaller.")
        progress(1.0)


TOOLS: list[Tool] = [PdfCompress()]

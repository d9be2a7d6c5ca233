# PyMuPDF annotates only part of its API; calls into the rest are untyped by no fault of ours.
# mypy: disable-error-code="no-untyped-call"
"""PDF tools for the pictures in a PDF: take them out (pdf-extract-images) or stamp one in (pdf-add-image)."""

from __future__ import annotations

import hashlib
import io
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from converters.base import CamelParams, Context, ConversionError, InputFile, ToolEnv, atomic_output, scaled
from converters.engines.mupdf import PYMUPDF, save_pdf
from converters.engines.pictures import IMAGE_FORMATS, PILLOW, load_picture, precheck_images
from converters.inputs.limits import pixel_limit
from converters.inputs.pages import ALL_PAGES, page_set
from converters.tools.pdf.common import OnTop, PageSpec, PdfTool, pages_field, place_labels, stem_of
from converters.tools.pdf.render import image_for_pdf

if TYPE_CHECKING:
    import pymupdf

# --------------------------------------------------------------------------- pdf-extract-images

KEEP = "keep"
# What MuPDF calls the stored format -> the catalogue's format id; anything else is written as PNG.
KNOWN_EXTENSIONS = {"jpeg": "jpg", "jpg": "jpg", "png": "png"}


class ExtractImagesParams(CamelParams):
    min_width: int = Field(32, ge=1, le=100_000, description="Skip images narrower than this, in pixels "
                                                             "(bullets, rules, spacers).")
    min_height: int = Field(32, ge=1, le=100_000, description="Skip images shorter than this, in pixels.")
    pages: PageSpec = pages_field(ALL_PAGES, "Pages to take images from")


def image_key(doc: pymupdf.Document, xref: int, smask: int, info: Sequence[Any]) -> bytes:
    """A digest of an image as stored (its stream, its soft mask's, and how to read them), so the same
    picture stored twice under two object numbers is written once. Nothing is decoded."""
    digest = hashlib.sha256()
    digest.update(repr(tuple(info[2:6])).encode())  # width, height, bits per component, colour space
    digest.update(doc.xref_stream_raw(xref) or b"")
    if smask:
        digest.update(b"\0smask\0" + (doc.xref_stream_raw(smask) or b""))
    return digest.digest()


def as_png(doc: pymupdf.Document, xref: int, smask: int) -> bytes:
    """The image decoded by MuPDF (its /Decode and colour space applied) as PNG: CMYK and other colour
    spaces become RGB, and a soft mask becomes the alpha channel."""
    import pymupdf

    pix = pymupdf.Pixmap(doc, xref)
    if pix.alpha:
        pix = pymupdf.Pixmap(pix, 0)  # the soft mask below, if any, is the alpha that counts
    name = pix.colorspace.name.lower() if pix.colorspace is not None else ""
    if pix.colorspace is None or pix.colorspace.n not in (1, 3) or not ("rgb" in name or "gray" in name):
        pix = pymupdf.Pixmap(pymupdf.csRGB, pix)  # CMYK, Lab, separations: PNG holds only grey and RGB
    if smask:
        try:
            mask = pymupdf.Pixmap(doc, smask)
            if (mask.width, mask.height) == (pix.width, pix.height):
                pix = pymupdf.Pixmap(pix, mask)
        except (RuntimeError, ValueError):
            pass  # an unreadable mask: the picture itself is still worth having
    return bytes(pix.tobytes("png"))


def extracted(doc: pymupdf.Document, xref: int, smask: int, keep: bool) -> tuple[bytes, str]:
    """The bytes and format id to write for one image. With ``keep``: a JPEG as stored, byte for byte, and
    a losslessly compressed image as MuPDF gives it out, as PNG. Else, or when the stored image is not the
    picture as shown (a soft mask, a /Decode array, CMYK), a PNG made from the decoded pixels."""
    # A /Decode array changes the pixels' meaning; only the decoded image shows them as the PDF does.
    if keep and not smask and doc.xref_get_key(xref, "Decode")[0] == "null":
        found = doc.extract_image(xref) or {}
        ext = KNOWN_EXTENSIONS.get(str(found.get("ext", "")))
        # A CMYK JPEG is valid, but viewers disagree on how to show it.
        if ext is not None and found.get("image") and not (ext == "jpg" and found.get("colorspace") == 4):
            return bytes(found["image"]), ext
    return as_png(doc, xref, smask), "png"


class PdfExtractImages(PdfTool):
    """Write out every picture embedded in a PDF, once each, in its own format where possible."""

    id = "pdf-extract-images"
    title = "Extract images from PDF"
    description = (
        'Save each image embedded in a PDF as a file of its own, once each, tiny ones skipped: output "keep" '
        'writes JPEG photos byte for byte and the other images as PNG; output "png" makes every image a PNG.'
    )
    produces = (KEEP, "png")
    params = ExtractImagesParams
    timeout_seconds = 1800.0

    def pages_worked(self, doc: pymupdf.Document, params: Any) -> int | None:
        return len(page_set(params.pages, doc.page_count))

    def run(self, ctx: Context) -> None:
        count, written = len(ctx.inputs), 0
        for number, source in enumerate(ctx.inputs):
            ctx.check_cancelled()
            found = self.extract(ctx, source, scaled(ctx.progress, number / count, 1 / count))
            if not found and count > 1:
                ctx.notes.append(f"{source.name}: no images to extract on the pages chosen.")
            written += found
        if not written:
            params: ExtractImagesParams = ctx.params
            which = f"{ctx.inputs[0].name} has no" if count == 1 else "None of the PDFs has"
            raise ConversionError("no_images", f"{which} images of at least {params.min_width} x "
                                               f"{params.min_height} pixels on the pages chosen.")
        ctx.progress(1.0)

    def extract(self, ctx: Context, source: InputFile, progress: Callable[[float], None]) -> int:
        """Write the images of one PDF; how many were written."""
        params: ExtractImagesParams = ctx.params
        limit = pixel_limit(ctx.env)
        seen_xrefs: set[int] = set()
        seen_digests: set[bytes] = set()
        written = skipped_small = 0
        doc = self.open_checked(ctx, source)
        try:
            chosen = sorted(page_set(params.pages, doc.page_count))
            width = len(str(doc.page_count))
            for done, index in enumerate(chosen, start=1):
                ctx.check_cancelled()
                number = 0
                for info in doc[index].get_images(full=True):
                    xref, smask, img_w, img_h = int(info[0]), int(info[1]), int(info[2]), int(info[3])
                    if xref in seen_xrefs:
                        continue
                    seen_xrefs.add(xref)
                    if img_w < params.min_width or img_h < params.min_height:
                        skipped_small += 1
                        continue
                    if img_w * img_h > limit:
                        ctx.notes.append(f"Page {index + 1}: an image of {img_w:,} x {img_h:,} pixels is over the "
                                         f"limit of {limit:,} pixels and was not extracted.")
                        continue
                    key = image_key(doc, xref, smask, info)
                    if key in seen_digests:
                        continue
                    seen_digests.add(key)
                    try:
                        data, ext = extracted(doc, xref, smask, ctx.output_format == KEEP)
                    except (RuntimeError, ValueError) as exc:
                        ctx.notes.append(f"Page {index + 1}: an image could not be decoded and was skipped ({exc}).")
                        continue
                    number += 1
                    target = ctx.output_path(f"{stem_of(source)}-p{index + 1:0{width}d}-{number}", ext)
                    with atomic_output(target) as tmp:
                        tmp.write_bytes(data)
                    written += 1
                progress(done / len(chosen))
        finally:
            doc.close()
        if skipped_small:
            ctx.notes.append(f"{source.name}: {skipped_small} image{'s' if skipped_small != 1 else ''} smaller "
                             f"than {params.min_width} x {params.min_height} pixels skipped.")
        return written


# --------------------------------------------------------------------------- pdf-add-image

Placement = Literal["center", "top-left", "top-center", "top-right", "bottom-left", "bottom-center", "bottom-right"]
ADD_IMAGE_FORMATS = tuple(f for f in IMAGE_FORMATS if f != "ico")


class AddImageParams(CamelParams):
    position: Placement = Field(
        "center", description="Where on the page the image sits.",
        json_schema_extra={"x-enumLabels": place_labels(Placement)},
    )
    scale: float = Field(0.3, ge=0.01, le=1.0, description="Width of the image as a fraction of the page's "
                                                           "width (it is made smaller if it would not fit).")
    opacity: float = Field(1.0, ge=0.0, le=1.0, description="0 (invisible) to 1 (solid).")
    margin: float = Field(36.0, ge=0, le=288, description="Space kept between the image and the page edges, in "
                                                         "points (1/72 inch).")
    overlay: bool = Field(True, description="Draw the image over the page content; off puts it underneath.")
    pages: PageSpec = pages_field(ALL_PAGES, "Pages to put the image on")


def check_pdf_then_image(tool_id: str, inputs: Sequence[InputFile]) -> None:
    """Refuse (``invalid_params``) anything but a PDF followed by one image."""
    if len(inputs) != 2 or inputs[0].format != "pdf" or inputs[1].format not in ADD_IMAGE_FORMATS:
        given = ", ".join(source.format for source in inputs) or "nothing"
        raise ConversionError("invalid_params", f"{tool_id} takes two files: the PDF first, then the image "
                                                f"({given} were given).")


def faded(source: InputFile, env: ToolEnv | None, opacity: float) -> tuple[bytes, tuple[int, int]]:
    """The image as a PNG whose alpha is multiplied by ``opacity`` (MuPDF's image insertion has no
    opacity of its own), and its upright pixel size."""
    frame = load_picture(source.path, source.format, env, all_frames=False).frames[0]
    rgba = frame.convert("LA" if frame.mode in ("L", "LA") else "RGBA")
    alpha = rgba.getchannel("A").point(lambda value: round(value * opacity))
    rgba.putalpha(alpha)
    buffer = io.BytesIO()
    rgba.save(buffer, "PNG", compress_level=6)
    return buffer.getvalue(), rgba.size




def placement(page: pymupdf.Page, size: tuple[int, int], params: AddImageParams) -> pymupdf.Rect:
    """Where the image goes on ``page`` as the reader sees it (after the page's own rotation)."""
    import pymupdf

    shown = page.rect
    room_w, room_h = shown.width - 2 * params.margin, shown.height - 2 * params.margin
    if room_w <= 0 or room_h <= 0:
        raise ConversionError("invalid_params", f"A margin of {params.margin:g} pt leaves no room on page "
                                                f"{page.number + 1}.")
    width = params.scale * shown.width
    height = width * size[1] / size[0]
    shrink = min(1.0, room_w / width, room_h / height)
    width, height = width * shrink, height * shrink
    where = params.position
    x = {"left": params.margin, "right": shown.width - params.margin - width}.get(
        where.rsplit("-", 1)[-1], (shown.width - width) / 2)
    y = {"top": params.margin, "bottom": shown.height - params.margin - height}.get(
        where.split("-", 1)[0], (shown.height - height) / 2)
    return pymupdf.Rect(x, y, x + width, y + height)


class PdfAddImage(PdfTool):
    """Put one image (a logo, a stamp, a signature scan) on chosen pages of a PDF."""

    id = "pdf-add-image"
    title = "Add image to PDF"
    description = (
        "Place an image (logo, stamp, signature) on all or some pages of a PDF: give the PDF first, then the "
        "image. Position, size, opacity, margin, over or under the content."
    )
    accepts = ("pdf", *ADD_IMAGE_FORMATS)
    params = AddImageParams
    engines = (PYMUPDF, PILLOW)
    merges_inputs = True
    max_inputs = 2

    def pages_worked(self, doc: pymupdf.Document, params: Any) -> int | None:
        return len(page_set(params.pages, doc.page_count))

    def precheck(self, inputs: Sequence[InputFile], params: Any, env: ToolEnv | None = None) -> None:
        check_pdf_then_image(self.id, inputs)
        super().precheck(inputs[:1], params, env)
        precheck_images(inputs[1:], env)

    def run(self, ctx: Context) -> None:
        params: AddImageParams = ctx.params
        check_pdf_then_image(self.id, ctx.inputs)
        pdf, picture = ctx.inputs
        if params.opacity < 1.0:
            data, size = faded(picture, ctx.env, params.opacity)
        else:
            data, size, _ = image_for_pdf(picture, ctx.env)
        doc = self.open_checked(ctx, pdf)
        try:
            chosen = sorted(page_set(params.pages, doc.page_count))
            on_top = OnTop(doc)
            xref = 0
            for done, index in enumerate(chosen, start=1):
                ctx.check_cancelled()
                page = doc[index]
                rect = placement(page, size, params) * page.derotation_matrix
                # The first insertion embeds the image; the others show that same object again.
                xref = page.insert_image(rect, stream=None if xref else data, xref=xref, overlay=False,
                                         rotate=page.rotation)
                if params.overlay:
                    on_top.move(page)
                ctx.progress(0.9 * done / len(chosen))
            save_pdf(doc, ctx.output_path(stem_of(pdf), "pdf"))
        finally:
            doc.close()
        ctx.progress(1.0)

# PyMuPDF annotates only part of its API; calls into the rest are untyped by no fault of ours.
# mypy: disable-error-code="no-untyped-call"
"""pdf-grayscale: a PDF in shades of grey, recoloured where it stands (text stays text) or as page images."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from converters.base import CamelParams, Context, InputFile, ToolEnv
from converters.engines.mupdf import save_pdf
from converters.tools.pdf.common import REFERENCE, PdfTool, stem_of
from converters.tools.pdf.content import DPI_FIELD_DESCRIPTION, IMAGE_MODE_NOTE, check_pages_render, rasterise

if TYPE_CHECKING:
    import pymupdf

class GrayscaleParams(CamelParams):
    mode: Literal["vector", "image"] = Field(
        "vector", description="vector: recolour text, drawings, images, annotations and form fields, which all "
        "stay what they are; image: replace each page by a grey picture of it (text is no longer text).",
        title="Method",
        json_schema_extra={
            "x-enumLabels": {"vector": "Recolour (text stays text)", "image": "Grey pictures of the pages"},
            "x-enumDescriptions": {
                "vector": "Text, drawings, images, annotations and form fields are recoloured and stay what they are.",
                "image": "Each page is replaced by a grey picture of it; text is no longer text.",
            },
        },
    )
    dpi: int = Field(150, ge=36, le=600, description=DPI_FIELD_DESCRIPTION)
    jpeg_quality: int = Field(75, ge=1, le=100, description='With mode "vector": quality of the grey JPEGs '
                                                            "written for JPEG photos (1-100).")


# A colour operator in a form field's default appearance string: "1 0 0 rg" or "0 1 1 0 k".
DA_COLOUR = re.compile(r"((?:[-+]?(?:\d+\.?\d*|\.\d+)\s+){3,4})(rg|k)\b")


def gray_of(components: list[float]) -> float:
    """The luminance (Rec. 601, as MuPDF's own conversion) of an RGB or CMYK colour."""
    if len(components) == 4:
        c, m, y, k = components
        components = [(1 - c) * (1 - k), (1 - m) * (1 - k), (1 - y) * (1 - k)]
    red, green, blue = components
    return max(0.0, min(1.0, 0.299 * red + 0.587 * green + 0.114 * blue))


def gray_entries(doc: pymupdf.Document, xref: int) -> None:
    """Grey the colours an annotation or field keeps for viewers that redraw it (when it is edited)."""
    import pymupdf

    for key in ("C", "IC", "MK/BG", "MK/BC"):
        kind, value = doc.xref_get_key(xref, key)
        if kind != "array":
            continue
        try:
            numbers = [float(part) for part in value.strip("[] ").split()]
        except ValueError:
            continue
        if len(numbers) in (3, 4):
            doc.xref_set_key(xref, key, f"[{gray_of(numbers):.4g}]")
    kind, value = doc.xref_get_key(xref, "DA")
    if kind == "string" and DA_COLOUR.search(value):
        grayed = DA_COLOUR.sub(lambda m: f"{gray_of([float(v) for v in m[1].split()]):.4g} g", value)
        doc.xref_set_key(xref, "DA", pymupdf.get_pdf_str(grayed))


class AppearanceRecolourer:
    """Greys annotation appearances, which a page's own recolouring leaves alone: each appearance stream is
    drawn alone on a scratch page at the end of the document, that page is recoloured, and the annotation
    is pointed at the result (MuPDF rewrites the stream in place, so usually nothing needs re-pointing)."""

    def __init__(self, doc: pymupdf.Document) -> None:
        self.doc = doc
        self.scratch: int | None = None  # its number: a Page object may go stale as the document changes
        self.done: dict[int, int] = {}

    def recolour(self, annot_xref: int) -> None:
        doc = self.doc
        for which in ("N", "D", "R"):
            kind, value = doc.xref_get_key(annot_xref, f"AP/{which}")
            if kind not in ("xref", "dict"):
                continue
            changed = value
            for number in REFERENCE.findall(value):
                new = self.stream(int(number))
                if new != int(number):
                    changed = re.sub(rf"\b{number}\s+0\s+R", f"{new} 0 R", changed)
            if changed != value:
                doc.xref_set_key(annot_xref, f"AP/{which}", changed)
        gray_entries(doc, annot_xref)

    def stream(self, xref: int) -> int:
        """Recolour one appearance stream; the xref of the grey version."""
        if xref in self.done:
            return self.done[xref]
        doc = self.doc
        if self.scratch is None:
            self.scratch = doc.new_page(width=10, height=10).number
        page = doc[self.scratch]
        contents = doc.get_new_xref()  # a fresh one each time: recolouring rewrites the old (unused ones are not saved)
        doc.update_object(contents, "<<>>")
        doc.update_stream(contents, b"/F0 Do")
        doc.xref_set_key(page.xref, "Contents", f"{contents} 0 R")
        doc.xref_set_key(page.xref, "Resources", f"<</XObject<</F0 {xref} 0 R>>>>")
        page.recolor(1)
        found = REFERENCE.findall(doc.xref_get_key(page.xref, "Resources/XObject")[1])
        new = int(found[0]) if len(found) == 1 else xref
        self.done[xref] = new
        return new

    def close(self) -> None:
        if self.scratch is not None:
            self.doc.delete_page(self.scratch)
            self.scratch = None


class ImageKeeper:
    """Keeps the images of a recoloured document as compact as they were.

    MuPDF's recolouring writes each image it greys as a new, uncompressed object, once per page that
    shows it. This points every page at one grey copy per original image, and writes the grey copy of
    a JPEG photo as a grey JPEG again (a lossless grey photo is several times the size of the colour JPEG).
    """

    def __init__(self, doc: pymupdf.Document, quality: int) -> None:
        self.doc, self.quality = doc, quality
        self.grey: dict[int, int] = {}  # original image xref -> its grey copy

    @staticmethod
    def images(page: pymupdf.Page) -> list[tuple[int, str, tuple[int, int], str]]:
        """The page's own images in the order it uses them: (xref, resource name, size, filter)."""
        return [(int(info[0]), str(info[7]), (int(info[2]), int(info[3])), str(info[8]))
                for info in page.get_images(full=True)]

    def settle(self, page: pymupdf.Page, before: list[tuple[int, str, tuple[int, int], str]]) -> None:
        """After ``page`` was recoloured: share the grey copies, and make JPEGs of those of JPEGs.

        Recolouring renames the images and rewrites the content, in the same order: an image is matched to
        its original by its place and its size, and anything that does not line up is left as it is.
        """
        after = self.images(page)
        if len(after) != len(before):
            return
        for (old, _, size, stored_as), (new, name, new_size, _) in zip(before, after, strict=True):
            if new == old or size != new_size:
                continue
            if old in self.grey:
                self.doc.xref_set_key(page.xref, f"Resources/XObject/{name}", f"{self.grey[old]} 0 R")
                continue
            self.grey[old] = new
            if stored_as == "DCTDecode":
                self.to_jpeg(new)

    def to_jpeg(self, xref: int) -> None:
        import io

        import pymupdf
        from PIL import Image

        doc = self.doc
        if doc.xref_get_key(xref, "SMask")[0] != "null" or doc.xref_get_key(xref, "Decode")[0] != "null":
            return
        pix = pymupdf.Pixmap(doc, xref)
        if pix.n != 1 or pix.alpha:
            return
        buffer = io.BytesIO()
        Image.frombytes("L", (pix.width, pix.height), pix.samples).save(buffer, "JPEG", quality=self.quality)
        doc.update_stream(xref, buffer.getvalue(), compress=False)
        for key, value in (("Filter", "/DCTDecode"), ("DecodeParms", "null"), ("ColorSpace", "/DeviceGray"),
                           ("BitsPerComponent", "8")):
            doc.xref_set_key(xref, key, value)


class PdfGrayscale(PdfTool):
    """Turn a PDF's colours into greys, keeping text and drawings as they are (or as page images)."""

    id = "pdf-grayscale"
    title = "Grayscale PDF"
    description = (
        "Convert a PDF to shades of grey: text, drawings, images, annotations and form fields keep working "
        '(mode "vector"), or each page becomes a grey image (mode "image").'
    )
    params = GrayscaleParams
    timeout_seconds = 1800.0

    def pages_worked(self, doc: pymupdf.Document, params: Any) -> int | None:
        return int(doc.page_count)

    def check_document(self, doc: pymupdf.Document, params: Any, env: ToolEnv | None) -> None:
        if params.mode == "image":
            check_pages_render(doc, params.dpi, env)
        super().check_document(doc, params, env)

    def convert(self, ctx: Context, source: InputFile, progress: Callable[[float], None]) -> None:
        params: GrayscaleParams = ctx.params
        doc = self.open_checked(ctx, source)
        try:
            if params.mode == "image":
                gray = rasterise(ctx, doc, params.dpi, True, progress)
                try:
                    save_pdf(gray, ctx.output_path(stem_of(source), "pdf"))
                finally:
                    gray.close()
                ctx.notes.append(f"{source.name}: {IMAGE_MODE_NOTE}")
            else:
                appearances = AppearanceRecolourer(doc)
                keeper = ImageKeeper(doc, params.jpeg_quality)
                count = doc.page_count
                try:
                    for index in range(count):
                        ctx.check_cancelled()
                        page = doc[index]
                        before = keeper.images(page)
                        page.recolor(1)
                        keeper.settle(page, before)
                        for xref in [a.xref for a in page.annots()] + [w.xref for w in page.widgets()]:
                            appearances.recolour(xref)
                        progress(0.9 * (index + 1) / count)
                finally:
                    appearances.close()
                save_pdf(doc, ctx.output_path(stem_of(source), "pdf"))
        finally:
            doc.close()
        progress(1.0)

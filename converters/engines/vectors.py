"""SVG made safe to render, and rendered: resvg for pixels, MuPDF for PDF; vtracer for tracing pixels to SVG.

An SVG may point anywhere: ``<image href="file:///home/...">``, ``<use href="other.svg#x">``, CSS
``@import`` and ``url(...)``, ``<script>``, HTML in ``<foreignObject>``. FileKiln renders only what is in
the file: before any renderer sees it, the SVG is parsed with the entity-refusing parser
(:mod:`converters.inputs.safexml`), and every reference that is neither to the file itself (``#id``) nor
inline data (``data:``) is removed, with ``<script>``, ``<foreignObject>`` and CSS that imports or points
outside. The renderers are then given a string, never a path, so there is no folder to resolve names in.
"""

from __future__ import annotations

import gzip
import re
import zlib
from collections.abc import Iterator
from pathlib import Path
from xml.etree import ElementTree

from converters.base import ConversionError, Engine
from converters.inputs import safexml
from converters.inputs.limits import too_large

RESVG = Engine(name="resvg", module="resvg_py", distribution="resvg-py",
               install_hint="Install it with: pip install resvg-py")
VTRACER = Engine(name="vtracer", module="vtracer", distribution="vtracer",
                 install_hint="Install it with: pip install vtracer")

SVG_NS = "http://www.w3.org/2000/svg"
XLINK_NS = "http://www.w3.org/1999/xlink"
MAX_SVG_BYTES = 50 * 1024**2  # the markup, after an .svgz is inflated
DEFAULT_SIZE = (512.0, 512.0)  # an SVG that states no size at all
DROPPED = frozenset({"script", "foreignObject"})
# CSS that reaches outside the file: @import, and url(...) other than #fragment or data:
_CSS_IMPORT = re.compile(r"@import[^;]*;?", re.IGNORECASE)
_CSS_URL = re.compile(r"url\(\s*(['\"]?)(?!\s*#|\s*data:)[^)]*\1\s*\)", re.IGNORECASE)
_LENGTH = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][-+]?\d+)?)\s*(px|pt|pc|mm|cm|in|)\s*$")
_UNIT_PX = {"": 1.0, "px": 1.0, "pt": 96 / 72, "pc": 16.0, "mm": 96 / 25.4, "cm": 96 / 2.54, "in": 96.0}


def read_svg(path: Path, fmt: str) -> bytes:
    """The SVG markup of ``path`` (an .svgz inflated, counting, to at most :data:`MAX_SVG_BYTES`)."""
    if fmt != "svgz":
        if path.stat().st_size > MAX_SVG_BYTES:
            raise ConversionError("input_too_large", f"The SVG is over {MAX_SVG_BYTES // 1024**2} MB.")
        return path.read_bytes()
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    out = bytearray()
    try:
        with open(path, "rb") as f:
            while chunk := f.read(64 * 1024):
                out += inflater.decompress(chunk, MAX_SVG_BYTES + 1 - len(out))
                if len(out) > MAX_SVG_BYTES:
                    raise ConversionError("input_too_large", f"The SVGZ inflates past {MAX_SVG_BYTES // 1024**2} MB.")
    except (zlib.error, gzip.BadGzipFile) as exc:
        raise ConversionError("damaged_input", f"The SVGZ cannot be inflated: {exc}") from None
    return bytes(out)


HEAD_BYTES = 1024**2  # of markup read to find an SVG's root element at job creation


def head_size(path: Path, fmt: str) -> tuple[float, float]:
    """The natural size of the SVG at ``path`` from its root element alone, reading at most
    :data:`HEAD_BYTES` of markup: for job creation, which must not parse (or hold) a whole hostile file.
    The whole file is parsed by the conversion, under the job's memory cap."""
    try:
        root = safexml.root_element(_head_chunks(path, fmt), flat_entities=True)
    except ElementTree.ParseError as exc:
        raise ConversionError("damaged_input", f"No SVG image starts in the file's first "
                                               f"{HEAD_BYTES // 1024**2} MB: {exc}") from None
    if _local(root.tag) != "svg":
        raise ConversionError("damaged_input", "The file is XML but not an SVG image.")
    return natural_size(root)


def _head_chunks(path: Path, fmt: str) -> Iterator[bytes]:
    """The first :data:`HEAD_BYTES` of ``path``'s markup (an .svgz inflated as far as that), in pieces."""
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS) if fmt == "svgz" else None
    given = 0
    try:
        with open(path, "rb") as f:
            while given < HEAD_BYTES and (chunk := f.read(64 * 1024)):
                if inflater is not None:  # what a bounded inflate left over comes first
                    chunk = inflater.decompress(inflater.unconsumed_tail + chunk, HEAD_BYTES - given)
                chunk = chunk[: HEAD_BYTES - given]
                given += len(chunk)
                yield chunk
    except (zlib.error, gzip.BadGzipFile) as exc:
        raise ConversionError("damaged_input", f"The SVGZ cannot be inflated: {exc}") from None


def _local(name: str) -> str:
    return name.rsplit("}", 1)[-1]


def _inside(value: str) -> bool:
    return value.strip().startswith(("#", "data:"))


def sanitise(data: bytes) -> tuple[ElementTree.Element, int]:
    """The SVG's tree with every outside reference removed, and how many things were removed."""
    try:
        root = safexml.fromstring(data, flat_entities=True)  # Illustrator's namespace entities
    except ElementTree.ParseError as exc:
        raise ConversionError("damaged_input", f"The SVG is not well-formed XML: {exc}") from None
    if _local(root.tag) != "svg":
        raise ConversionError("damaged_input", "The file is XML but not an SVG image.")
    removed = 0
    for parent in root.iter():
        for child in list(parent):
            if _local(str(child.tag)) in DROPPED:
                parent.remove(child)
                removed += 1
    for element in root.iter():
        for name in list(element.attrib):
            value = element.attrib[name]
            local = _local(name)
            if (local == "href" and not _inside(value)) or local.startswith("on"):  # on*: script by another name
                del element.attrib[name]
                removed += 1
            elif "url(" in value.lower() or "@import" in value.lower():
                cleaned = _CSS_URL.sub("none", _CSS_IMPORT.sub("", value))
                if cleaned != value:
                    element.attrib[name] = cleaned
                    removed += 1
        if _local(str(element.tag)) == "style" and element.text:
            cleaned = _CSS_URL.sub("none", _CSS_IMPORT.sub("", element.text))
            if cleaned != element.text:
                element.text = cleaned
                removed += 1
    return root, removed


def markup(root: ElementTree.Element) -> str:
    """The tree as SVG text, in the default SVG namespace (simple renderers do not follow prefixes)."""
    ElementTree.register_namespace("", SVG_NS)
    ElementTree.register_namespace("xlink", XLINK_NS)
    return ElementTree.tostring(root, encoding="unicode")


def _length(value: str | None) -> float | None:
    match = _LENGTH.match(value or "")
    return float(match.group(1)) * _UNIT_PX[match.group(2)] if match else None


def natural_size(root: ElementTree.Element) -> tuple[float, float]:
    """The SVG's size in CSS pixels (96 per inch): its width and height, else its viewBox, else 512 x 512."""
    width, height = _length(root.get("width")), _length(root.get("height"))
    box = [float(part) for part in re.split(r"[\s,]+", (root.get("viewBox") or "").strip()) if part]
    if len(box) == 4 and box[2] > 0 and box[3] > 0:
        if width is None and height is None:
            width, height = box[2], box[3]
        elif width is None and height is not None:
            width = height * box[2] / box[3]
        elif height is None and width is not None:
            height = width * box[3] / box[2]
    if width is None or height is None or width <= 0 or height <= 0:
        return DEFAULT_SIZE
    return width, height


def pixel_size(natural: tuple[float, float], width: int | None, dpi: float | None, limit: int) -> tuple[int, int]:
    """The render's size in pixels: a given width (height to scale), else the natural size at ``dpi`` (96 is
    1:1); refused (``input_too_large``) above ``limit`` pixels."""
    w, h = natural
    if width:
        size = (width, max(1, round(h * width / w)))
    else:
        scale = (dpi or 96.0) / 96.0
        size = (max(1, round(w * scale)), max(1, round(h * scale)))
    if size[0] * size[1] > limit:
        raise too_large("The rendered SVG", size[0] * size[1], limit)
    return size


def render_png(svg: str, size: tuple[int, int], background: str | None = None) -> bytes:
    """``svg`` (already sanitised) rendered by resvg at ``size`` pixels, as PNG."""
    import resvg_py

    try:
        return bytes(resvg_py.svg_to_bytes(svg_string=svg, width=size[0], height=size[1], background=background))
    except (ValueError, RuntimeError) as exc:
        raise ConversionError("render_failed", f"The SVG could not be rendered: {exc}") from None


def to_pdf(svg: str, natural: tuple[float, float]) -> bytes:
    """``svg`` (already sanitised) as a one-page vector PDF of its size (``natural``, CSS pixels, at 72 points
    per 96 pixels), through MuPDF's SVG reader, which takes a user unit for a point."""
    import pymupdf

    try:
        with pymupdf.open(stream=svg.encode("utf-8"), filetype="svg") as drawing:  # type: ignore[no-untyped-call]
            shown = pymupdf.open("pdf", drawing.convert_to_pdf())  # type: ignore[no-untyped-call]
        with shown, pymupdf.open() as out:  # type: ignore[no-untyped-call]
            page = out.new_page(width=natural[0] * 0.75, height=natural[1] * 0.75)
            page.show_pdf_page(page.rect, shown, 0)
            return bytes(out.tobytes(garbage=3, deflate=True))
    except (RuntimeError, ValueError) as exc:
        raise ConversionError("render_failed", f"The SVG could not be converted to PDF: {exc}") from None


def trace(png: bytes, colour: bool, speckle: int, precision: int) -> str:
    """Pixels (a PNG) traced to SVG paths by vtracer: in colour, or black and white."""
    import vtracer

    try:
        return str(vtracer.convert_raw_image_to_svg(
            png, img_format="png", colormode="color" if colour else "binary", filter_speckle=speckle,
            color_precision=precision, mode="spline"))
    except (ValueError, RuntimeError) as exc:
        raise ConversionError("engine_failed", f"The image could not be traced: {exc}") from None

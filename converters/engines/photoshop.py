"""Photoshop documents (PSD, and PSB for large documents) through psd-tools: the flattened picture and the layers.

Before psd-tools parses anything, the file's header and its layer counts are read here with bounded
reads: the canvas is checked against the pixel limit (and its channels and depth against the memory
that many pixels may take), the layer counts against :data:`MAX_LAYERS`. The flattened picture is the
merged image Photoshop stores "for compatibility" when there is one, and otherwise composited from the
layers with what psd-tools draws on numpy alone.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from converters.base import ConversionError, Engine
from converters.inputs.limits import too_large

if TYPE_CHECKING:
    from PIL import Image
    from psd_tools import PSDImage
    from psd_tools.api.layers import Layer

PSD_TOOLS = Engine(
    name="psd-tools", module="psd_tools", distribution="psd-tools",
    install_hint="Install it with: pip install psd-tools",
)
PHOTOSHOP_FORMATS = ("psd", "psb")
MAX_LAYERS = 8000  # Photoshop's own limit for one document
BYTES_PER_PIXEL = 4  # the pixel limit is sized for 8-bit RGBA: more channels or bits must fit the same memory
MAX_TAGGED_BLOCKS = 10_000
# Leaf layers that hold a picture of their own (adjustment layers only change what lies below them).
PICTURE_KINDS = frozenset({"pixel", "type", "shape", "smartobject", "solidcolorfill", "patternfill", "gradientfill"})
# Blocks whose length field is 8 bytes long in a PSB (the file format specification's list).
_LONG_IN_PSB = {b"LMsk", b"Lr16", b"Lr32", b"Layr", b"Mt16", b"Mt32", b"Mtrn", b"Alph", b"FMsk", b"lnk2", b"FEid",
                b"FXid", b"PxSD"}
_LAYER_BLOCKS = (b"Lr16", b"Lr32", b"Layr")  # 16- and 32-bit documents keep their layers in these
# what psd-tools raises on a file that does not hold what it declares
_PARSE_ERRORS: tuple[type[Exception], ...] = (
    ValueError, OSError, EOFError, struct.error, zlib.error, AssertionError, KeyError, IndexError, TypeError,
    AttributeError, RecursionError,
)


@dataclass(frozen=True)
class Header:
    version: int  # 1: PSD, 2: PSB
    channels: int
    height: int
    width: int
    depth: int
    color_mode: int
    layers: int  # the most layers any of the file's layer sections declares


def read_header(path: Path) -> Header:
    """The file header and the layer counts, read without psd-tools (``damaged_input`` when they do not hold)."""
    size = path.stat().st_size
    with open(path, "rb") as f:
        head = f.read(26)
        if len(head) < 26 or head[:4] != b"8BPS":
            raise ConversionError("damaged_input", "This is not a Photoshop document.")
        version, channels, height, width, depth, color_mode = struct.unpack(">H6xHIIHH", head[4:26])
        if version not in (1, 2) or not 1 <= channels <= 56 or depth not in (1, 8, 16, 32):
            raise ConversionError("damaged_input", "The Photoshop header is not valid.")
        wide = 8 if version == 2 else 4
        try:
            _skip_section(f, 4, size)  # colour mode data
            _skip_section(f, 4, size)  # image resources
            layers = _layer_count(f, wide, size)
        except (struct.error, EOFError):
            raise ConversionError("damaged_input", "The Photoshop document is cut short.") from None
    return Header(version, channels, height, width, depth, color_mode, layers)


def _length(f: Any, wide: int) -> int:
    data = f.read(wide)
    if len(data) < wide:
        raise EOFError
    return int.from_bytes(data, "big")


def _skip_section(f: Any, wide: int, size: int) -> int:
    """Skip a length-prefixed section, returning where it ends."""
    end = f.tell() + wide + _length(f, wide)
    if end > size:
        raise EOFError
    f.seek(end)
    return end


def _layer_count(f: Any, wide: int, size: int) -> int:
    """The layer count of the layer info section, or of an Lr16/Lr32/Layr block when larger."""
    start = f.tell()
    end = start + wide + _length(f, wide)
    if end > size:
        raise EOFError
    if end == start + wide:
        return 0  # no layer section at all: only the merged image
    info_end = f.tell() + wide + _length(f, wide)
    if info_end > end:
        raise EOFError
    counts = [abs(struct.unpack(">h", f.read(2))[0]) if info_end >= f.tell() + 2 else 0]
    f.seek(info_end)
    if info_end + 4 > end:
        return counts[0]
    position = _skip_section(f, 4, end)  # the global layer mask info; tagged blocks follow
    for _ in range(MAX_TAGGED_BLOCKS):
        for padding in range(4):  # blocks may be padded to 2 or 4 bytes
            f.seek(position + padding)
            if f.read(4) in (b"8BIM", b"8B64"):
                break
        else:
            break
        if f.tell() + 8 > end:
            break
        key = f.read(4)
        body_length = _length(f, wide if key in _LONG_IN_PSB else 4)
        body = f.tell()
        if key in _LAYER_BLOCKS and body_length >= 2:
            counts.append(abs(struct.unpack(">h", f.read(2))[0]))
        position = body + body_length
        if position > end:
            break
    return max(counts)


def check(path: Path, limit: int) -> Header:
    """Refuse a document whose canvas, channels or layer count is over the limits."""
    header = read_header(path)
    pixels = header.width * header.height
    if pixels > limit:
        raise too_large("The Photoshop canvas", pixels, limit)
    if pixels * header.channels * max(1, header.depth // 8) > limit * BYTES_PER_PIXEL:
        raise ConversionError("input_too_large", f"The {header.channels} channels of {header.depth} bits over "
                                                 f"{pixels / 1e6:.0f} megapixels would take more memory than the "
                                                 f"{limit / 1e6:.0f}-megapixel limit allows.")
    if header.layers > MAX_LAYERS:
        raise ConversionError("input_too_large", f"The document declares {header.layers:,} layers; "
                                                 f"at most {MAX_LAYERS:,} are read.")
    return header


def open_document(path: Path, limit: int) -> PSDImage:
    """The document parsed by psd-tools, after :func:`check`; its drawing bounded by the pixel limit."""
    try:
        from psd_tools import PSDImage
    except ImportError:
        raise ConversionError("engine_missing", f"Photoshop documents need psd-tools. {PSD_TOOLS.install_hint}") \
            from None
    check(path, limit)
    try:
        # float32 RGBA working copies of a canvas at the limit: what a composite may allocate at once
        document = PSDImage.open(path, max_alloc_bytes=limit * 16)
        layers = sum(1 for _ in document.descendants())
    except MemoryError:
        raise ConversionError("input_too_large", "The Photoshop document needs more memory than allowed.") from None
    except _PARSE_ERRORS as exc:
        raise ConversionError("damaged_input", f"The Photoshop document cannot be read: {exc}") from None
    if layers > MAX_LAYERS:
        raise ConversionError("input_too_large", f"The document holds {layers:,} layers and groups; "
                              f"at most {MAX_LAYERS:,} are read.")
    return document


def _colours(document: PSDImage) -> tuple[bool, bytes | None]:
    """Whether psd-tools should convert the pixels to sRGB, and the colour profile the pictures carry instead.

    Pixels keep the document's own colour space with its profile attached (as for every other image input);
    only CMYK is converted through its profile, since the written formats hold RGB.
    """
    from psd_tools.constants import ColorMode, Resource

    profile = document.image_resources.get_data(Resource.ICC_PROFILE)
    if document.color_mode == ColorMode.CMYK:
        return True, None
    return False, bytes(profile) if profile else None


def _with_profile(image: Image.Image, profile: bytes | None) -> Image.Image:
    if profile:
        image.info["icc_profile"] = profile
    return image


def flattened(path: Path, limit: int, notes: list[str] | None = None) -> Image.Image:
    """The document as one picture: its stored merged image, else its visible layers composited.

    Layers psd-tools cannot draw without its optional extras (gradients need scipy, vector strokes aggdraw)
    are left out of a composite, and ``notes`` hears which.
    """
    document = open_document(path, limit)
    to_srgb, profile = _colours(document)
    try:
        try:
            return _with_profile(document.composite(apply_icc=to_srgb), profile)
        except ImportError:
            skipped: list[str] = []

            def drawable(layer: Layer) -> bool:
                if layer.kind in ("gradientfill", "shape") and layer.is_visible():
                    skipped.append(layer.name)
                    return False
                return bool(layer.is_visible())

            image = document.composite(layer_filter=drawable, apply_icc=to_srgb)
            if notes is not None and skipped:
                notes.append(f"Left out of the composite (they need psd-tools' drawing extras): {', '.join(skipped)}.")
            return _with_profile(image, profile)
    except MemoryError:
        raise ConversionError("input_too_large", "Compositing the document needs more memory than allowed.") from None
    except _PARSE_ERRORS as exc:
        raise ConversionError("damaged_input", f"The Photoshop document cannot be composited: {exc}") from None


def picture_layers(document: PSDImage) -> list[Layer]:
    """The leaf layers that hold a picture of their own, hidden ones too, bottom to top."""
    return [layer for layer in document.descendants() if not layer.is_group() and layer.kind in PICTURE_KINDS]


def draw_layer(document: PSDImage, layer: Layer, limit: int, *, trim: bool) -> tuple[Image.Image | None, str]:
    """One layer alone, on the document's canvas or cropped to its own bounds with ``trim``; ``(None, why)`` when
    there is nothing to draw or psd-tools cannot draw it without its optional extras."""
    width, height = (layer.width, layer.height) if trim else (document.width, document.height)
    if width * height > limit:
        raise too_large(f"Layer {layer.name!r}", width * height, limit)
    to_srgb, profile = _colours(document)
    try:
        image = layer.composite(viewport=None if trim else document.viewbox, layer_filter=lambda _: True,
                                apply_icc=to_srgb)
    except ImportError:
        return None, "it needs psd-tools' drawing extras (scipy, aggdraw)"
    except MemoryError:
        raise ConversionError("input_too_large", f"Layer {layer.name!r} needs more memory than allowed.") from None
    except _PARSE_ERRORS as exc:
        raise ConversionError("damaged_input", f"Layer {layer.name!r} cannot be drawn: {exc}") from None
    if image is None:
        return None, "it is empty"
    return _with_profile(image, profile), ""

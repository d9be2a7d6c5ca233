"""Camera RAW through rawpy (LibRaw): developed pictures, the preview the camera embedded, 16-bit output.

LibRaw reads the file's headers first (``open_file``) and the sensor data only when asked
(``unpack``/``postprocess``), so the image's size is checked against the pixel limit between the two:
a header that promises a gigantic sensor fails with ``input_too_large`` before any buffer is made.
LibRaw's parser is C; it runs only in the job's own process, never at job creation.
"""

from __future__ import annotations

import io
import struct
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from converters.base import ConversionError, Engine
from converters.inputs.limits import too_large

if TYPE_CHECKING:
    import numpy
    import rawpy
    from PIL import Image

RAWPY = Engine(name="rawpy", module="rawpy", distribution="rawpy", install_hint="Install it with: pip install rawpy")

RAW_FORMATS = ("dng", "cr2", "cr3", "nef", "arw", "raf", "orf", "rw2", "pef", "srw")
WhiteBalance = Literal["camera", "auto", "daylight"]
# LibRaw's flip codes (after dcraw) as the turn that makes the picture upright
_FLIP_TURNS = {3: "ROTATE_180", 5: "ROTATE_90", 6: "ROTATE_270"}


@dataclass(frozen=True)
class Development:
    """How a RAW file becomes a picture: the white balance, and 8 or 16 bits per channel."""

    white_balance: WhiteBalance = "camera"
    bits: Literal[8, 16] = 8


@dataclass
class Preview:
    """The picture a camera embedded in its RAW file: JPEG bytes as stored (when JPEG), and decoded upright."""

    image: Image.Image
    jpeg: bytes | None
    turned: bool  # the stored picture needed turning to be upright (so its bytes are not usable as they are)


@contextmanager
def opened(path: Path, limit: int) -> Iterator[rawpy.RawPy]:
    """The RAW file with its headers read and its size checked; its sensor data not yet read."""
    try:
        import rawpy
    except ImportError:
        raise ConversionError("engine_missing", f"Camera RAW needs rawpy. {RAWPY.install_hint}") from None
    try:
        raw = rawpy.imread(str(path))
    except rawpy.LibRawFileUnsupportedError:
        raise ConversionError("damaged_input", "LibRaw cannot read this RAW file: it is damaged, "
                                               "or from a camera LibRaw does not know.") from None
    except (rawpy.LibRawError, OSError, ValueError) as exc:
        raise ConversionError("damaged_input", f"The RAW file cannot be read: {exc}") from None
    try:
        check_size(raw, limit)
        yield raw
    except (rawpy.LibRawTooBigError, rawpy.LibRawUnsufficientMemoryError, rawpy.LibRawMemPoolOverflowError):
        raise ConversionError("input_too_large", "The RAW file needs more memory than LibRaw allows.") from None
    except (rawpy.LibRawError, ValueError) as exc:
        raise ConversionError("damaged_input", f"The RAW file cannot be decoded: {exc}") from None
    finally:
        raw.close()


def check_size(raw: rawpy.RawPy, limit: int) -> None:
    """Refuse a sensor (or its developed picture) over the pixel limit, from LibRaw's header sizes alone."""
    sizes = raw.sizes
    pixels = max(sizes.raw_width * sizes.raw_height, sizes.width * sizes.height, sizes.iwidth * sizes.iheight)
    if pixels > limit:
        raise too_large("The RAW image", pixels, limit)
    if not sizes.width or not sizes.height:
        raise ConversionError("damaged_input", "The RAW file declares no picture.")


def develop_array(path: Path, limit: int, development: Development) -> numpy.ndarray:
    """Demosaic, white-balance and colour-convert to sRGB: an (height, width, 3) array of 8 or 16 bits.

    The camera's orientation is applied. ``daylight`` is LibRaw's fixed daylight balance for the sensor,
    ``auto`` balances on the picture's own average, ``camera`` uses what the camera recorded (LibRaw falls
    back to daylight when the file holds none).
    """
    with opened(path, limit) as raw:
        return raw.postprocess(
            use_camera_wb=development.white_balance == "camera",
            use_auto_wb=development.white_balance == "auto",
            output_bps=development.bits,
        )


def developed(path: Path, limit: int, development: Development) -> Image.Image:
    """The RAW file developed to an 8-bit RGB picture (see :func:`develop_array`)."""
    from PIL import Image

    eight_bits = Development(development.white_balance, 8)
    return Image.fromarray(develop_array(path, limit, eight_bits), "RGB")


def embedded_preview(path: Path, limit: int) -> Preview | None:
    """The camera's own preview (``None`` when the file has none), upright; checked against the pixel limit."""
    import numpy
    import rawpy
    from PIL import Image

    with opened(path, limit) as raw:
        try:
            thumb = raw.extract_thumb()
        except (rawpy.LibRawNoThumbnailError, rawpy.LibRawUnsupportedThumbnailError):
            return None
        flip = raw.sizes.flip
    if thumb.format == rawpy.ThumbFormat.JPEG:
        jpeg = bytes(thumb.data)
        image = _decoded_jpeg(jpeg, limit)
    else:
        jpeg = None
        array = numpy.asarray(thumb.data)
        if array.ndim != 3 or array.shape[2] not in (1, 3) or array.shape[0] * array.shape[1] > limit:
            raise ConversionError("damaged_input", "The RAW file's embedded preview has an unusable layout.")
        image = Image.fromarray(array[:, :, 0] if array.shape[2] == 1 else array)
    turn = _FLIP_TURNS.get(flip)
    if turn is not None:
        image = image.transpose(getattr(Image.Transpose, turn))
    return Preview(image=image, jpeg=jpeg, turned=turn is not None)


def _decoded_jpeg(data: bytes, limit: int) -> Image.Image:
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(io.BytesIO(data)) as stored:
            if stored.width * stored.height > limit:
                raise too_large("The embedded preview", stored.width * stored.height, limit)
            stored.load()
            image = stored.convert("RGB") if stored.mode not in ("RGB", "L") else stored.copy()
            image.info.pop("exif", None)  # its orientation, if any, is what LibRaw's flip already says
            return image
    except (UnidentifiedImageError, OSError, ValueError, SyntaxError) as exc:
        raise ConversionError("damaged_input", f"The embedded preview cannot be read: {exc}") from None


# --------------------------------------------------------------------------- 16-bit files


def encode_16bit(array: numpy.ndarray, fmt: str) -> bytes:
    """An (height, width, 3) uint16 array as a 48-bit PNG or TIFF (Pillow writes only 8 bits per channel)."""
    if fmt == "png":
        return _png_16bit(array)
    if fmt == "tiff":
        return _tiff_16bit(array)
    raise ConversionError("unsupported_format", f"16 bits per channel are written as png or tiff, not {fmt}.")


def _png_16bit(array: numpy.ndarray) -> bytes:
    import numpy

    height, width, _ = array.shape
    rows = numpy.empty((height, 1 + width * 6), dtype=numpy.uint8)
    rows[:, 0] = 0  # filter type None on every row
    rows[:, 1:] = array.astype(">u2").reshape(height, width * 3).view(numpy.uint8)

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    header = struct.pack(">IIBBBBB", width, height, 16, 2, 0, 0, 0)  # 16 bits, truecolour, no interlace
    srgb = b"\x00"  # perceptual: LibRaw's output is sRGB
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"sRGB", srgb)
            + chunk(b"IDAT", zlib.compress(rows.tobytes(), 6)) + chunk(b"IEND", b""))


def _tiff_16bit(array: numpy.ndarray) -> bytes:
    import tifffile

    buffer = io.BytesIO()
    options: dict[str, Any] = {"photometric": "rgb", "compression": "zlib", "predictor": True}
    tifffile.imwrite(buffer, array, **options)
    return buffer.getvalue()

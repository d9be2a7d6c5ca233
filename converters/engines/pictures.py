# PyMuPDF annotates only part of its API; calls into the rest are untyped by no fault of ours.
# mypy: disable-error-code="no-untyped-call"
"""Pillow (+ pillow-heif for HEIC): opening, decoding and encoding images for every tool that handles them.

The image tools and the PDF tools that take images (``pdf-merge``, ``image-to-pdf``) open them
through :func:`open_image`. Three kinds of input become pixels before Pillow sees them: SVG (rendered
by resvg), camera RAW (developed by LibRaw, :mod:`converters.engines.rawphoto`) and Photoshop
documents (flattened by psd-tools, :mod:`converters.engines.photoshop`).

Every image is opened lazily and its header size checked against the pixel
limit before any pixels are decoded, so a decompression bomb fails the job
with ``input_too_large`` instead of taking the worker's memory.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from converters.base import ConversionError, Engine, InputFile, ToolEnv
from converters.engines import photoshop, rawphoto
from converters.engines.photoshop import PHOTOSHOP_FORMATS
from converters.engines.rawphoto import RAW_FORMATS, Development
from converters.inputs.limits import pixel_limit, too_large

if TYPE_CHECKING:
    from PIL import Image

PILLOW = Engine(name="Pillow", module="PIL", distribution="pillow", install_hint="Install it with: pip install pillow")
PILLOW_HEIF = Engine(
    name="pillow-heif",
    module="pillow_heif",
    distribution="pillow-heif",
    install_hint="Install it with: pip install pillow-heif",
)

# What the image tools write; they read these and the formats after them, which Pillow decodes but
# nobody needs made anew (a TGA or PCX becomes a PNG when the output is "keep").
WRITABLE_FORMATS = ("png", "jpg", "webp", "avif", "heic", "tiff", "bmp", "gif", "ico", "jxl", "jp2", "qoi")
READ_ONLY_FORMATS = ("tga", "dds", "pcx", "icns", "sgi", "xbm", "ppm", "pgm", "pbm", *PHOTOSHOP_FORMATS, "svg", "svgz",
                     *RAW_FORMATS)
VECTOR_FORMATS = ("svg", "svgz")  # rendered by resvg at their own size (96 dpi) before any tool sees pixels
IMAGE_FORMATS = WRITABLE_FORMATS + READ_ONLY_FORMATS
ANIMATED = frozenset({"gif", "webp", "png", "avif"})  # both ends must be one of these to keep the animation
LOSSY = frozenset({"jpg", "webp", "avif", "heic", "jxl"})
PIL_NAMES = {
    "png": "PNG", "jpg": "JPEG", "webp": "WEBP", "avif": "AVIF", "heic": "HEIF",
    "tiff": "TIFF", "bmp": "BMP", "gif": "GIF", "ico": "ICO", "jxl": "JXL", "jp2": "JPEG2000", "qoi": "QOI",
    "tga": "TGA", "dds": "DDS", "pcx": "PCX", "icns": "ICNS", "sgi": "SGI", "xbm": "XBM", "ppm": "PPM",
    "pgm": "PPM", "pbm": "PPM", "psd": "PSD",
}
LAYERED = frozenset(PHOTOSHOP_FORMATS)  # their layers are not frames: the picture is the flattened composite
ICO_SIZES = (16, 24, 32, 48, 64, 128, 256)
ANIMATION_PIXEL_FACTOR = 4  # all frames of an animation together may hold 4x the single-image limit
# TIFF's own layout (size, strips, compression ...) shows up in getexif() of a TIFF; never carry it over.
TIFF_LAYOUT_TAGS = (
    256, 257, 258, 259, 262, 266, 273, 277, 278, 279, 284, 317, 320, 322, 323, 324, 325, 338, 339, 347,
)
HEX_COLOUR = r"^#([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$"


PILLOW_JXL = Engine(
    name="pillow-jxl-plugin",
    module="pillow_jxl",
    distribution="pillow-jxl-plugin",
    install_hint="Install it with: pip install pillow-jxl-plugin",
)


def register_plugins(fmt: str | None = None) -> None:
    """Teach Pillow HEIC (and AVIF when Pillow was built without it) through pillow-heif, JPEG XL through
    pillow-jxl-plugin."""
    from PIL import features

    if fmt in (None, "jxl"):
        try:
            import pillow_jxl  # noqa: F401 - importing it registers the JXL plugin
        except ImportError:
            if fmt == "jxl":
                raise ConversionError("engine_missing", "JPEG XL needs pillow-jxl-plugin: "
                                                        "pip install pillow-jxl-plugin") from None
    if fmt not in (None, "heic", "avif"):
        return
    try:
        import pillow_heif
    except ImportError:
        if fmt == "heic":
            raise ConversionError("engine_missing", "HEIC needs pillow-heif: pip install pillow-heif") from None
        return
    pillow_heif.register_heif_opener()
    if not features.check("avif") and hasattr(pillow_heif, "register_avif_opener"):
        pillow_heif.register_avif_opener()


@contextmanager
def pillow_pixel_limit(limit: int | None) -> Iterator[None]:
    """Pillow's own bomb check (``Image.MAX_IMAGE_PIXELS``) at ``limit`` for the ``with`` block, its
    warnings silenced (Pillow warns past the limit and raises past twice it; the caller refuses at the
    limit itself), then put back. ``None``: no check, for an ``open()`` (which reads the header only)
    whose size the caller checks itself, in its own words.

    The value is process-wide, and a conversion child runs job after job: a tool that left it at
    ``None`` would leave every later job in that process without the check, which is all that stands
    between an image nested in another (an ICNS icon's PNG, decoded only on ``load()``) and a
    decompression bomb taking all the memory there is.
    """
    import warnings

    from PIL import Image

    before = Image.MAX_IMAGE_PIXELS
    Image.MAX_IMAGE_PIXELS = limit
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            yield
    finally:
        Image.MAX_IMAGE_PIXELS = before


def open_image(
    path: Path, fmt: str, limit: int, raw: Development | None = None, notes: list[str] | None = None
) -> Image.Image:
    """Open ``path`` lazily, refusing it (``input_too_large``) when its header promises too many pixels.

    SVG is rendered, camera RAW developed (as ``raw`` says) and a Photoshop document flattened here, each
    after its own size check; ``notes`` hears what the flattening left out.
    """
    from PIL import Image, UnidentifiedImageError

    if fmt in VECTOR_FORMATS:
        return svg_image(path, fmt, limit)
    if fmt in RAW_FORMATS:
        return rawphoto.developed(path, limit, raw or Development())
    if fmt in PHOTOSHOP_FORMATS:
        return photoshop.flattened(path, limit, notes)
    register_plugins(fmt)
    # Pillow checks for bombs in open(); for that call its limit follows ours (it errors at twice the
    # limit, we refuse at the limit), then the process-wide value is put back for other code.
    try:
        with pillow_pixel_limit(limit):
            image = Image.open(path)
    except Image.DecompressionBombError:
        raise ConversionError("input_too_large", f"The image is over the {limit / 1e6:.0f}-megapixel limit.") from None
    except (UnidentifiedImageError, OSError, ValueError, SyntaxError, RuntimeError) as exc:  # RuntimeError: libheif
        raise ConversionError("damaged_input", f"The image cannot be read: {exc}") from None
    width, height = image.size
    if width * height > limit:
        image.close()
        raise too_large("The image", width * height, limit)
    try:  # some plugins read their frame (or layer) table only when asked
        frames = 1 if fmt in LAYERED else getattr(image, "n_frames", 1)
    except (OSError, ValueError, SyntaxError, EOFError) as exc:
        image.close()
        raise ConversionError("damaged_input", f"The image cannot be read: {exc}") from None
    if frames > 1 and width * height * frames > limit * ANIMATION_PIXEL_FACTOR:
        image.close()
        raise too_large(f"The {frames} frames together", width * height * frames, limit * ANIMATION_PIXEL_FACTOR)
    return image


def svg_image(path: Path, fmt: str, limit: int) -> Image.Image:
    """An SVG rendered at its own size, outside references removed first (see :mod:`converters.engines.vectors`)."""
    import io

    from PIL import Image

    from converters.engines import vectors

    root, _ = vectors.sanitise(vectors.read_svg(path, fmt))
    size = vectors.pixel_size(vectors.natural_size(root), None, None, limit)
    return Image.open(io.BytesIO(vectors.render_png(vectors.markup(root), size)))


def precheck_images(inputs: Sequence[InputFile], env: ToolEnv | None) -> None:
    """At job creation: read each image's header only, refusing bombs and unreadable files."""
    from converters.engines import vectors

    limit = pixel_limit(env)
    for source in inputs:
        if source.format in VECTOR_FORMATS:  # parsed and measured, not rendered, in the API's process
            root, _ = vectors.sanitise(vectors.read_svg(source.path, source.format))
            vectors.pixel_size(vectors.natural_size(root), None, None, limit)
        elif source.format in PHOTOSHOP_FORMATS:  # header and layer counts only
            photoshop.check(source.path, limit)
        elif source.format in RAW_FORMATS:
            continue  # LibRaw's parser is C: it reads the headers in the job's own process, not the API's
        elif source.format in IMAGE_FORMATS:
            open_image(source.path, source.format, limit).close()


@dataclass
class Picture:
    """A decoded image: its frames (one unless animated), their durations and the metadata to carry."""

    frames: list[Image.Image]
    durations: list[int] = field(default_factory=list)
    loop: int = 0
    exif: bytes = b""
    icc_profile: bytes | None = None
    source_format: str = ""

    @property
    def animated(self) -> bool:
        return len(self.frames) > 1

    @property
    def size(self) -> tuple[int, int]:
        return self.frames[0].size


def _normalise_mode(image: Image.Image) -> Image.Image:
    """Bring rare modes (16-bit grey, float, 1-bit, LAB ...) to L, LA, RGB, RGBA, P or CMYK."""
    mode = image.mode
    if mode.startswith("I;16") or mode == "I":
        return image.convert("I").point(lambda value: value / 256).convert("L")
    if mode == "F":
        return image.convert("L")
    if mode == "1":
        return image.convert("L")
    if mode in ("YCbCr", "LAB", "HSV", "RGBX"):
        return image.convert("RGB")
    if mode in ("La", "RGBa", "PA"):
        return image.convert("RGBA")
    return image


def load_picture(
    path: Path,
    fmt: str,
    env: ToolEnv | None,
    check: Callable[[], None] = lambda: None,
    *,
    all_frames: bool = True,
    progress: Callable[[float], None] = lambda fraction: None,
    raw: Development | None = None,
    notes: list[str] | None = None,
) -> Picture:
    """Decode ``path`` with EXIF orientation applied; every frame when animated and ``all_frames``.

    ``progress`` hears the fraction of frames decoded; ``raw`` and ``notes`` go to :func:`open_image`.
    """
    from PIL import Image, ImageOps, ImageSequence

    image = open_image(path, fmt, pixel_limit(env), raw, notes)
    try:
        exif = image.getexif()
        picture = Picture(frames=[], loop=int(image.info.get("loop", 0) or 0), source_format=fmt)
        picture.icc_profile = image.info.get("icc_profile") or None
        all_frames = all_frames and fmt not in LAYERED
        count = getattr(image, "n_frames", 1) if all_frames else 1
        frames = ImageSequence.Iterator(image) if all_frames else [image]
        for number, frame in enumerate(frames, start=1):
            check()
            # exif_transpose returns a new image (a copy when upright already), detached from the sequence.
            upright = _normalise_mode(ImageOps.exif_transpose(frame))
            picture.frames.append(upright)
            picture.durations.append(int(frame.info.get("duration", 100) or 100))
            progress(number / count)
        for tag in (0x0112, *TIFF_LAYOUT_TAGS):  # Orientation is applied; layout tags describe the old file
            exif.pop(tag, None)
        picture.exif = exif.tobytes() if len(exif) else b""
    except ConversionError:
        raise
    except Image.DecompressionBombError:  # an image inside the file (an ICNS's PNG) larger than its header said
        raise ConversionError("input_too_large", "An image inside the file is over the pixel limit.") from None
    except (OSError, ValueError, SyntaxError, EOFError, RuntimeError) as exc:
        raise ConversionError("damaged_input", f"The image cannot be decoded: {exc}") from None
    finally:
        image.close()
    return picture


def has_alpha(image: Image.Image) -> bool:
    return image.mode in ("RGBA", "LA", "PA") or (image.mode == "P" and "transparency" in image.info)


def flatten(image: Image.Image, background: str) -> Image.Image:
    """Composite a transparent image onto ``background`` (for formats without alpha)."""
    from PIL import Image, ImageColor

    rgba = image.convert("RGBA")
    canvas = Image.new("RGBA", rgba.size, ImageColor.getrgb(background))
    canvas.alpha_composite(rgba)
    return canvas.convert("RGB")


def fit_mode(image: Image.Image, fmt: str, background: str) -> Image.Image:
    """Convert ``image`` to a mode ``fmt`` can store, flattening alpha where the format has none."""
    from PIL import Image

    mode = image.mode
    if fmt == "jpg":
        if has_alpha(image):
            return flatten(image, background)
        return image if mode in ("L", "RGB", "CMYK") else image.convert("RGB")
    if fmt == "ico":
        square = max(image.size)
        canvas = Image.new("RGBA", (square, square), (0, 0, 0, 0))
        canvas.paste(image.convert("RGBA"), ((square - image.width) // 2, (square - image.height) // 2))
        return canvas
    if fmt in ("gif", "png", "tiff") and mode in ("L", "LA", "P", "RGB", "RGBA"):
        return image
    if fmt == "tiff" and mode == "CMYK":
        return image
    if fmt == "bmp" and mode in ("L", "P", "RGB", "RGBA"):
        return image
    if fmt in ("jxl", "jp2") and mode in ("L", "LA", "RGB", "RGBA"):
        return image
    return image.convert("RGBA" if has_alpha(image) else "RGB")


def save_options(fmt: str, quality: int, picture: Picture, strip_metadata: bool) -> dict[str, Any]:
    """Pillow's ``save`` keywords for ``fmt``: quality, metadata, and sensible encoder effort."""
    options: dict[str, Any] = {}
    if fmt == "jpg":
        options.update(quality=quality)
    elif fmt == "webp":
        options.update(quality=quality, method=4)
    elif fmt in ("avif", "heic"):
        options.update(quality=quality)
    elif fmt == "png":
        options.update(compress_level=6)
    elif fmt == "tiff":
        options.update(compression="tiff_adobe_deflate")
    elif fmt == "jxl":
        options.update(quality=quality, effort=7)
    elif fmt == "jp2":
        options.update(irreversible=False)  # lossless, the reason people pick JPEG 2000 for archives
    elif fmt == "ico":
        largest = min(256, max(picture.size))  # frames are padded square by fit_mode
        options.update(sizes=[(s, s) for s in ICO_SIZES if s <= largest] or [(largest, largest)])
    if picture.icc_profile and fmt in ("jpg", "png", "webp", "avif", "heic", "tiff"):
        options["icc_profile"] = picture.icc_profile
    if picture.exif and not strip_metadata and fmt in ("jpg", "png", "webp", "avif", "heic", "tiff"):
        options["exif"] = picture.exif
    return options


def encode(
    picture: Picture,
    fmt: str,
    quality: int,
    *,
    strip_metadata: bool,
    background: str,
    extra: dict[str, Any] | None = None,
) -> bytes:
    """The picture written as ``fmt`` in memory; animation kept when both ends support it.

    ``extra`` overrides Pillow save options (e.g. more encoder effort when compressing).
    """
    register_plugins(fmt)
    frames = [fit_mode(frame, fmt, background) for frame in picture.frames]
    for frame in frames:
        frame.info.pop("exif", None)  # only what save_options passes is written
    options = save_options(fmt, quality, picture, strip_metadata) | (extra or {})
    keep_frames = picture.animated and (
        (fmt in ANIMATED and picture.source_format in ANIMATED) or (fmt == picture.source_format == "tiff")
    )
    if keep_frames:
        options.update(save_all=True, append_images=frames[1:])
        if fmt != "tiff":
            options.update(duration=picture.durations, loop=picture.loop)
    buffer = io.BytesIO()
    try:
        frames[0].save(buffer, PIL_NAMES[fmt], **options)
    except (OSError, ValueError, KeyError) as exc:
        raise ConversionError("encode_failed", f"Could not write {fmt}: {exc}") from None
    return buffer.getvalue()



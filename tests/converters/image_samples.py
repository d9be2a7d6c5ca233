"""Sample images the tests make for themselves: photos, alpha, animations, EXIF, bombs, damage."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

from PIL import Image, ImageDraw

from converters.engines.pictures import PIL_NAMES, register_plugins

# Magic numbers checked independently of the code under test.
MAGIC: dict[str, tuple[int, bytes]] = {
    "png": (0, b"\x89PNG\r\n\x1a\n"),
    "jpg": (0, b"\xff\xd8\xff"),
    "gif": (0, b"GIF8"),
    "webp": (8, b"WEBP"),
    "avif": (4, b"ftypavi"),
    "heic": (4, b"ftyphei"),
    "tiff": (0, b"II*\x00"),
    "bmp": (0, b"BM"),
    "ico": (0, b"\x00\x00\x01\x00"),
    "pdf": (0, b"%PDF-"),
    "jxl": (0, b"\xff\x0a"),  # a bare codestream; the container is checked in has_magic
    "jp2": (4, b"jP  "),
    "qoi": (0, b"qoif"),
}


def has_magic(path: Path, fmt: str) -> bool:
    offset, magic = MAGIC[fmt]
    head = path.read_bytes()[: offset + len(magic) + 8]
    if fmt == "avif":  # the brand is avif (still) or avis (animated)
        return head[4:11] == magic
    if fmt == "tiff":
        return head[:4] in (b"II*\x00", b"MM\x00*")
    if fmt == "jxl":
        return head[:2] == magic or head[4:8] == b"JXL "
    return head[offset : offset + len(magic)] == magic


def photo(size: tuple[int, int], seed: int = 0) -> Image.Image:
    """A photo-like RGB image: smooth gradients plus sensor-like noise (JPEG and palettes both work hard)."""
    width, height = size
    red = Image.linear_gradient("L").resize(size).rotate(seed * 37 % 360)
    green = Image.radial_gradient("L").resize(size)
    blue = Image.effect_noise(size, 60 + seed % 20)
    base = Image.merge("RGB", (red, green, blue))
    noise = Image.effect_noise(size, 25).convert("RGB")
    image = Image.blend(base, noise, 0.25)
    draw = ImageDraw.Draw(image)
    draw.ellipse((width // 4, height // 4, width // 2, height // 2), fill=(200, 40, 40))
    return image


def with_alpha(size: tuple[int, int]) -> Image.Image:
    """RGBA: a transparent canvas with an opaque green square in the middle."""
    image = Image.new("RGBA", size, (0, 0, 0, 0))
    draw = ImageDraw.Draw(image)
    width, height = size
    draw.rectangle((width // 4, height // 4, 3 * width // 4, 3 * height // 4), fill=(0, 160, 0, 255))
    return image


def write_image(path: Path, fmt: str, size: tuple[int, int] = (64, 48), *, alpha: bool = False) -> Path:
    """Write a still sample image of ``size`` as ``fmt`` (pillow-heif for HEIC)."""
    register_plugins(fmt)
    image = with_alpha(size) if alpha else photo(size)
    if fmt == "jpg" or (fmt == "bmp" and not alpha):
        image = image.convert("RGB")
    image = image.convert({"xbm": "1", "pbm": "1", "pgm": "L", "ppm": "RGB", "pcx": "RGB", "sgi": "RGB"}.get(
        fmt, image.mode))
    if fmt == "icns":  # icons are square
        image = image.resize((max(size), max(size)))
    options = {"quality": 90} if fmt in ("jpg", "webp", "avif", "heic") else {}
    if fmt == "ico":
        options = {"sizes": [(min(size), min(size))]}
    image.save(path, PIL_NAMES[fmt], **options)
    return path


def write_animation(path: Path, fmt: str, frames: int = 3, size: tuple[int, int] = (40, 30)) -> Path:
    """An animation of ``frames`` distinct coloured frames, 100 ms each, looping."""
    register_plugins(fmt)
    images = [Image.new("RGB", size, (60 * i % 256, 255 - 60 * i % 256, 90)) for i in range(frames)]
    images[0].save(path, PIL_NAMES[fmt], save_all=True, append_images=images[1:], duration=100, loop=0)
    return path


def write_oriented_jpeg(path: Path, size: tuple[int, int] = (80, 40), orientation: int = 6) -> Path:
    """A JPEG stored landscape whose EXIF says "rotate 90° clockwise to view" (orientation 6)."""
    image = photo(size)
    exif = image.getexif()
    exif[0x0112] = orientation
    exif[0x010F] = "FileKiln Test Camera"  # Make, to see metadata kept or stripped
    image.save(path, "JPEG", quality=90, exif=exif.tobytes())
    return path


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def write_png_bomb(path: Path, width: int = 30000, height: int = 30000) -> Path:
    """A tiny file whose PNG header claims ``width`` x ``height`` pixels (a decompression bomb's shape)."""
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    rows = zlib.compress(b"\x00" * 64)
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", header) + _chunk(b"IDAT", rows) + _chunk(b"IEND", b""))
    return path


def write_truncated(path: Path, fmt: str = "png") -> Path:
    """A real image cut short: the header is fine, the pixels are missing."""
    full = write_image(path.with_name("full-" + path.name), fmt, (200, 150))
    data = full.read_bytes()
    path.write_bytes(data[: len(data) // 3])
    return path

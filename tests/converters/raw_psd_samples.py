"""Camera RAW and Photoshop samples: Bayer DNGs written by pidng, layered PSD/PSB written by psd-tools, and the
real files of other projects' source distributions (fetched by tests/samples_cache.py)."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy
from PIL import Image

from tests.samples_cache import sdist_files

# linear sRGB primaries as the "camera" sees them: ColorMatrix1 (XYZ -> camera) is XYZ -> linear sRGB
XYZ_TO_SRGB = ((3.2406, -1.5372, -0.4986), (-0.9689, 1.8758, 0.0415), (0.0557, -0.2040, 1.0570))
BANDS = ((0.6, 0.05, 0.05), (0.05, 0.6, 0.05), (0.05, 0.05, 0.6), (0.3, 0.3, 0.3))  # red, green, blue, grey
BLACK, WHITE = 256, 4095
DNG_SIZE = (128, 64)

DNGPY = "0.1.3"  # its sdist carries the Adobe DNG SDK's sample files
PYTOSHOP = "1.2.1"  # its sdist carries the PSD files psd-tools' test suite was built on
HACHOIR = "3.4.0"  # a Canon CR2 cut short at 96 KB, in its tests/files
LAYER_COLOURS = {"Sky": (40, 90, 200), "Sun": (250, 200, 30), "Hidden note": (10, 160, 60)}


def bayer_dng(path: Path, *, neutral: tuple[float, float, float] = (1, 1, 1), orientation: int = 1) -> Path:
    """A 128x64 RGGB Bayer DNG of four vertical bands (red, green, blue, grey) as seen under a light whose
    camera neutral is ``neutral`` (recorded as AsShotNeutral, the camera's white balance)."""
    from pidng.core import RAW2DNG, DNGTags, Tag
    from pidng.defs import CalibrationIlluminant, CFAPattern, DNGVersion, PhotometricInterpretation

    width, height = DNG_SIZE
    scene = numpy.zeros((height, width, 3))
    step = width // len(BANDS)
    for index, colour in enumerate(BANDS):
        scene[:, index * step:(index + 1) * step] = colour
    scene *= numpy.array(neutral)
    mosaic = numpy.empty((height, width))
    mosaic[0::2, 0::2] = scene[0::2, 0::2, 0]
    mosaic[0::2, 1::2] = scene[0::2, 1::2, 1]
    mosaic[1::2, 0::2] = scene[1::2, 0::2, 1]
    mosaic[1::2, 1::2] = scene[1::2, 1::2, 2]
    data = (BLACK + mosaic * (WHITE - BLACK)).round().astype(numpy.uint16)
    tags = DNGTags()
    for tag, value in (
        (Tag.ImageWidth, width), (Tag.ImageLength, height), (Tag.TileWidth, width), (Tag.TileLength, height),
        (Tag.Orientation, orientation), (Tag.PhotometricInterpretation, PhotometricInterpretation.Color_Filter_Array),
        (Tag.SamplesPerPixel, 1), (Tag.BitsPerSample, 16), (Tag.CFARepeatPatternDim, [2, 2]),
        (Tag.CFAPattern, CFAPattern.RGGB), (Tag.BlackLevel, BLACK), (Tag.WhiteLevel, WHITE),
        (Tag.ColorMatrix1, [[round(v * 10000), 10000] for row in XYZ_TO_SRGB for v in row]),
        (Tag.CalibrationIlluminant1, CalibrationIlluminant.D65),
        (Tag.AsShotNeutral, [[round(n * 1000), 1000] for n in neutral]),
        (Tag.Make, "FileKiln"), (Tag.Model, "Bayer test"),
        (Tag.DNGVersion, DNGVersion.V1_4), (Tag.DNGBackwardVersion, DNGVersion.V1_2),
    ):
        tags.set(tag, value)
    writer = RAW2DNG()
    writer.options(tags, path="", compress=False)
    path.write_bytes(bytes(writer.convert(data)))
    return path


def band_centres(size: tuple[int, int]) -> list[tuple[int, int]]:
    width, height = size
    step = width // len(BANDS)
    return [(index * step + step // 2, height // 2) for index in range(len(BANDS))]


def layered_psd(path: Path, *, psb: bool = False) -> Path:
    """A 60x40 white document with three opaque layers (one hidden), uncompressed so it can become a PSB:
    'Sky' 60x20 at the top, 'Sun' 10x10 at (40, 5), 'Hidden note' 20x10 at (5, 25)."""
    from psd_tools import PSDImage
    from psd_tools.api.layers import PixelLayer
    from psd_tools.constants import Compression

    document = PSDImage.new("RGB", (60, 40), color=(255, 255, 255), compression=Compression.RAW)
    places = {"Sky": ((60, 20), 0, 0), "Sun": ((10, 10), 5, 40), "Hidden note": ((20, 10), 25, 5)}
    for name, (size, top, left) in places.items():
        layer = PixelLayer.frompil(Image.new("RGB", size, LAYER_COLOURS[name]), document, name, top, left,
                                   compression=Compression.RAW)
        document.append(layer)
    document[2].visible = False
    document.save(path)
    if psb:
        # RAW-compressed channels are the same bytes in both versions; only the length fields widen
        reopened = PSDImage.open(path)
        reopened._record.header.version = 2
        with open(path, "wb") as f:
            reopened._record.write(f)
    return path


def tiff_header(make: bytes, *, magic: bytes = b"II*\x00", extra: list[tuple[int, int, int, int]] = ()) -> bytes:
    """A little-endian TIFF whose IFD0 holds Make (and ``extra`` (tag, type, count, value) entries), then padding."""
    entries = [(0x010F, 2, len(make) + 1, 200)] + list(extra)
    ifd = struct.pack("<H", len(entries)) + b"".join(struct.pack("<HHII", *entry) for entry in sorted(entries))
    body = magic + struct.pack("<I", 8) + ifd + struct.pack("<I", 0)
    return body.ljust(200, b"\x00") + make + b"\x00" + bytes(600)


def dngpy_sample(name: str) -> Path:
    return sdist_files("dngpy", DNGPY, f"*/extern/sample_files/{name}")[0]


def pytoshop_sample(name: str) -> Path:
    return sdist_files("pytoshop", PYTOSHOP, f"*/tests/psd_files/{name}")[0]


def hachoir_cr2() -> Path:
    return sdist_files("hachoir", HACHOIR, "*/tests/files/canon.raw.cr2")[0]

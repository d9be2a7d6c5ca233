"""Camera RAW and Photoshop documents through the image tools: Bayer DNGs written by pidng (known colours, white
balance, orientation, 16 bits), the Adobe DNG SDK's own samples (dngpy's sdist), PSD files from pytoshop's sdist
(8/16/32-bit, greyscale, groups, masks), and layered PSD/PSB documents written by psd-tools, read back with
Pillow, PyAV, tifffile and psd-tools itself."""

from __future__ import annotations

import struct
from pathlib import Path

import av
import numpy
import pymupdf
import pytest
import tifffile
from PIL import Image
from psd_tools import PSDImage

from converters.base import ConversionError
from converters.catalogue import load_catalogue
from converters.engines.photoshop import read_header
from converters.engines.rawphoto import RAW_FORMATS
from converters.inputs.sniff import sniff
from tests.converters import raw_psd_samples as samples
from tests.converters.runtool import run_tool


def rgb(path: Path) -> Image.Image:
    image = Image.open(path)
    image.load()
    return image.convert("RGB")


def dominant(pixel: tuple[int, ...]) -> int:
    return max(range(3), key=lambda channel: pixel[channel])


# --------------------------------------------------------------------------- sniffing


@pytest.mark.parametrize(("head", "fmt"), [
    (b"II*\x00\x10\x00\x00\x00CR\x02\x00" + bytes(100), "cr2"),
    (b"\x00\x00\x00\x18ftypcrx \x00\x00\x00\x01crx isom" + bytes(100), "cr3"),
    (b"FUJIFILMCCD-RAW 0201FF383501" + bytes(100), "raf"),
    (b"IIRO\x08\x00\x00\x00" + bytes(100), "orf"),
    (b"IIRS\x08\x00\x00\x00" + bytes(100), "orf"),
    (b"MMOR\x00\x00\x00\x08" + bytes(100), "orf"),
    (b"IIU\x00\x08\x00\x00\x00" + bytes(100), "rw2"),
    (samples.tiff_header(b"NIKON CORPORATION", extra=[(0x00FE, 4, 1, 1)]), "nef"),
    (samples.tiff_header(b"SONY", extra=[(0x014A, 4, 1, 400)]), "arw"),
    (samples.tiff_header(b"PENTAX Corporation", extra=[(0x0106, 3, 1, 32803)]), "pef"),
    (samples.tiff_header(b"SAMSUNG", extra=[(0x014A, 4, 1, 400)]), "srw"),
    (samples.tiff_header(b"Any maker", extra=[(0xC612, 1, 4, 0x00000401)]), "dng"),
    # a picture saved as TIFF with a Nikon camera's EXIF carried over stays a TIFF
    (samples.tiff_header(b"NIKON CORPORATION", extra=[(0x0106, 3, 1, 2)]), "tiff"),
    (samples.tiff_header(b"NIKON CORPORATION", magic=b"II*\x00"), "tiff"),
    (b"8BPS\x00\x01" + bytes(100), "psd"),
    (b"8BPS\x00\x02" + bytes(100), "psb"),
])
def test_camera_raw_and_photoshop_files_are_known_by_their_bytes(tmp_path: Path, head: bytes, fmt: str) -> None:
    path = tmp_path / "upload.bin"
    path.write_bytes(head)
    assert sniff(path, "photo.tif") == fmt


def test_made_and_real_files_sniff_as_their_formats(tmp_path: Path) -> None:
    assert sniff(samples.bayer_dng(tmp_path / "a.dng"), "a") == "dng"
    assert sniff(samples.dngpy_sample("06_PGTM2_unsigned16.dng"), "x") == "dng"
    assert sniff(samples.hachoir_cr2(), "x") == "cr2"
    assert sniff(samples.layered_psd(tmp_path / "l.psb", psb=True), "x") == "psb"
    tiff = tmp_path / "plain.tif"
    exif = Image.Exif()
    exif[0x010F] = "NIKON CORPORATION"
    Image.new("RGB", (8, 8)).save(tiff, exif=exif)
    assert sniff(tiff, "plain.tif") == "tiff"


def test_every_image_tool_takes_raw_and_photoshop_files() -> None:
    for tool_id in ("image-convert", "image-resize", "image-compress", "image-rotate", "image-to-pdf", "pdf-merge"):
        tool = load_catalogue().get(tool_id)
        assert tool is not None and {*RAW_FORMATS, "psd", "psb"} <= set(tool.accepts), tool_id


def test_convert_params_for_raw_and_layers_are_camel_case() -> None:
    tool = load_catalogue().get("image-convert")
    assert tool is not None
    props = tool.params.model_json_schema(by_alias=True)["properties"]
    assert props["rawWhiteBalance"]["enum"] == ["camera", "auto", "daylight"]
    assert props["rawBitDepth"]["enum"] == [8, 16] and props["rawBitDepth"]["default"] == 8
    assert props["layers"]["enum"] == ["flatten", "each"] and props["layers"]["default"] == "flatten"
    assert props["rawPreview"]["default"] is False and props["trimLayers"]["default"] is False
    assert all(prop.get("description") for prop in props.values())


# --------------------------------------------------------------------------- camera RAW


def test_a_bayer_dng_develops_to_its_colours(tmp_path: Path) -> None:
    source = samples.bayer_dng(tmp_path / "bands.dng")
    [output] = run_tool("image-convert", [source], tmp_path / "out", output_format="png").outputs
    image = rgb(output)
    assert image.size == samples.DNG_SIZE
    red, green, blue, grey = (image.getpixel(xy) for xy in samples.band_centres(image.size))
    assert (dominant(red), dominant(green), dominant(blue)) == (0, 1, 2)
    assert min(red[0], green[1], blue[2]) > 200 and max(red[1:] + green[::2] + blue[:2]) < 120
    assert max(grey) - min(grey) <= 6 and 120 < grey[0] < 230  # a mid grey stays grey


@pytest.mark.parametrize(("balance", "neutral_grey"), [("camera", True), ("auto", True), ("daylight", False)])
def test_white_balance_camera_auto_or_daylight(tmp_path: Path, balance: str, neutral_grey: bool) -> None:
    """Under a light that halves red, the camera's recorded balance (and the auto one) bring the grey back;
    daylight balance leaves it tinted."""
    source = samples.bayer_dng(tmp_path / "tinted.dng", neutral=(0.5, 1.0, 0.8))
    [output] = run_tool("image-convert", [source], tmp_path / balance, {"rawWhiteBalance": balance}, "png").outputs
    image = rgb(output)
    grey = image.getpixel(samples.band_centres(image.size)[3])
    assert isinstance(grey, tuple)
    if neutral_grey:
        assert max(grey) - min(grey) <= 6, grey
    else:
        assert grey[1] - grey[0] > 30, grey  # red held back, as the light had it


def test_the_camera_orientation_is_applied(tmp_path: Path) -> None:
    source = samples.bayer_dng(tmp_path / "turned.dng", orientation=6)  # "turn 90 degrees clockwise to view"
    [output] = run_tool("image-resize", [source], tmp_path / "out", {"percent": 100}).outputs
    assert output.name == "turned.png"
    image = rgb(output)
    assert image.size == (samples.DNG_SIZE[1], samples.DNG_SIZE[0])
    top, bottom = image.getpixel((32, 8)), image.getpixel((32, 120))
    assert isinstance(top, tuple) and isinstance(bottom, tuple)
    assert dominant(top) == 0 and max(bottom) - min(bottom) <= 6  # red band on top, grey at the bottom


@pytest.mark.parametrize("fmt", ["png", "tiff"])
def test_sixteen_bits_per_channel_in_png_and_tiff(tmp_path: Path, fmt: str) -> None:
    source = samples.bayer_dng(tmp_path / "deep.dng")
    [deep] = run_tool("image-convert", [source], tmp_path / "16", {"rawBitDepth": 16}, fmt).outputs
    [eight] = run_tool("image-convert", [source], tmp_path / "8", output_format=fmt).outputs
    with av.open(str(deep)) as container:  # FFmpeg's decoders, independent of the writer
        frame = next(container.decode(video=0))
        assert frame.format.name.startswith("rgb48")
        pixels = frame.to_ndarray(format="rgb48le")
    assert pixels.shape == (samples.DNG_SIZE[1], samples.DNG_SIZE[0], 3)
    assert len(numpy.unique(pixels)) > 4 and (pixels % 257).any()  # not 8-bit values stretched
    if fmt == "tiff":
        assert numpy.array_equal(tifffile.imread(deep), pixels)
    shallow = numpy.asarray(rgb(eight)).astype(int)
    assert numpy.abs(pixels.astype(int) // 257 - shallow).max() <= 2  # the same picture, finer


def test_sixteen_bits_into_jpeg_are_eight_with_a_note(tmp_path: Path) -> None:
    source = samples.bayer_dng(tmp_path / "deep.dng")
    run = run_tool("image-convert", [source], tmp_path / "out", {"rawBitDepth": 16}, "jpg")
    assert rgb(run.outputs[0]).size == samples.DNG_SIZE
    assert any("16 are written as png or tiff" in note for note in run.notes)


def test_adobe_dng_sdk_samples_convert(tmp_path: Path) -> None:
    """Linear DNGs from the DNG SDK (16 bits, float 16 and 32, an HDR one) develop at their own size."""
    for number, name in enumerate(("06_PGTM2_unsigned16.dng", "07_PGTM2_float16.dng", "08_PGTM2_float32.dng",
                                   "14_hdr_sdr_profiles.dng")):
        source = samples.dngpy_sample(name)
        [output] = run_tool("image-convert", [source], tmp_path / str(number), output_format="webp").outputs
        image = rgb(output)
        assert image.size == ((1000, 100) if name.startswith("14") else (200, 200)), name
    low, high = image.convert("L").getextrema()  # type: ignore[misc]
    assert high - low > 100  # the HDR sample's ramp, not a flat field


def test_the_embedded_jpeg_preview_is_written_as_stored(tmp_path: Path) -> None:
    source = samples.dngpy_sample("04_PGTM2_per_profile.dng")
    [output] = run_tool("image-convert", [source], tmp_path / "jpg", {"rawPreview": True}, "jpg").outputs
    data = output.read_bytes()
    # the stored JPEG byte for byte, behind the EXIF header LibRaw puts on a preview that has none
    assert data[:4] == b"\xff\xd8\xff\xe1" and data[6:10] == b"Exif"
    assert b"\xff\xd8" + data[4 + int.from_bytes(data[4:6], "big"):] in source.read_bytes()
    [png] = run_tool("image-convert", [source], tmp_path / "png", {"rawPreview": True}, "png").outputs
    assert rgb(png).size == rgb(output).size == (256, 256)


def test_a_file_without_a_preview_is_developed_with_a_note(tmp_path: Path) -> None:
    source = samples.bayer_dng(tmp_path / "bare.dng")
    run = run_tool("image-convert", [source], tmp_path / "out", {"rawPreview": True}, "png")
    assert rgb(run.outputs[0]).size == samples.DNG_SIZE
    assert any("no embedded preview" in note for note in run.notes)


def test_a_real_cr2_cut_short_is_damaged_input(tmp_path: Path) -> None:
    with pytest.raises(ConversionError) as caught:
        run_tool("image-convert", [samples.hachoir_cr2()], tmp_path, output_format="png")
    assert caught.value.code == "damaged_input"


# --------------------------------------------------------------------------- every image tool, RAW and Photoshop in


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("raw-psd")
    return {"dng": samples.bayer_dng(folder / "bands.dng"), "psd": samples.layered_psd(folder / "layers.psd"),
            "psb": samples.layered_psd(folder / "layers.psb", psb=True)}


EXPECTED_SIZE = {"dng": samples.DNG_SIZE, "psd": (60, 40), "psb": (60, 40)}


@pytest.mark.parametrize("source", ["dng", "psd", "psb"])
@pytest.mark.parametrize(("tool", "params", "fmt", "size"), [
    ("image-convert", {}, "jpg", lambda w, h: (w, h)),
    ("image-convert", {}, "tiff", lambda w, h: (w, h)),
    ("image-resize", {"percent": 50}, "keep", lambda w, h: (w // 2, h // 2)),
    ("image-rotate", {"angle": 90}, "webp", lambda w, h: (h, w)),
    ("image-compress", {}, "keep", lambda w, h: (w, h)),
])
def test_image_tools_read_raw_and_photoshop_files(
    inputs: dict[str, Path], tmp_path: Path, source: str, tool: str, params: dict[str, object], fmt: str, size: object
) -> None:
    [output] = run_tool(tool, [inputs[source]], tmp_path, params, fmt).outputs
    written = "png" if fmt == "keep" else fmt
    assert output.suffix == f".{written}"
    with Image.open(output) as image:
        assert image.format == {"png": "PNG", "jpg": "JPEG", "tiff": "TIFF", "webp": "WEBP"}[written]
        assert image.size == size(*EXPECTED_SIZE[source])  # type: ignore[operator]


def test_image_to_pdf_takes_raw_and_photoshop_files(inputs: dict[str, Path], tmp_path: Path) -> None:
    [output] = run_tool("image-to-pdf", [inputs["dng"], inputs["psd"], inputs["psb"]], tmp_path, {"pageSize": "fit"}
                        ).outputs
    with pymupdf.open(output) as doc:
        assert doc.page_count == 3
        sizes = [doc[n].get_images()[0][2:4] for n in range(3)]
    assert sizes == [samples.DNG_SIZE, (60, 40), (60, 40)]


# --------------------------------------------------------------------------- Photoshop


def test_a_psb_flattens_to_the_same_picture_as_its_psd(inputs: dict[str, Path], tmp_path: Path) -> None:
    [from_psd] = run_tool("image-convert", [inputs["psd"]], tmp_path / "psd", output_format="png").outputs
    [from_psb] = run_tool("image-convert", [inputs["psb"]], tmp_path / "psb", output_format="png").outputs
    with Image.open(inputs["psd"]) as by_pillow:  # Pillow reads the PSD's merged image (and no PSB)
        expected = by_pillow.convert("RGB").tobytes()
    assert rgb(from_psd).tobytes() == rgb(from_psb).tobytes() == expected
    image = rgb(from_psb)
    assert image.getpixel((5, 5)) == samples.LAYER_COLOURS["Sky"]
    assert image.getpixel((45, 10)) == samples.LAYER_COLOURS["Sun"]
    assert image.getpixel((10, 30)) == (255, 255, 255)  # the hidden layer is not in the picture


@pytest.mark.parametrize("source", ["psd", "psb"])
def test_each_layer_becomes_its_own_file_named_after_it(inputs: dict[str, Path], tmp_path: Path, source: str) -> None:
    run = run_tool("image-convert", [inputs[source]], tmp_path, {"layers": "each"}, "png")
    assert [p.name for p in run.outputs] == ["layers-1-Sky.png", "layers-2-Sun.png", "layers-3-Hidden note.png"]
    reference = PSDImage.open(inputs[source])  # psd-tools' own reading of each layer's pixels
    for output, layer in zip(run.outputs, reference, strict=True):
        with Image.open(output) as image:
            assert image.size == (60, 40) and image.mode == "RGBA"
            left, top, right, bottom = layer.bbox
            inside = image.crop((left, top, right, bottom))
            assert inside.convert("RGB").tobytes() == layer.topil().convert("RGB").tobytes()
            assert inside.getchannel("A").getextrema() == (255, 255)
            assert image.getpixel((0, 39) if top == 0 else (0, 0))[3] == 0  # type: ignore[index]
        assert inside.getpixel((0, 0))[:3] == samples.LAYER_COLOURS[layer.name]  # type: ignore[index]


def test_trimmed_layers_take_their_own_bounds(inputs: dict[str, Path], tmp_path: Path) -> None:
    run = run_tool("image-convert", [inputs["psd"]], tmp_path, {"layers": "each", "trimLayers": True}, "jpg")
    sizes = [Image.open(p).size for p in run.outputs]
    assert sizes == [(60, 20), (10, 10), (20, 10)]
    assert rgb(run.outputs[1]).getpixel((5, 5)) == pytest.approx(samples.LAYER_COLOURS["Sun"], abs=3)


def test_a_document_without_layers_has_nothing_to_write_one_by_one(tmp_path: Path) -> None:
    with pytest.raises(ConversionError) as caught:
        run_tool("image-convert", [samples.pytoshop_sample("history.psd")], tmp_path, {"layers": "each"}, "png")
    assert caught.value.code == "unsupported_format"


# pytoshop's sdist: (file, depth, layers as the header counts them)
REAL_PSD = [("16bit5x5.psd", 16, 3), ("32bit.psd", 32, 2), ("gray1.psd", 8, 3), ("gray0.psd", 8, 1),
            ("layer_comps.psd", 8, 16), ("broken-groups.psd", 8, 6), ("note.psd", 8, 5), ("masks2.psd", 8, 3),
            ("transparentbg-gimp.psd", 8, 1), ("pen-text.psd", 32, 5)]
SAME_AS_PILLOW = {"gray1.psd", "layer_comps.psd", "masks2.psd", "broken-groups.psd"}  # 8-bit merged images


@pytest.mark.parametrize(("name", "depth", "layers"), REAL_PSD)
def test_real_photoshop_files_flatten_at_their_size(tmp_path: Path, name: str, depth: int, layers: int) -> None:
    source = samples.pytoshop_sample(name)
    header = read_header(source)
    assert (header.depth, header.layers) == (depth, layers)
    [output] = run_tool("image-convert", [source], tmp_path, output_format="png").outputs
    with Image.open(output) as image:
        assert image.format == "PNG" and image.size == (header.width, header.height)
        ours = numpy.asarray(image.convert("RGBA"))
        profile = image.info.get("icc_profile")
    assert profile == PSDImage.open(source).image_resources.get_data(1039)  # the document's profile, carried
    if name in SAME_AS_PILLOW:  # Pillow reads the merged image too
        with Image.open(source) as by_pillow:
            theirs = numpy.asarray(by_pillow.convert("RGBA"))
        opaque = ours[:, :, 3] == 255  # Photoshop mattes the others with white; psd-tools takes the matte out
        assert opaque.sum() > 1000 and numpy.array_equal(ours[opaque][:, :3], theirs[opaque][:, :3])


def test_a_real_layered_file_writes_its_layers(tmp_path: Path) -> None:
    """A pixel layer and shape layers in groups: each leaf a file, in psd-tools' own order."""
    source = samples.pytoshop_sample("layer_comps.psd")
    run = run_tool("image-convert", [source], tmp_path, {"layers": "each", "trimLayers": True}, "png")
    leaves = [layer for layer in PSDImage.open(source).descendants() if not layer.is_group()]
    assert len(run.outputs) == len(leaves) == 10 and not run.notes
    for number, (output, layer) in enumerate(zip(run.outputs, leaves, strict=True), start=1):
        assert output.name == f"layer_comps-{number:02d}-{layer.name}.png"
        with Image.open(output) as image:
            assert image.size == (layer.width, layer.height)


def test_the_layer_count_of_16_bit_documents_is_read_from_their_lr16_block(tmp_path: Path) -> None:
    source = samples.pytoshop_sample("16bit5x5.psd")
    data = source.read_bytes()
    assert data.count(b"8BIMLr16") == 1 and read_header(source).layers == 3
    declared = bytearray(data)
    at = data.index(b"8BIMLr16") + 12
    struct.pack_into(">h", declared, at, 9000)
    (tmp_path / "many.psd").write_bytes(declared)
    assert read_header(tmp_path / "many.psd").layers == 9000

"""The image tools on real files: every input format x every output format, then the edits and error codes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from PIL import Image, ImageSequence
from pydantic import ValidationError

from converters.base import Cancelled, Context, ConversionError, InputFile, ToolEnv
from converters.catalogue import load_catalogue
from converters.engines.pictures import register_plugins
from converters.engines.rawphoto import RAW_FORMATS
from tests.converters import image_samples as samples_mod
from tests.converters.runtool import run_tool

FORMATS = ["png", "jpg", "webp", "avif", "heic", "tiff", "bmp", "gif", "ico", "jxl", "jp2", "qoi"]  # written
READ_ONLY = ["tga", "dds", "pcx", "icns", "sgi", "xbm", "ppm", "pgm", "pbm"]  # read, and written as PNG by "keep"
SOURCES = FORMATS + READ_ONLY
PIL_FORMAT = {
    "png": "PNG", "jpg": "JPEG", "webp": "WEBP", "avif": "AVIF", "heic": "HEIF",
    "tiff": "TIFF", "bmp": "BMP", "gif": "GIF", "ico": "ICO", "jxl": "JXL", "jp2": "JPEG2000", "qoi": "QOI",
}
IMAGE_TOOLS = ["image-convert", "image-resize", "image-compress", "image-rotate"]
SIZE = (64, 48)
MAKE = 0x010F  # EXIF "Make"
ORIENTATION = 0x0112


@pytest.fixture(scope="module")
def samples(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Read-only inputs shared by the module; every test writes its outputs under its own tmp_path."""
    folder = tmp_path_factory.mktemp("image-samples")
    for fmt in SOURCES:
        samples_mod.write_image(folder / f"photo.{fmt}", fmt, SIZE)
    samples_mod.write_image(folder / "alpha.png", "png", SIZE, alpha=True)
    samples_mod.write_image(folder / "big.jpg", "jpg", (800, 600))
    samples_mod.write_image(folder / "big.png", "png", (400, 300))
    for fmt in ("gif", "webp", "png"):
        samples_mod.write_animation(folder / f"anim.{fmt}", fmt)
    samples_mod.write_oriented_jpeg(folder / "oriented.jpg", (80, 40), orientation=6)
    samples_mod.write_png_bomb(folder / "bomb.png")
    samples_mod.write_truncated(folder / "truncated.png", "png")
    return folder


def read(path: Path, fmt: str) -> Image.Image:
    """Open an output with Pillow after checking its magic bytes; HEIC through pillow-heif."""
    assert samples_mod.has_magic(path, fmt), f"{path.name} does not start like {fmt}"
    register_plugins(fmt)
    image = Image.open(path)
    assert image.format == PIL_FORMAT[fmt]
    return image


def input_size(path: Path) -> tuple[int, int]:
    register_plugins(None)
    with Image.open(path) as image:
        return image.size


# --------------------------------------------------------------------------- the catalogue and schemas


def test_every_image_tool_is_in_the_catalogue_under_images() -> None:
    for tool_id in IMAGE_TOOLS:
        tool = load_catalogue().get(tool_id)
        assert tool is not None and tool.category == "images" and tool.available()
        # SVG: tests/converters/test_vector_tools.py; PSD: real files below; PSB and camera RAW:
        # tests/converters/test_raw_psd_tools.py
        assert set(tool.accepts) == set(SOURCES) | {"svg", "svgz", "psd", "psb", *RAW_FORMATS}


def test_image_param_schemas_use_camel_case() -> None:
    convert = load_catalogue().get("image-convert")
    compress = load_catalogue().get("image-compress")
    resize = load_catalogue().get("image-resize")
    assert convert is not None and compress is not None and resize is not None
    props = convert.params.model_json_schema(by_alias=True)["properties"]
    assert {"quality", "stripMetadata", "background"} <= set(props)  # RAW and PSD ones: test_raw_psd_tools.py
    assert (props["quality"]["minimum"], props["quality"]["maximum"], props["quality"]["default"]) == (1, 100, 85)
    assert "targetSizeKb" in compress.params.model_json_schema(by_alias=True)["properties"]
    resize_props = resize.params.model_json_schema(by_alias=True)["properties"]
    assert resize_props["fit"]["enum"] == ["contain", "cover", "exact"]
    assert resize_props["noEnlarge"]["default"] is False


def test_format_keeping_tools_default_to_keep() -> None:
    for tool_id in ("image-resize", "image-compress", "image-rotate"):
        tool = load_catalogue().get(tool_id)
        assert tool is not None and tool.produces[0] == "keep"


# --------------------------------------------------------------------------- image-convert: the matrix


@pytest.mark.parametrize("target", FORMATS)
@pytest.mark.parametrize("source", SOURCES)
def test_convert_writes_the_target_format_at_the_same_size(
    samples: Path, tmp_path: Path, source: str, target: str
) -> None:
    path = samples / f"photo.{source}"
    [output] = run_tool("image-convert", [path], tmp_path, output_format=target).outputs
    assert output.name == f"photo.{target}"
    width, height = input_size(path)
    with read(output, target) as image:
        if target == "ico":
            assert image.size == (min(256, max(width, height)),) * 2  # padded square; ICO stops at 256
        else:
            assert image.size == (width, height)
        image.load()


@pytest.mark.parametrize("source", READ_ONLY)
def test_keep_writes_a_format_the_tools_only_read_as_png(samples: Path, tmp_path: Path, source: str) -> None:
    path = samples / f"photo.{source}"
    [output] = run_tool("image-resize", [path], tmp_path, {"percent": 50}).outputs
    assert output.name == "photo.png"
    width, height = input_size(path)
    with read(output, "png") as image:
        assert image.size == (round(width / 2), round(height / 2))


# Real files from the libraries' own test suites (their source distributions): (project, files).
REAL_WORLD = {fmt: ("pillow", f"*/Tests/images/*.{fmt}")
              for fmt in ("tga", "dds", "pcx", "icns", "sgi", "jp2", "qoi", "xbm", "ppm", "pgm", "psd")}
REAL_WORLD["jxl"] = ("pillow-jxl-plugin", "*.jxl")


@pytest.mark.parametrize("fmt", sorted(REAL_WORLD))
def test_real_world_files_of_each_format_convert_to_png(tmp_path: Path, fmt: str) -> None:
    """The libraries' own test images: those that sniff as the format convert."""
    import importlib.metadata

    from converters.inputs.sniff import sniff
    from tests.samples_cache import sdist_files

    project, pattern = REAL_WORLD[fmt]
    found = [f for f in sdist_files(project, importlib.metadata.version(project), pattern) if sniff(f, f.name) == fmt]
    # fuzzer finds are kept on purpose: they must fail cleanly (damaged_input / input_too_large), not count
    files = [f for f in found if not f.name.startswith(("crash", "oom", "timeout"))]
    for number, path in enumerate(set(found) - set(files)):
        with pytest.raises(ConversionError) as caught:
            run_tool("image-convert", [path], tmp_path / f"fuzz{number}", output_format="png")
        assert caught.value.code in ("damaged_input", "input_too_large"), (path.name, caught.value)
    assert files, fmt
    converted = 0
    for number, path in enumerate(files):
        try:
            [output] = run_tool("image-convert", [path], tmp_path / str(number), output_format="png").outputs
        except ConversionError as exc:  # Pillow's suite keeps broken and oversized files on purpose
            assert exc.code in ("damaged_input", "input_too_large"), (path.name, exc)
            continue
        with read(output, "png") as image:
            assert image.size == input_size(path)
        converted += 1
    assert converted >= max(1, len(files) // 2), f"{converted} of {len(files)} {fmt} files converted"


def test_a_layered_psd_converts_to_its_flattened_composite(tmp_path: Path) -> None:
    import PIL

    from tests.samples_cache import sdist_files

    [layered] = sdist_files("pillow", PIL.__version__, "*/Tests/images/hopper.psd")
    with Image.open(layered) as original:
        assert original.n_frames > 1  # layers
        composite = original.convert("RGB")
    [output] = run_tool("image-convert", [layered], tmp_path, output_format="png").outputs
    with read(output, "png") as image:
        assert getattr(image, "n_frames", 1) == 1 and image.convert("RGB").tobytes() == composite.tobytes()


def test_convert_alpha_to_jpeg_uses_the_background(samples: Path, tmp_path: Path) -> None:
    params = {"background": "#ff0000"}
    [output] = run_tool("image-convert", [samples / "alpha.png"], tmp_path, params, "jpg").outputs
    with read(output, "jpg") as image:
        red, green, blue = image.convert("RGB").getpixel((1, 1))  # type: ignore[misc]
        assert red > 240 and green < 20 and blue < 20
        centre = image.convert("RGB").getpixel((SIZE[0] // 2, SIZE[1] // 2))
        assert centre[1] > 120 and centre[0] < 40  # type: ignore[index]


def test_convert_keeps_alpha_where_the_target_has_it(samples: Path, tmp_path: Path) -> None:
    for target in ("webp", "png", "avif", "tiff"):
        [output] = run_tool("image-convert", [samples / "alpha.png"], tmp_path / target, output_format=target).outputs
        with read(output, target) as image:
            assert image.convert("RGBA").getpixel((1, 1))[3] == 0  # type: ignore[index]


@pytest.mark.parametrize(("source", "target"), [("gif", "webp"), ("webp", "gif"), ("gif", "png"), ("png", "avif"),
                                                ("webp", "webp"), ("gif", "gif")])
def test_convert_keeps_animation_where_both_formats_have_it(
    samples: Path, tmp_path: Path, source: str, target: str
) -> None:
    [output] = run_tool("image-convert", [samples / f"anim.{source}"], tmp_path, output_format=target).outputs
    with read(output, target) as image:
        assert getattr(image, "n_frames", 1) == 3
        colours = [frame.convert("RGB").getpixel((5, 5)) for frame in ImageSequence.Iterator(image)]
        assert len(set(colours)) == 3


def test_convert_keeps_frame_durations(samples: Path, tmp_path: Path) -> None:
    [output] = run_tool("image-convert", [samples / "anim.webp"], tmp_path, output_format="gif").outputs
    with read(output, "gif") as image:
        durations = []
        for frame in ImageSequence.Iterator(image):
            durations.append(frame.info["duration"])
        assert durations == [100, 100, 100]


def test_convert_animation_to_a_still_format_keeps_the_first_frame_and_says_so(samples: Path, tmp_path: Path) -> None:
    run = run_tool("image-convert", [samples / "anim.gif"], tmp_path, output_format="jpg")
    with read(run.outputs[0], "jpg") as image:
        assert getattr(image, "n_frames", 1) == 1
    assert any("first" in note for note in run.notes)


def test_convert_applies_exif_orientation(samples: Path, tmp_path: Path) -> None:
    [output] = run_tool("image-convert", [samples / "oriented.jpg"], tmp_path, output_format="png").outputs
    with read(output, "png") as image:
        assert image.size == (40, 80)  # stored 80x40, "rotate 90" in EXIF
        assert image.getexif().get(ORIENTATION) in (None, 1)


def test_convert_keeps_exif_unless_told_to_strip_it(samples: Path, tmp_path: Path) -> None:
    [kept] = run_tool("image-convert", [samples / "oriented.jpg"], tmp_path / "kept", output_format="jpg").outputs
    params = {"stripMetadata": True}
    [stripped] = run_tool("image-convert", [samples / "oriented.jpg"], tmp_path / "s", params, "jpg").outputs
    with read(kept, "jpg") as image:
        assert image.getexif().get(MAKE) == "FileKiln Test Camera"
        assert image.getexif().get(ORIENTATION) in (None, 1)  # applied to the pixels, so not turned twice
    assert b"FileKiln Test Camera" not in stripped.read_bytes()
    assert b"Exif\x00\x00" not in stripped.read_bytes()


def test_convert_quality_changes_the_size_of_lossy_output(samples: Path, tmp_path: Path) -> None:
    sizes = []
    for quality in (95, 30):
        run = run_tool("image-convert", [samples / "big.png"], tmp_path / str(quality), {"quality": quality}, "webp")
        sizes.append(run.outputs[0].stat().st_size)
    assert sizes[1] < sizes[0]


def test_convert_a_16_bit_grey_png(tmp_path: Path) -> None:
    source = tmp_path / "grey16.png"
    Image.new("I;16", (30, 20), 40000).save(source)
    [output] = run_tool("image-convert", [source], tmp_path / "out", output_format="jpg").outputs
    with read(output, "jpg") as image:
        assert abs(image.convert("L").getpixel((3, 3)) - 156) <= 2  # type: ignore[operator]


EDIT_PARAMS: dict[str, dict[str, Any]] = {
    "image-resize": {"percent": 50},
    "image-rotate": {"angle": 90},
    "image-compress": {"quality": 60},
}


def edited_size(tool_id: str, size: tuple[int, int]) -> tuple[int, int]:
    width, height = size
    return {"image-resize": (round(width / 2), round(height / 2)), "image-rotate": (height, width)}.get(
        tool_id, (width, height)
    )


EDIT_MATRIX = [
    (tool_id, source, target)
    for tool_id in EDIT_PARAMS
    for source in FORMATS
    for target in FORMATS
    # compressing bmp/ico in place is refused: test_compress_bmp_in_place_is_unsupported
    if not (tool_id == "image-compress" and source == target and source in ("bmp", "ico"))
]


@pytest.mark.parametrize(("tool_id", "source", "target"), EDIT_MATRIX)
def test_edit_tools_write_any_target_format(
    samples: Path, tmp_path: Path, tool_id: str, source: str, target: str
) -> None:
    path = samples / f"photo.{source}"
    [output] = run_tool(tool_id, [path], tmp_path, EDIT_PARAMS[tool_id], output_format=target).outputs
    assert output.suffix == f".{target}"
    expected = edited_size(tool_id, input_size(path))
    with read(output, target) as image:
        assert image.size == ((max(expected),) * 2 if target == "ico" else expected)


# --------------------------------------------------------------------------- image-resize


@pytest.mark.parametrize("fmt", FORMATS)
def test_resize_keeps_the_format_and_scales(samples: Path, tmp_path: Path, fmt: str) -> None:
    path = samples / f"photo.{fmt}"
    width, height = input_size(path)
    [output] = run_tool("image-resize", [path], tmp_path, {"percent": 50}).outputs
    assert output.suffix == f".{fmt}"
    with read(output, fmt) as image:
        expected = (round(width / 2), round(height / 2))
        assert image.size == ((max(expected),) * 2 if fmt == "ico" else expected), (fmt, image.size, (width, height))


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({"width": 200}, (200, 150)),
        ({"height": 30}, (40, 30)),
        ({"width": 100, "height": 100, "fit": "contain"}, (100, 75)),
        ({"width": 100, "height": 100, "fit": "cover"}, (100, 100)),
        ({"width": 100, "height": 100, "fit": "exact"}, (100, 100)),
        ({"width": 800, "noEnlarge": True}, (400, 300)),
        ({"width": 800, "height": 100, "fit": "cover", "noEnlarge": True}, (400, 100)),
        ({"percent": 10}, (40, 30)),
    ],
)
def test_resize_follows_width_height_percent_and_fit(
    samples: Path, tmp_path: Path, params: dict[str, Any], expected: tuple[int, int]
) -> None:
    [output] = run_tool("image-resize", [samples / "big.png"], tmp_path, params).outputs
    with read(output, "png") as image:
        assert image.size == expected


def test_resize_to_another_format_when_asked(samples: Path, tmp_path: Path) -> None:
    [output] = run_tool("image-resize", [samples / "big.png"], tmp_path, {"width": 100}, "webp").outputs
    with read(output, "webp") as image:
        assert image.size == (100, 75)


def test_resize_keeps_animation(samples: Path, tmp_path: Path) -> None:
    [output] = run_tool("image-resize", [samples / "anim.gif"], tmp_path, {"width": 20}).outputs
    with read(output, "gif") as image:
        assert image.size == (20, 15) and getattr(image, "n_frames", 1) == 3


def test_resize_needs_a_size(samples: Path) -> None:
    tool = load_catalogue().get("image-resize")
    assert tool is not None
    with pytest.raises(ValidationError):
        tool.params.model_validate({})
    with pytest.raises(ValidationError):
        tool.params.model_validate({"percent": 50, "width": 10})


# --------------------------------------------------------------------------- image-rotate


@pytest.mark.parametrize("fmt", FORMATS)
def test_rotate_by_90_swaps_width_and_height(samples: Path, tmp_path: Path, fmt: str) -> None:
    path = samples / f"photo.{fmt}"
    width, height = input_size(path)
    [output] = run_tool("image-rotate", [path], tmp_path, {"angle": 90}).outputs
    with read(output, fmt) as image:
        assert image.size == ((max(width, height),) * 2 if fmt == "ico" else (height, width))


def test_rotate_turns_clockwise(tmp_path: Path) -> None:
    source = tmp_path / "marked.png"
    image = Image.new("RGB", (40, 20), (255, 255, 255))
    image.putpixel((0, 0), (255, 0, 0))  # red in the top-left corner
    image.save(source)
    [output] = run_tool("image-rotate", [source], tmp_path / "out", {"angle": 90}).outputs
    with read(output, "png") as turned:
        assert turned.size == (20, 40)
        assert turned.convert("RGB").getpixel((19, 0)) == (255, 0, 0)  # now top-right


@pytest.mark.parametrize(("flip", "corner"), [("horizontal", (39, 0)), ("vertical", (0, 19))])
def test_rotate_flip_mirrors(tmp_path: Path, flip: str, corner: tuple[int, int]) -> None:
    source = tmp_path / "marked.png"
    image = Image.new("RGB", (40, 20), (255, 255, 255))
    image.putpixel((0, 0), (255, 0, 0))
    image.save(source)
    [output] = run_tool("image-rotate", [source], tmp_path / "out", {"angle": 0, "flip": flip}).outputs
    with read(output, "png") as mirrored:
        assert mirrored.convert("RGB").getpixel(corner) == (255, 0, 0)


def test_rotate_by_a_free_angle_widens_the_canvas_with_transparent_corners(samples: Path, tmp_path: Path) -> None:
    [output] = run_tool("image-rotate", [samples / "big.png"], tmp_path, {"angle": 30}).outputs
    with read(output, "png") as image:
        assert image.width > 400 and image.height > 300
        assert image.convert("RGBA").getpixel((0, 0))[3] == 0  # type: ignore[index]


def test_rotate_jpeg_by_a_free_angle_fills_corners_with_the_background(samples: Path, tmp_path: Path) -> None:
    params = {"angle": 30, "background": "#00ff00"}
    [output] = run_tool("image-rotate", [samples / "big.jpg"], tmp_path, params).outputs
    with read(output, "jpg") as image:
        red, green, blue = image.convert("RGB").getpixel((1, 1))  # type: ignore[misc]
        assert green > 230 and red < 30 and blue < 30


# --------------------------------------------------------------------------- image-compress


@pytest.mark.parametrize("fmt", ["jpg", "webp", "avif", "heic", "png"])
def test_compress_makes_the_file_smaller_in_its_own_format(tmp_path: Path, fmt: str) -> None:
    source = samples_mod.write_image(tmp_path / f"photo.{fmt}", fmt, (400, 300))
    if fmt != "png":  # start from a generous quality so there is room to compress
        register_plugins(fmt)
        with Image.open(source) as image:
            image.save(source, PIL_FORMAT[fmt], quality=98)
    [output] = run_tool("image-compress", [source], tmp_path / "out", {"quality": 40}).outputs
    assert output.suffix == f".{fmt}"
    assert output.stat().st_size < source.stat().st_size
    with read(output, fmt) as image:
        assert image.size == (400, 300)


def test_compress_reaches_a_target_size(samples: Path, tmp_path: Path) -> None:
    run = run_tool("image-compress", [samples / "big.jpg"], tmp_path, {"targetSizeKb": 20})
    [output] = run.outputs
    assert output.stat().st_size <= 20 * 1024
    with read(output, "jpg") as image:
        assert image.size == (800, 600)


def test_compress_scales_down_when_quality_alone_cannot_reach_the_target(samples: Path, tmp_path: Path) -> None:
    run = run_tool("image-compress", [samples / "big.jpg"], tmp_path, {"targetSizeKb": 3})
    [output] = run.outputs
    assert output.stat().st_size <= 3 * 1024
    with read(output, "jpg") as image:
        assert image.width < 800
    assert any("scaled" in note for note in run.notes)


def test_compress_keeps_the_original_when_it_cannot_shrink_it(tmp_path: Path) -> None:
    source = tmp_path / "small.jpg"
    samples_mod.photo((200, 150)).save(source, "JPEG", quality=20)
    run = run_tool("image-compress", [source], tmp_path / "out", {"quality": 95})
    assert run.outputs[0].read_bytes() == source.read_bytes()
    assert any("original kept" in note for note in run.notes)


def test_compress_bmp_in_place_is_unsupported(samples: Path, tmp_path: Path) -> None:
    with pytest.raises(ConversionError) as caught:
        run_tool("image-compress", [samples / "photo.bmp"], tmp_path)
    assert caught.value.code == "unsupported_format"


def test_compress_bmp_into_jpeg_when_told(samples: Path, tmp_path: Path) -> None:
    [output] = run_tool("image-compress", [samples / "photo.bmp"], tmp_path, output_format="jpg").outputs
    assert output.stat().st_size < (samples / "photo.bmp").stat().st_size
    with read(output, "jpg") as image:
        assert image.size == SIZE


# --------------------------------------------------------------------------- refusals, progress, cancellation


@pytest.mark.parametrize("tool_id", IMAGE_TOOLS)
def test_a_pixel_bomb_is_input_too_large(samples: Path, tmp_path: Path, tool_id: str) -> None:
    params = {"percent": 50} if tool_id == "image-resize" else {}
    with pytest.raises(ConversionError) as caught:
        run_tool(tool_id, [samples / "bomb.png"], tmp_path, params, output_format="jpg")
    assert caught.value.code == "input_too_large"
    assert list(tmp_path.iterdir()) == []


def test_the_pixel_limit_is_a_setting(samples: Path, tmp_path: Path) -> None:
    env = ToolEnv(settings={"max_image_pixels": 1000})
    with pytest.raises(ConversionError) as caught:
        run_tool("image-convert", [samples / "photo.png"], tmp_path, output_format="jpg", env=env)
    assert caught.value.code == "input_too_large"


@pytest.mark.parametrize("tool_id", IMAGE_TOOLS)
def test_a_truncated_image_is_damaged_input(samples: Path, tmp_path: Path, tool_id: str) -> None:
    params = {"percent": 50} if tool_id == "image-resize" else {}
    with pytest.raises(ConversionError) as caught:
        run_tool(tool_id, [samples / "truncated.png"], tmp_path, params, output_format="jpg")
    assert caught.value.code == "damaged_input"
    assert list(tmp_path.iterdir()) == []


def test_progress_is_reported_per_image_and_reaches_one(samples: Path, tmp_path: Path) -> None:
    inputs = [samples / "photo.png", samples / "photo.jpg", samples / "photo.gif"]
    run = run_tool("image-convert", inputs, tmp_path, output_format="webp")
    assert len(run.outputs) == 3
    assert len(run.progress) >= 3
    assert run.progress == sorted(run.progress) and run.progress[-1] == 1.0


def test_a_cancelled_job_stops_without_output(samples: Path, tmp_path: Path) -> None:
    tool = load_catalogue().get("image-convert")
    assert tool is not None
    ctx = Context(
        inputs=[InputFile(samples / "photo.png", "png", "photo.png")],
        params=tool.params.model_validate({}),
        output_format="jpg",
        out_dir=tmp_path,
        cancelled=lambda: True,
    )
    with pytest.raises(Cancelled):
        tool.run(ctx)
    assert list(tmp_path.iterdir()) == []


def test_a_pixel_bomb_is_refused_at_job_creation(samples: Path) -> None:
    tool = load_catalogue().get("image-convert")
    assert tool is not None
    with pytest.raises(ConversionError) as caught:
        tool.precheck([InputFile(samples / "bomb.png", "png", "bomb.png")], tool.params.model_validate({}))
    assert caught.value.code == "input_too_large"


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_truncated_file_of_any_format_is_damaged_input(tmp_path: Path, fmt: str) -> None:
    truncated = samples_mod.write_truncated(tmp_path / f"cut.{fmt}", fmt)
    with pytest.raises(ConversionError) as caught:
        run_tool("image-convert", [truncated], tmp_path / "out", output_format="png")
    assert caught.value.code == "damaged_input"


def test_progress_is_reported_per_frame_of_an_animation(samples: Path, tmp_path: Path) -> None:
    run = run_tool("image-convert", [samples / "anim.gif"], tmp_path, output_format="webp")
    assert len([p for p in run.progress if p <= 0.5]) >= 3  # one per decoded frame
    assert run.progress == sorted(run.progress) and run.progress[-1] == 1.0

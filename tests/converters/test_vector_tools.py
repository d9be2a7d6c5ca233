"""vector-convert and SVG input to the image tools, read back with PyMuPDF, Pillow and ElementTree; real SVGs
from resvg-py's and svglib's own test suites (their source distributions)."""

from __future__ import annotations

import gzip
from pathlib import Path
from xml.etree import ElementTree

import pymupdf
import pytest
from PIL import Image

from converters.base import ConversionError
from converters.inputs.sniff import sniff
from tests.converters import pdf_samples as pdfs
from tests.converters.image_samples import photo
from tests.converters.runtool import run_tool
from tests.samples_cache import sdist_files

LOGO = """<svg xmlns="http://www.w3.org/2000/svg" width="200" height="100" viewBox="0 0 200 100">
  <rect x="10" y="10" width="80" height="80" fill="#ff0000"/>
  <circle cx="150" cy="50" r="40" fill="#0000ff"/>
  <text x="20" y="95" font-size="10">FileKiln</text>
</svg>"""


@pytest.fixture
def logo(tmp_path: Path) -> Path:
    path = tmp_path / "logo.svg"
    path.write_text(LOGO, encoding="utf-8")
    return path


def test_svg_to_pdf_is_vector_at_the_svg_size(logo: Path, tmp_path: Path) -> None:
    [output] = run_tool("vector-convert", [logo], tmp_path / "out", output_format="pdf").outputs
    with pymupdf.open(output) as doc:
        page = doc[0]
        assert (round(page.rect.width), round(page.rect.height)) == (150, 75)  # 200 x 100 px at 96 dpi, in points
        assert page.get_images() == [] and len(page.get_drawings()) >= 2  # shapes, not a picture


@pytest.mark.parametrize(("params", "size"), [({}, (200, 100)), ({"width": 800}, (800, 400)),
                                             ({"dpi": 192}, (400, 200))])
def test_svg_to_png_at_a_chosen_width_or_dpi(logo: Path, tmp_path: Path, params: dict[str, int],
                                             size: tuple[int, int]) -> None:
    [output] = run_tool("vector-convert", [logo], tmp_path / "out", params, output_format="png").outputs
    with Image.open(output) as image:
        assert image.size == size
        rgba = image.convert("RGBA")
        assert rgba.getpixel((size[0] * 50 // 200, size[1] // 2))[:3] == (255, 0, 0)
        assert rgba.getpixel((size[0] * 150 // 200, size[1] // 2))[:3] == (0, 0, 255)
        assert rgba.getpixel((size[0] - 1, 0))[3] == 0  # transparent where nothing is drawn


def test_svgz_and_webp(logo: Path, tmp_path: Path) -> None:
    packed = tmp_path / "logo.svgz"
    packed.write_bytes(gzip.compress(logo.read_bytes()))
    assert sniff(packed, "upload") == "svgz"
    [output] = run_tool("vector-convert", [packed], tmp_path / "out", {"background": "#ffffff"},
                        output_format="webp").outputs
    with Image.open(output) as image:
        assert image.format == "WEBP" and image.size == (200, 100)
        assert image.convert("RGB").getpixel((199, 0)) == (255, 255, 255)


def test_the_image_tools_take_svg_at_its_own_size(logo: Path, tmp_path: Path) -> None:
    [output] = run_tool("image-convert", [logo], tmp_path / "out", output_format="jpg").outputs
    with Image.open(output) as image:
        assert image.format == "JPEG" and image.size == (200, 100)


def test_a_pdf_page_becomes_svg(tmp_path: Path) -> None:
    source = pdfs.text_pdf(tmp_path / "three.pdf", 3)
    [output] = run_tool("vector-convert", [source], tmp_path / "out", {"page": 2, "textAsPath": False},
                        output_format="svg").outputs
    text = output.read_text(encoding="utf-8")
    assert ElementTree.fromstring(text).tag.endswith("svg")
    assert pdfs.marker(2) in text and pdfs.marker(1) not in text
    with pytest.raises(ConversionError) as caught:
        run_tool("vector-convert", [source], tmp_path / "bad", {"page": 4}, output_format="svg")
    assert caught.value.code == "invalid_pages"


@pytest.mark.parametrize("mode", ["color", "binary"])
def test_a_picture_is_traced_to_svg_paths(tmp_path: Path, mode: str) -> None:
    picture = Image.new("RGB", (120, 80), "white")
    picture.paste((200, 0, 0), (10, 10, 60, 70))
    picture.paste((0, 0, 200), (70, 20, 110, 60))
    source = tmp_path / "shapes.png"
    picture.save(source)
    [output] = run_tool("vector-convert", [source], tmp_path / "out", {"colorMode": mode},
                        output_format="svg").outputs
    root = ElementTree.fromstring(output.read_text(encoding="utf-8"))
    paths = [el for el in root.iter() if el.tag.endswith("path")]
    assert paths
    fills = {el.get("fill", "").lower() for el in paths}
    if mode == "color":
        assert {"#c80000", "#0000c8"} <= fills, fills
    else:
        assert fills <= {"#000000", "#000", "black", "#ffffff", "#fff", "white", ""}, fills
    [rendered] = run_tool("vector-convert", [output], tmp_path / "back", output_format="png").outputs
    with Image.open(rendered) as image:
        assert image.size == (120, 80)


def test_tracing_and_the_wrong_direction_are_refused_clearly(tmp_path: Path) -> None:
    source = tmp_path / "photo.png"
    photo((64, 48)).save(source)
    with pytest.raises(ConversionError) as caught:
        run_tool("vector-convert", [source], tmp_path / "out", output_format="pdf")
    assert caught.value.code == "unsupported_conversion" and "image-to-pdf" in caught.value.message


def test_real_world_svgs_from_resvg_and_svglib_render(tmp_path: Path) -> None:
    files = sdist_files("resvg-py", "0.5.0", "*.svg") + sdist_files("svglib", "2.3.2", "*.svg")
    assert len(files) >= 30
    rendered = 0
    for number, path in enumerate(files):
        assert sniff(path, path.name) == "svg", path.name
        try:
            [output] = run_tool("vector-convert", [path], tmp_path / str(number), {"width": 256},
                                output_format="png").outputs
        except ConversionError as exc:  # a test file may be deliberately broken
            assert exc.code in ("damaged_input", "render_failed", "input_too_large"), (path.name, exc)
            continue
        with Image.open(output) as image:
            assert image.width == 256
        rendered += 1
    assert rendered >= len(files) * 3 // 4, f"{rendered} of {len(files)}"


def test_a_sanitised_svg_keeps_the_drawing_and_loses_what_points_outside(tmp_path: Path) -> None:
    source = tmp_path / "linked.svg"
    source.write_text(
        '<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" width="10" height="10">'
        '<style>@import url(http://example.invalid/a.css); rect { fill: url(#g) }</style>'
        '<script>alert(1)</script><rect width="10" height="10" onclick="alert(2)"/>'
        '<image xlink:href="file:///etc/hostname" width="5" height="5"/><use href="#r"/>'
        '<image href="data:image/png;base64,iVBORw0KGgo=" width="1" height="1"/></svg>', encoding="utf-8")
    run = run_tool("vector-convert", [source], tmp_path / "out", output_format="svg")
    text = run.outputs[0].read_text(encoding="utf-8")
    assert "script" not in text and "onclick" not in text and "@import" not in text and "file:" not in text
    assert 'href="#r"' in text and "data:image/png" in text and "url(#g)" in text
    assert any("removed" in note for note in run.notes)


def test_a_photo_over_the_tracing_limit_is_refused(tmp_path: Path) -> None:
    source = tmp_path / "big.png"
    Image.new("L", (6000, 5000)).save(source)
    with pytest.raises(ConversionError) as caught:
        run_tool("vector-convert", [source], tmp_path / "out", output_format="svg")
    assert caught.value.code == "input_too_large"

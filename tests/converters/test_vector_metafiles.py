"""vector-convert on Windows metafiles (EMF, WMF) through LibreOffice Draw: real ones from python-pptx's source
distribution, and an EMF written record by record here; read back with PyMuPDF, Pillow and ElementTree."""

from __future__ import annotations

import shutil
import struct
from collections.abc import Iterator
from pathlib import Path
from xml.etree import ElementTree

import pymupdf
import pytest
from PIL import Image

from converters.base import ConversionError, InputFile, ToolEnv
from converters.catalogue import load_catalogue
from converters.engines.office import close_pools
from converters.inputs.sniff import sniff
from tests.converters.runtool import run_tool
from tests.samples_cache import sdist_files

needs_office = pytest.mark.skipif(shutil.which("soffice") is None, reason="LibreOffice (soffice) is not installed")


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ToolEnv]:
    """One LibreOffice instance for the module (its profile in a temporary data dir), ended with it."""
    yield ToolEnv(models_dir=tmp_path_factory.mktemp("data") / "models")
    close_pools()


def pptx_sample(name: str) -> Path:
    """A metafile of python-pptx's: pic.emf (a matplotlib plot), CVS_LOGO.WMF (placeable), docx-icon.emf."""
    [path] = sdist_files("python-pptx", "1.0.2", f"*/{name}")
    return path


def emf_record(kind: int, *fields: int, fmt: str = "") -> bytes:
    body = struct.pack(f"<{fmt}", *fields) if fmt else b""
    return struct.pack("<II", kind, 8 + len(body)) + body


def two_squares_emf(path: Path, frame_mm: tuple[float, float] = (50.8, 25.4)) -> Path:
    """An EMF of a red square beside a blue one, 200 x 100 device pixels at 100 dpi ([MS-EMF] records:
    header, brushes created and selected, the null pen, two rectangles, end of file)."""
    null_pen = 0x80000008
    records = [
        emf_record(39, 1, 0, 0x000000FF, 0, fmt="IIII"),  # EMR_CREATEBRUSHINDIRECT: solid red (0x00BBGGRR)
        emf_record(39, 2, 0, 0x00FF0000, 0, fmt="IIII"),  # solid blue
        emf_record(37, null_pen, fmt="I"),  # EMR_SELECTOBJECT
        emf_record(37, 1, fmt="I"),
        emf_record(43, 0, 0, 100, 100, fmt="iiii"),  # EMR_RECTANGLE
        emf_record(37, 2, fmt="I"),
        emf_record(43, 100, 0, 200, 100, fmt="iiii"),
        emf_record(14, 0, 16, 20, fmt="III"),  # EMR_EOF
    ]
    total = 88 + sum(len(r) for r in records)
    frame = (0, 0, round(frame_mm[0] * 100), round(frame_mm[1] * 100))
    header = struct.pack("<II4i4i4sIIIHHIII2i2i", 1, 88, 0, 0, 199, 99, *frame, b" EMF", 0x10000, total,
                         len(records) + 1, 3, 0, 0, 0, 0, 1000, 1000, 254, 254)
    path.write_bytes(header + b"".join(records))
    return path


def test_metafiles_are_sniffed_by_their_headers(tmp_path: Path) -> None:
    assert sniff(pptx_sample("pic.emf"), "upload") == "emf"
    assert sniff(pptx_sample("CVS_LOGO.WMF"), "upload") == "wmf"
    bare = tmp_path / "bare"
    bare.write_bytes(pptx_sample("CVS_LOGO.WMF").read_bytes()[22:])  # without its placeable header
    assert sniff(bare, "upload") == "wmf"
    assert sniff(two_squares_emf(tmp_path / "squares"), "a.png") == "emf"


@needs_office
@pytest.mark.parametrize("name", ["pic.emf", "CVS_LOGO.WMF", "docx-icon.emf"])
def test_a_real_metafile_becomes_a_vector_pdf_of_its_own_size(name: str, tmp_path: Path, env: ToolEnv) -> None:
    source = pptx_sample(name)
    with Image.open(source) as picture:  # Pillow reads a metafile's header (its size and resolution)
        dpi = picture.info["dpi"] if isinstance(picture.info["dpi"], tuple) else (picture.info["dpi"],) * 2
        inches = (picture.size[0] / dpi[0], picture.size[1] / dpi[1])
    [output] = run_tool("vector-convert", [source], tmp_path / "out", output_format="pdf", env=env).outputs
    with pymupdf.open(output) as doc:
        page = doc[0]
        assert doc.page_count == 1
        assert page.rect.width == pytest.approx(inches[0] * 72, abs=2)
        assert page.rect.height == pytest.approx(inches[1] * 72, abs=2)
        # Draw's white page is cut away: what is left of it covers the whole page; the drawing lies inside
        inner = page.rect + (1, 1, -1, -1)
        shapes = [d["rect"] for d in page.get_drawings() if not d["rect"].contains(inner)]
        shapes += [page.get_image_bbox(info) for info in page.get_images(full=True)]
        assert shapes and (page.get_images() == []) == (name != "docx-icon.emf")  # the icon is a bitmap inside
        drawn = pymupdf.Rect()
        for rect in shapes:
            drawn |= rect
        assert drawn.width > page.rect.width / 2 and (page.rect + (-2, -2, 2, 2)).contains(drawn)


@needs_office
def test_a_metafile_to_png_keeps_its_geometry_at_a_chosen_width_or_dpi(tmp_path: Path, env: ToolEnv) -> None:
    source = two_squares_emf(tmp_path / "squares.emf")
    for params, size in (({}, (192, 96)), ({"width": 400}, (400, 200)), ({"dpi": 192}, (384, 192))):
        [output] = run_tool("vector-convert", [source], tmp_path / str(size), params, output_format="png",
                            env=env).outputs
        with Image.open(output) as image:
            assert image.format == "PNG" and image.size == size
            rgb = image.convert("RGB")
            assert rgb.getpixel((size[0] // 4, size[1] // 2)) == (255, 0, 0)
            assert rgb.getpixel((size[0] * 3 // 4, size[1] // 2)) == (0, 0, 255)
    [webp] = run_tool("vector-convert", [source], tmp_path / "webp", output_format="webp", env=env).outputs
    with Image.open(webp) as image:
        assert image.format == "WEBP" and image.size == (192, 96)


@needs_office
def test_a_metafile_becomes_svg(tmp_path: Path, env: ToolEnv) -> None:
    [output] = run_tool("vector-convert", [pptx_sample("CVS_LOGO.WMF")], tmp_path / "out", output_format="svg",
                        env=env).outputs
    root = ElementTree.fromstring(output.read_text(encoding="utf-8"))
    assert root.tag.endswith("svg")
    assert float(root.get("width", "0").removesuffix("pt")) == pytest.approx(1243 / 600 * 72, abs=1)
    assert len([e for e in root.iter() if e.tag.endswith("path")]) >= 3  # the three letters, as outlines


@needs_office
def test_a_wmf_without_a_size_of_its_own_is_cut_to_what_it_draws(tmp_path: Path, env: ToolEnv) -> None:
    bare = tmp_path / "bare.wmf"
    bare.write_bytes(pptx_sample("CVS_LOGO.WMF").read_bytes()[22:])
    [output] = run_tool("vector-convert", [bare], tmp_path / "out", output_format="pdf", env=env).outputs
    with pymupdf.open(output) as doc:
        page = doc[0]
        assert page.rect.width < 595 and page.rect.height < 300  # not Draw's whole A4 page
        assert page.rect.width / page.rect.height == pytest.approx(1243 / 493, rel=0.1)


def test_without_libreoffice_a_metafile_is_engine_missing_and_the_tool_stays(tmp_path: Path) -> None:
    env = ToolEnv(models_dir=tmp_path / "models", settings={"libreoffice_path": str(tmp_path / "no-soffice")})
    tool = load_catalogue().get("vector-convert")
    assert tool is not None and tool.available(env)
    source = two_squares_emf(tmp_path / "squares.emf")
    with pytest.raises(ConversionError) as caught:
        tool.precheck([InputFile(source, "emf", "squares.emf")], tool.params.model_validate({}), env)
    assert caught.value.code == "engine_missing" and "LibreOffice" in caught.value.message
    with pytest.raises(ConversionError) as caught:
        run_tool("vector-convert", [source], tmp_path / "out", output_format="pdf", env=env)
    assert caught.value.code == "engine_missing"


@pytest.mark.parametrize(("damage", "code"), [
    (lambda data: data[:60], "damaged_input"),  # shorter than its header
    (lambda data: data[:48] + struct.pack("<I", 10**9) + data[52:], "damaged_input"),  # claims a GB
    (lambda data: data[:52] + struct.pack("<I", 10**8) + data[56:], "input_too_large"),  # 100 million records
])
def test_a_metafile_header_that_does_not_hold_is_refused_at_job_creation(tmp_path: Path, damage: object,
                                                                           code: str) -> None:
    path = tmp_path / "bad.emf"
    path.write_bytes(damage(two_squares_emf(tmp_path / "good.emf").read_bytes()))  # type: ignore[operator]
    tool = load_catalogue().get("vector-convert")
    assert tool is not None
    with pytest.raises(ConversionError) as caught:
        tool.precheck([InputFile(path, "emf", "bad.emf")], tool.params.model_validate({}), ToolEnv())
    assert caught.value.code == code


def test_a_metafile_too_large_to_draw_is_refused(tmp_path: Path) -> None:
    tool = load_catalogue().get("vector-convert")
    assert tool is not None
    huge = two_squares_emf(tmp_path / "huge.emf", frame_mm=(10_000, 10_000))  # ten metres a side
    with pytest.raises(ConversionError) as caught:
        tool.precheck([InputFile(huge, "emf", "huge.emf")], tool.params.model_validate({}), ToolEnv())
    assert caught.value.code == "input_too_large"
    wide = two_squares_emf(tmp_path / "wide.emf", frame_mm=(2000, 1000))  # fine as PDF; 40,000 px wide is not
    with pytest.raises(ConversionError) as caught:
        tool.precheck([InputFile(wide, "emf", "wide.emf")], tool.params.model_validate({"dpi": 508}), ToolEnv())
    assert caught.value.code == "input_too_large"

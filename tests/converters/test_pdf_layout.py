"""The layout tools (page numbers, crop, scale, n-up, booklet, overlay) on PDFs made here, read back with PyMuPDF:
where the text lands, the boxes, the sheet sizes and the pixels."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pymupdf
import pytest

from converters.base import Cancelled, ConversionError, InputFile, ToolEnv
from converters.catalogue import load_catalogue
from converters.tools.pdf.imposition import booklet_order
from tests.converters import pdf_samples as pdfs
from tests.converters.runtool import params_error, run_tool

A4_PORTRAIT = (595.28, 841.89)
LAYOUT_TOOLS = ["pdf-page-numbers", "pdf-crop", "pdf-scale", "pdf-n-up", "pdf-booklet", "pdf-overlay"]


@pytest.fixture(scope="module")
def samples(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Read-only inputs shared by the module; every test writes its outputs under its own tmp_path."""
    folder = tmp_path_factory.mktemp("layout-samples")
    pdfs.text_pdf(folder / "three.pdf", 3)
    pdfs.text_pdf(folder / "five.pdf", 5)
    pdfs.text_pdf(folder / "nine.pdf", 9)
    pdfs.rotated_pdf(folder / "turned.pdf", 90)
    stamp_pdf(folder / "stamp.pdf", ["STAMPA", "STAMPB"])
    return folder


def stamp_pdf(path: Path, words: list[str], size: tuple[float, float] = pdfs.A4) -> Path:
    """A PDF whose page N carries only ``words[N-1]`` near its top left."""
    doc = pymupdf.open()
    for word in words:
        page = doc.new_page(width=size[0], height=size[1])
        page.insert_text((60, 60), word, fontsize=14)
    doc.save(path)
    doc.close()
    return path


def only_output(run: Any) -> pymupdf.Document:
    [output] = run.outputs
    return pymupdf.open(output)


def word_box(page: pymupdf.Page, text: str) -> pymupdf.Rect:
    """Where ``text`` (one word, or a marker inside a word) stands on the page."""
    found = [pymupdf.Rect(w[:4]) for w in page.get_text("words") if text in w[4]]
    assert len(found) == 1, f"{text!r} found {len(found)} times on page {page.number + 1}"
    return found[0]


def line_with(page: pymupdf.Page, text: str) -> dict[str, Any]:
    lines = [line for block in page.get_text("dict")["blocks"] for line in block.get("lines", [])
             if text in "".join(span["text"] for span in line["spans"])]
    assert len(lines) == 1, f"{text!r} found on {len(lines)} lines"
    return lines[0]


def markers_on(page: pymupdf.Page, count: int) -> list[int]:
    """The sample page numbers whose marker is on ``page``, left to right then top to bottom of their words."""
    found = []
    for number in range(1, count + 1):
        boxes = [pymupdf.Rect(w[:4]) for w in page.get_text("words") if pdfs.marker(number) in w[4]]
        if boxes:
            found.append((round(boxes[0].y0), round(boxes[0].x0), number))
    return [number for _, _, number in sorted(found)]


# --------------------------------------------------------------------------- pdf-page-numbers


def test_page_numbers_with_no_params_are_centred_at_the_bottom(samples: Path, tmp_path: Path) -> None:
    run = run_tool("pdf-page-numbers", [samples / "three.pdf"], tmp_path)
    assert [p.name for p in run.outputs] == ["three.pdf"]
    with only_output(run) as doc:
        for number, page in enumerate(doc, start=1):
            [(text, box)] = [(w[4], pymupdf.Rect(w[:4])) for w in page.get_text("words") if w[1] > 421]
            assert text == str(number)
            assert box.x0 + box.width / 2 == pytest.approx(page.rect.width / 2, abs=1)
            assert box.y1 == pytest.approx(page.rect.height - 24, abs=1)  # the text's bottom sits on the margin


def test_page_n_of_total_is_extractable_text_at_the_bottom_centre(samples: Path, tmp_path: Path) -> None:
    run = run_tool("pdf-page-numbers", [samples / "three.pdf"], tmp_path, {"format": "Page {n} of {total}"})
    with only_output(run) as doc:
        page = doc[1]
        line = line_with(page, "Page 2 of 3")
        box = pymupdf.Rect(line["bbox"])
        assert box.y0 > page.rect.height / 2
        assert (box.x0 + box.x1) / 2 == pytest.approx(page.rect.width / 2, abs=1)
        assert "Page 1 of 3" in doc[0].get_text() and "Page 3 of 3" in doc[2].get_text()


def test_page_numbers_top_right_keep_the_margin_and_font_size(samples: Path, tmp_path: Path) -> None:
    run = run_tool("pdf-page-numbers", [samples / "three.pdf"], tmp_path,
                   {"position": "top-right", "format": "p{n}", "margin": 36, "fontSize": 20})
    with only_output(run) as doc:
        page = doc[2]
        box = word_box(page, "p3")
        assert box.x1 == pytest.approx(page.rect.width - 36, abs=1.5)
        assert 36 - 6 < box.y0 < 36 + 6
        assert line_with(page, "p3")["spans"][0]["size"] == pytest.approx(20)


def test_numbers_count_every_page_from_start_and_only_chosen_pages_get_one(samples: Path, tmp_path: Path) -> None:
    # start 0 with pages "2-": the cover is not numbered and not counted in the total
    run = run_tool("pdf-page-numbers", [samples / "three.pdf"], tmp_path,
                   {"format": "{n}/{total}", "start": 0, "pages": "2-"})
    with only_output(run) as doc:
        assert "/" not in doc[0].get_text()
        assert "1/2" in doc[1].get_text() and "2/2" in doc[2].get_text()


def test_a_number_on_a_rotated_page_is_upright_at_the_bottom_the_reader_sees(samples: Path, tmp_path: Path) -> None:
    run = run_tool("pdf-page-numbers", [samples / "turned.pdf"], tmp_path, {"format": "Page {n}"})
    with only_output(run) as doc:
        page = doc[0]
        assert page.rotation == 90
        page.remove_rotation()  # now the coordinates are the reader's
        line = line_with(page, "Page 1")
        assert line["dir"] == pytest.approx((1, 0))
        box = pymupdf.Rect(line["bbox"])
        assert page.rect.width > page.rect.height  # the 400 x 600 page is seen as 600 x 400
        assert (box.x0 + box.x1) / 2 == pytest.approx(page.rect.width / 2, abs=1)
        assert box.y1 == pytest.approx(page.rect.height - 24, abs=1)


@pytest.mark.parametrize("fmt", ["{x}", "Page {}", "Page {n", "{n.real}", "{n:>4}", "{n!r}", "第{n}页", ""])
def test_a_format_with_other_placeholders_or_characters_is_refused(fmt: str) -> None:
    assert "format" in params_error("pdf-page-numbers", {"format": fmt})


def test_braces_can_be_written_doubled() -> None:
    tool = load_catalogue().get("pdf-page-numbers")
    assert tool is not None
    assert tool.params.model_validate({"format": "{{{n}}}"}).format.format(n=4, total=9) == "{4}"  # type: ignore[attr-defined]


# --------------------------------------------------------------------------- pdf-crop


def test_crop_margins_in_mm_shrink_the_cropbox_by_exactly_that(samples: Path, tmp_path: Path) -> None:
    mm = 72 / 25.4
    run = run_tool("pdf-crop", [samples / "three.pdf"], tmp_path,
                   {"unit": "mm", "top": 10, "bottom": 20, "left": 5, "right": 15, "pages": "2"})
    with only_output(run) as doc:
        assert doc[0].cropbox == doc[0].mediabox  # not in the range
        box = doc[1].cropbox
        assert (box.x0, box.y0) == pytest.approx((5 * mm, 10 * mm), abs=0.01)
        assert (box.x1, box.y1) == pytest.approx((595 - 15 * mm, 842 - 20 * mm), abs=0.01)
        assert pdfs.marker(2) in doc[1].get_text()


def test_crop_margins_are_the_sides_the_reader_sees_on_a_rotated_page(samples: Path, tmp_path: Path) -> None:
    run = run_tool("pdf-crop", [samples / "turned.pdf"], tmp_path, {"top": 30, "right": 100})
    with only_output(run) as doc:
        page = doc[0]
        assert (page.rect.width, page.rect.height) == pytest.approx((600 - 100, 400 - 30))
        # /Rotate 90 turns the stored page clockwise: the reader's top is its left edge, the reader's right its top
        assert tuple(page.cropbox) == pytest.approx((30, 100, 400, 600))
        assert pdfs.marker(1) not in page.get_text()  # it stood near the stored top, where the reader sees the right


def test_auto_crop_fits_all_the_content_plus_padding(samples: Path, tmp_path: Path) -> None:
    run = run_tool("pdf-crop", [samples / "three.pdf"], tmp_path, {"mode": "auto", "padding": 6})
    with pymupdf.open(samples / "three.pdf") as original:
        text = original[0].get_text()
        glyphs = [pymupdf.Rect(box) for _, box in original[0].get_bboxlog()]  # the ink of each line of text
    drawn = pymupdf.Rect()
    for glyph in glyphs:
        drawn |= glyph
    with only_output(run) as doc:
        box = doc[0].cropbox
        assert all(box.contains(glyph) for glyph in glyphs)
        assert box.width < 595 / 2 and box.height < 842 / 4
        assert tuple(box) == pytest.approx(tuple(drawn + (-6, -6, 6, 6)), abs=0.01)
        assert doc[0].get_text() == text  # every word still there, whole


def test_auto_crop_leaves_a_blank_page_as_it_is(tmp_path: Path) -> None:
    source = tmp_path / "blank.pdf"
    doc = pymupdf.open()
    doc.new_page(width=300, height=400).insert_text((50, 50), "word")
    doc.new_page(width=300, height=400)
    doc.save(source)
    doc.close()
    run = run_tool("pdf-crop", [source], tmp_path / "out", {"mode": "auto"})
    with only_output(run) as out:
        assert out[0].rect.width < 100
        assert tuple(out[1].cropbox) == (0, 0, 300, 400)
    assert run.notes == ["1 blank page(s) left as they were."]


def test_crop_without_margins_changes_nothing_and_says_so(samples: Path, tmp_path: Path) -> None:
    run = run_tool("pdf-crop", [samples / "three.pdf"], tmp_path)
    assert run.notes == ["Every margin is 0: the pages are unchanged."]
    with only_output(run) as doc:
        assert all(page.cropbox == page.mediabox for page in doc)


def test_margins_that_leave_nothing_are_refused_before_the_job_runs(samples: Path, tmp_path: Path) -> None:
    with pytest.raises(ConversionError) as caught:
        run_tool("pdf-crop", [samples / "three.pdf"], tmp_path, {"left": 300, "right": 300})
    assert caught.value.code == "invalid_params" and "page 1" in caught.value.message
    assert list(tmp_path.iterdir()) == []


# --------------------------------------------------------------------------- pdf-scale


def test_scale_makes_every_page_a4_with_text_inside_and_the_aspect_kept(tmp_path: Path) -> None:
    source = tmp_path / "letter.pdf"
    doc = pymupdf.open()
    for number in (1, 2):
        page = doc.new_page(width=612, height=792)
        page.insert_text((72, 90), pdfs.marker(number), fontsize=12)
        page.draw_rect(pymupdf.Rect(100, 200, 300, 400), color=(0, 0, 0), width=1)  # a square
    doc.save(source)
    doc.close()
    run = run_tool("pdf-scale", [source], tmp_path / "out")
    with only_output(run) as out:
        assert out.page_count == 2
        for number, page in enumerate(out, start=1):
            assert (page.rect.width, page.rect.height) == pytest.approx(A4_PORTRAIT)
            assert page.rect.contains(word_box(page, pdfs.marker(number)))
            [square] = [d["rect"] for d in page.get_drawings()]
            assert square.width == pytest.approx(square.height, abs=0.1)
            assert square.width == pytest.approx(200 * 595.28 / 612, abs=0.5)  # Letter is narrower: width decides


def test_scale_keeps_a_landscape_page_landscape_and_shows_a_rotated_page_as_seen(samples: Path,
                                                                                  tmp_path: Path) -> None:
    run = run_tool("pdf-scale", [samples / "turned.pdf"], tmp_path, {"size": "Letter"})
    with only_output(run) as out:
        page = out[0]
        assert page.rotation == 0 and (page.rect.width, page.rect.height) == pytest.approx((792, 612))
        # the sample's text runs along the stored page, so the reader sees it running down the page
        assert line_with(page, pdfs.marker(1))["dir"] == pytest.approx((0, 1))


def test_scale_to_a_custom_size_in_a_forced_orientation(samples: Path, tmp_path: Path) -> None:
    run = run_tool("pdf-scale", [samples / "three.pdf"], tmp_path,
                   {"size": "custom", "width": 300, "height": 500, "orientation": "landscape"})
    with only_output(run) as out:
        assert [(p.rect.width, p.rect.height) for p in out] == [(500, 300)] * 3
        assert pdfs.marker(3) in out[2].get_text()


def test_scale_keeps_the_bookmarks_and_the_title(tmp_path: Path) -> None:
    source = pdfs.text_pdf(tmp_path / "titled.pdf", 3, title="Sample Title")
    with pymupdf.open(source) as doc:
        doc.set_toc([[1, "One", 1], [2, "Three", 3]])
        doc.saveIncr()
    run = run_tool("pdf-scale", [source], tmp_path / "out", {"size": "A5"})
    with only_output(run) as out:
        assert out.get_toc(simple=True) == [[1, "One", 1], [2, "Three", 3]]
        assert out.metadata is not None and out.metadata["title"] == "Sample Title"


@pytest.mark.parametrize("params", [{"size": "custom", "width": 300}, {"size": "custom", "width": 10, "height": 300},
                                    {"size": "custom", "width": 300, "height": 20000}, {"size": "B5"}])
def test_scale_refuses_a_custom_size_without_both_sides_or_out_of_bounds(params: dict[str, Any]) -> None:
    params_error("pdf-scale", params)


# --------------------------------------------------------------------------- pdf-n-up


def test_four_up_puts_four_pages_per_portrait_sheet_in_reading_order(samples: Path, tmp_path: Path) -> None:
    run = run_tool("pdf-n-up", [samples / "nine.pdf"], tmp_path, {"pagesPerSheet": 4})
    with only_output(run) as out:
        assert out.page_count == 3  # ceil(9 / 4)
        sheet = out[0]
        assert (sheet.rect.width, sheet.rect.height) == pytest.approx(A4_PORTRAIT)
        boxes = {n: word_box(sheet, pdfs.marker(n)) for n in (1, 2, 3, 4)}
        middle_x, middle_y = sheet.rect.width / 2, sheet.rect.height / 2
        assert boxes[1].x1 < middle_x and boxes[1].y1 < middle_y
        assert boxes[2].x0 > middle_x and boxes[2].y1 < middle_y
        assert boxes[3].x1 < middle_x and boxes[3].y0 > middle_y
        assert boxes[4].x0 > middle_x and boxes[4].y0 > middle_y
        assert markers_on(out[1], 9) == [5, 6, 7, 8] and markers_on(out[2], 9) == [9]


def test_two_up_is_a_landscape_sheet_with_the_pages_side_by_side(samples: Path, tmp_path: Path) -> None:
    run = run_tool("pdf-n-up", [samples / "five.pdf"], tmp_path)
    with only_output(run) as out:
        assert out.page_count == 3
        sheet = out[0]
        assert (sheet.rect.width, sheet.rect.height) == pytest.approx(A4_PORTRAIT[::-1])
        assert word_box(sheet, pdfs.marker(1)).x1 < sheet.rect.width / 2 < word_box(sheet, pdfs.marker(2)).x0


def test_six_up_down_fills_columns_first(samples: Path, tmp_path: Path) -> None:
    run = run_tool("pdf-n-up", [samples / "nine.pdf"], tmp_path, {"pagesPerSheet": 6, "order": "down"})
    with only_output(run) as out:
        assert out.page_count == 2
        sheet = out[0]
        assert sheet.rect.width > sheet.rect.height
        boxes = {n: word_box(sheet, pdfs.marker(n)) for n in range(1, 7)}
        assert boxes[1].x0 == pytest.approx(boxes[2].x0) and boxes[2].y0 > boxes[1].y0  # 1 above 2
        assert boxes[3].x0 > boxes[1].x0 and boxes[3].y0 == pytest.approx(boxes[1].y0)
        assert boxes[1].x0 < boxes[3].x0 < boxes[5].x0


def test_nine_up_with_borders_frames_each_page(samples: Path, tmp_path: Path) -> None:
    run = run_tool("pdf-n-up", [samples / "nine.pdf"], tmp_path,
                   {"pagesPerSheet": 9, "border": True, "sheet": "Letter"})
    with only_output(run) as out:
        [sheet] = out
        assert (sheet.rect.width, sheet.rect.height) == pytest.approx((612, 792))
        frames = [d["rect"] for d in sheet.get_drawings()]
        assert len(frames) == 9
        assert markers_on(sheet, 9) == list(range(1, 10))
        for number in range(1, 10):
            assert sum(frame.contains(word_box(sheet, pdfs.marker(number))) for frame in frames) == 1


def test_n_up_on_the_same_sheet_size_and_a_margin_too_large_for_it(tmp_path: Path) -> None:
    small = pdfs.text_pdf(tmp_path / "small.pdf", 2, size=(200, 150))
    run = run_tool("pdf-n-up", [small], tmp_path / "same", {"sheet": "same"})
    with only_output(run) as out:
        assert (out[0].rect.width, out[0].rect.height) == (200, 150)  # already landscape
    with pytest.raises(ConversionError) as caught:
        run_tool("pdf-n-up", [small], tmp_path / "cramped", {"sheet": "same", "pagesPerSheet": 9, "margin": 40})
    assert caught.value.code == "invalid_params"


# --------------------------------------------------------------------------- pdf-booklet


def test_booklet_order_pairs_the_outer_pages_first() -> None:
    assert booklet_order(8) == [(8, 1), (2, 7), (6, 3), (4, 5)]
    assert booklet_order(5) == booklet_order(8)
    sides = booklet_order(12)
    assert sorted(n for side in sides for n in side) == list(range(1, 13))


def test_a_five_page_booklet_is_four_sides_padded_with_blank_pages(samples: Path, tmp_path: Path) -> None:
    run = run_tool("pdf-booklet", [samples / "five.pdf"], tmp_path)
    assert run.notes == ["3 blank page(s) added at the end to fill the last sheet."]
    with only_output(run) as out:
        assert out.page_count == 4
        middle = A4_PORTRAIT[1] / 2
        for sheet, (left, right) in zip(out, [(8, 1), (2, 7), (6, 3), (4, 5)], strict=True):
            assert (sheet.rect.width, sheet.rect.height) == pytest.approx(A4_PORTRAIT[::-1])
            left_half = sheet.get_text(clip=pymupdf.Rect(0, 0, middle, sheet.rect.height))
            right_half = sheet.get_text(clip=pymupdf.Rect(middle, 0, sheet.rect.width, sheet.rect.height))
            for number, half in ((left, left_half), (right, right_half)):
                if number <= 5:
                    assert pdfs.marker(number) in half
                else:
                    assert "FKMARK" not in half  # a padding page is blank


def test_a_right_to_left_booklet_swaps_the_halves_and_same_keeps_the_page_size(samples: Path,
                                                                               tmp_path: Path) -> None:
    four = pdfs.text_pdf(tmp_path / "four.pdf", 4, size=(300, 400))
    run = run_tool("pdf-booklet", [four], tmp_path / "out", {"rightToLeft": True, "sheet": "same"})
    with only_output(run) as out:
        assert out.page_count == 2 and (out[0].rect.width, out[0].rect.height) == (600, 400)
        assert markers_on(out[0], 4) == [1, 4]  # left to right: page 1, then page 4
        assert markers_on(out[1], 4) == [3, 2]


# --------------------------------------------------------------------------- pdf-overlay


def coloured(path: Path, colour: tuple[float, float, float]) -> Path:
    doc = pymupdf.open()
    doc.new_page(width=200, height=200).draw_rect(pymupdf.Rect(50, 50, 150, 150), fill=colour, color=None)
    doc.save(path)
    doc.close()
    return path


def centre_pixel(path: Path) -> tuple[int, ...]:
    with pymupdf.open(path) as doc:
        return tuple(doc[0].get_pixmap().pixel(100, 100))


@pytest.mark.parametrize(("position", "expected"), [("over", (255, 0, 0)), ("under", (0, 0, 255))])
def test_overlay_over_draws_the_stamp_on_top_and_under_behind(tmp_path: Path, position: str,
                                                              expected: tuple[int, int, int]) -> None:
    base, stamp = coloured(tmp_path / "base.pdf", (0, 0, 1)), coloured(tmp_path / "stamp.pdf", (1, 0, 0))
    run = run_tool("pdf-overlay", [base, stamp], tmp_path / position, {"position": position})
    assert [p.name for p in run.outputs] == ["base.pdf"]
    assert centre_pixel(run.outputs[0]) == expected


def test_overlay_repeat_cycles_through_the_stamp_pages(samples: Path, tmp_path: Path) -> None:
    run = run_tool("pdf-overlay", [samples / "three.pdf", samples / "stamp.pdf"], tmp_path)
    with only_output(run) as out:
        stamps = [[w for w in ("STAMPA", "STAMPB") if w in page.get_text()] for page in out]
        assert stamps == [["STAMPA"], ["STAMPB"], ["STAMPA"]]
        assert all(pdfs.marker(n) in out[n - 1].get_text() for n in (1, 2, 3))


def test_overlay_first_puts_the_first_stamp_page_on_the_chosen_pages_only(samples: Path, tmp_path: Path) -> None:
    run = run_tool("pdf-overlay", [samples / "three.pdf", samples / "stamp.pdf"], tmp_path,
                   {"mode": "first", "pages": "2-3"})
    with only_output(run) as out:
        stamps = [[w for w in ("STAMPA", "STAMPB") if w in page.get_text()] for page in out]
        assert stamps == [[], ["STAMPA"], ["STAMPA"]]


def test_a_one_page_stamp_is_not_held_to_the_base_page_range(samples: Path, tmp_path: Path) -> None:
    one = stamp_pdf(tmp_path / "one.pdf", ["STAMPA"])
    run = run_tool("pdf-overlay", [samples / "three.pdf", one], tmp_path / "out", {"pages": "3"})
    with only_output(run) as out:
        assert "STAMPA" in out[2].get_text() and "STAMPA" not in out[0].get_text()


def test_the_stamp_reads_upright_on_a_rotated_page(samples: Path, tmp_path: Path) -> None:
    stamp = stamp_pdf(tmp_path / "landscape.pdf", ["STAMPA"], size=(600, 400))
    run = run_tool("pdf-overlay", [samples / "turned.pdf", stamp], tmp_path / "out")
    with only_output(run) as out:
        page = out[0]
        page.remove_rotation()
        assert line_with(page, "STAMPA")["dir"] == pytest.approx((1, 0))
        assert tuple(word_box(page, "STAMPA"))[:2] == pytest.approx((60, 45), abs=1)  # same size: not scaled


@pytest.mark.parametrize("count", [1, 3])
def test_overlay_refuses_anything_but_two_inputs(samples: Path, tmp_path: Path, count: int) -> None:
    inputs = [samples / "three.pdf", samples / "stamp.pdf", samples / "five.pdf"][:count]
    with pytest.raises(ConversionError) as caught:
        run_tool("pdf-overlay", inputs, tmp_path)
    assert caught.value.code == "invalid_params" and "pdf-overlay" in caught.value.message


# --------------------------------------------------------------------------- what every layout tool shares


def inputs_for(tool_id: str, samples: Path) -> list[Path]:
    return [samples / "three.pdf", samples / "stamp.pdf"] if tool_id == "pdf-overlay" else [samples / "three.pdf"]


@pytest.mark.parametrize("tool_id", ["pdf-page-numbers", "pdf-crop", "pdf-overlay"])
def test_a_page_range_beyond_the_document_is_refused_at_job_creation(samples: Path, tool_id: str) -> None:
    tool = load_catalogue().get(tool_id)
    assert tool is not None
    files = [InputFile(path, "pdf", path.name) for path in inputs_for(tool_id, samples)]
    with pytest.raises(ConversionError) as caught:
        tool.precheck(files, tool.params.model_validate({"pages": "2-9"}))
    assert caught.value.code == "invalid_pages" and "3 pages" in caught.value.message


@pytest.mark.parametrize("tool_id", LAYOUT_TOOLS)
def test_more_pages_than_the_page_limit_are_refused(samples: Path, tmp_path: Path, tool_id: str) -> None:
    with pytest.raises(ConversionError) as caught:
        run_tool(tool_id, inputs_for(tool_id, samples), tmp_path, env=ToolEnv(settings={"max_pdf_pages": 2}))
    assert caught.value.code == "input_too_large"


@pytest.mark.parametrize("tool_id", LAYOUT_TOOLS)
def test_every_layout_tool_runs_without_params_with_monotonic_progress(samples: Path, tmp_path: Path,
                                                                       tool_id: str) -> None:
    run = run_tool(tool_id, inputs_for(tool_id, samples), tmp_path)
    assert [p.name for p in run.outputs] == ["three.pdf"]
    assert len(run.progress) >= 3 and run.progress == sorted(run.progress) and run.progress[-1] == 1.0
    with only_output(run) as out:
        assert pdfs.marker(1) in "".join(page.get_text() for page in out)


@pytest.mark.parametrize("tool_id", LAYOUT_TOOLS)
def test_a_cancelled_job_stops_and_leaves_no_file(samples: Path, tmp_path: Path, tool_id: str) -> None:
    asked: list[int] = []

    def cancelled() -> bool:  # cancel on the second look: the tool is then inside its page loop
        asked.append(1)
        return len(asked) >= 2

    with pytest.raises(Cancelled):
        run_tool(tool_id, inputs_for(tool_id, samples), tmp_path, cancelled=cancelled)
    assert list(tmp_path.iterdir()) == []


def test_every_param_of_the_layout_tools_is_described() -> None:
    for tool_id in LAYOUT_TOOLS:
        tool = load_catalogue().get(tool_id)
        assert tool is not None and tool.description
        for name, body in tool.params.model_json_schema(by_alias=True)["properties"].items():
            assert body.get("description"), f"{tool_id}: {name} has no description"

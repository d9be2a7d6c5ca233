"""pdf-compare on two versions of a document made here; the report and the highlighted PDF read back with PyMuPDF."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pymupdf
import pytest

from converters.base import ConversionError
from tests.converters import pdf_samples as pdfs
from tests.converters.runtool import run_tool

OLD = [["The quick brown fox jumps over the lazy dog.", "Second line is the same."],
       ["Page two stays exactly as it was."]]
NEW = [["The quick red fox jumps over the lazy dog.", "Second line is the same."],
       ["Page two stays exactly as it was."],
       ["A third page was added."]]


def document(path: Path, pages: list[list[str]], rotation: int = 0) -> Path:
    doc = pymupdf.open()
    for lines in pages:
        page = doc.new_page(width=595, height=842)
        for number, line in enumerate(lines):
            page.insert_text((72, 100 + 24 * number), line, fontsize=12)
        page.set_rotation(rotation)
    doc.save(path)
    doc.close()
    return path


def compare(tmp_path: Path, fmt: str, old: list[list[str]] = OLD, new: list[list[str]] = NEW,
            label: str = "out", **params: Any) -> tuple[Path, list[str], list[float]]:
    a, b = document(tmp_path / "v1.pdf", old), document(tmp_path / "v2.pdf", new)
    run = run_tool("pdf-compare", [a, b], tmp_path / label, params, output_format=fmt)
    [output] = run.outputs
    return output, run.notes, run.progress


def test_the_report_lists_changes_per_page_with_added_pages(tmp_path: Path) -> None:
    output, notes, progress = compare(tmp_path, "json")
    assert output.name == "v1-vs-v2.json"
    report = json.loads(output.read_text(encoding="utf-8"))
    assert report["pageCounts"] == [2, 3] and report["identical"] is False
    assert report["pagesChanged"] == [1, 3]
    first, third = report["pages"]
    assert first == {"page": 1, "changes": [{"op": "replace", "removed": "brown", "added": "red"}]}
    assert third == {"page": 3, "changes": [{"op": "insert", "added": "A third page was added."}]}
    assert notes == ["2 of 3 page(s) differ: 1, 3."]
    assert progress == sorted(progress) and progress[-1] == 1.0 and len(progress) >= 3


def test_lines_granularity_reports_whole_lines(tmp_path: Path) -> None:
    output, _, _ = compare(tmp_path, "json", granularity="lines")
    [change] = json.loads(output.read_text(encoding="utf-8"))["pages"][0]["changes"]
    assert change == {"op": "replace", "removed": OLD[0][0], "added": NEW[0][0]}


def test_case_can_be_ignored(tmp_path: Path) -> None:
    upper = [[line.upper() for line in lines] for lines in OLD]
    output, _, _ = compare(tmp_path, "json", old=OLD, new=upper, label="ignoring", ignoreCase=True)
    assert json.loads(output.read_text(encoding="utf-8"))["identical"] is True
    output, _, _ = compare(tmp_path, "json", old=OLD, new=upper, label="strict")
    assert json.loads(output.read_text(encoding="utf-8"))["identical"] is False


def test_the_pdf_shows_both_pages_side_by_side_with_the_changes_highlighted(tmp_path: Path) -> None:
    output, _, _ = compare(tmp_path, "pdf")
    with pymupdf.open(output) as doc:
        assert doc.page_count == 3
        sheet = doc[0]
        assert sheet.rect.width == pytest.approx(2 * 595 + 24) and sheet.rect.height == pytest.approx(842)
        left = sheet.get_text(clip=pymupdf.Rect(0, 0, 595, 842))
        right = sheet.get_text(clip=pymupdf.Rect(619, 0, 1214, 842))
        assert "brown" in left and "red" not in left and "red" in right and "brown" not in right
        # the marked area is the annotation's quad; its /Rect carries some padding
        highlights = {annot.info["content"]: pymupdf.Quad(annot.vertices[:4]).rect for annot in sheet.annots()}
        assert set(highlights) == {"removed", "added"}
        [brown] = sheet.search_for("brown")
        [quick, _] = sheet.search_for("quick")
        red = next(r for r in sheet.search_for("red") if r.x0 > 619)
        assert highlights["removed"].contains(brown) and not highlights["removed"].intersects(quick)
        assert highlights["added"].contains(red) and highlights["added"].x0 > 619
        assert [a.info["content"] for a in doc[1].annots()] == []
        assert [a.info["content"] for a in doc[2].annots()] == ["added"]
        assert "A third page" in doc[2].get_text(clip=pymupdf.Rect(619, 0, 1214, 842))


def test_highlights_follow_the_text_on_rotated_pages(tmp_path: Path) -> None:
    a = document(tmp_path / "a.pdf", OLD[:1], rotation=90)
    b = document(tmp_path / "b.pdf", NEW[:1], rotation=90)
    [output] = run_tool("pdf-compare", [a, b], tmp_path / "out", {}).outputs
    with pymupdf.open(output) as doc:
        sheet = doc[0]
        assert sheet.rect.width == pytest.approx(2 * 842 + 24)
        removed = next(pymupdf.Quad(a.vertices[:4]).rect for a in sheet.annots() if a.info["content"] == "removed")
        [brown] = sheet.search_for("brown")
        assert removed.contains(brown) and brown.height > brown.width  # the word reads top to bottom


def test_identical_documents_say_so(tmp_path: Path) -> None:
    output, notes, _ = compare(tmp_path, "json", old=OLD, new=OLD)
    assert json.loads(output.read_text(encoding="utf-8"))["identical"] is True
    assert notes == ["0 of 2 page(s) differ."]


def test_one_pdf_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConversionError) as caught:
        run_tool("pdf-compare", [pdfs.text_pdf(tmp_path / "one.pdf", 1)], tmp_path / "out", {})
    assert caught.value.code == "invalid_params"


def test_an_encrypted_pdf_is_password_protected(tmp_path: Path) -> None:
    plain = pdfs.text_pdf(tmp_path / "one.pdf", 1)
    with pytest.raises(ConversionError) as caught:
        run_tool("pdf-compare", [plain, pdfs.encrypted_pdf(tmp_path / "locked.pdf")], tmp_path / "out", {})
    assert caught.value.code == "password_protected"

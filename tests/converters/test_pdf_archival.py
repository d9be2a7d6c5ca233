"""pdf-to-pdfa through Ghostscript: the output's declared conformance, output intent and embedded fonts,
read back with PyMuPDF; and the tool's behaviour where Ghostscript is missing."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pymupdf
import pytest

from converters.base import ConversionError
from converters.catalogue import load_catalogue
from converters.tools.pdf.archival import ghostscript_command, postscript_string
from tests.converters import pdf_samples as pdfs
from tests.converters.runtool import run_tool

needs_gs = pytest.mark.skipif(shutil.which("gs") is None, reason="Ghostscript (gs) is not installed")


def source_pdf(path: Path) -> Path:
    """Two pages: text in Helvetica (a base-14 font, not embedded), a photo, a title."""
    pdfs.image_pdf(path.with_name("photos.pdf"))
    with pymupdf.open(path.with_name("photos.pdf")) as doc:
        doc[1].insert_text((72, 120), "Helvetica, not embedded", fontname="helv", fontsize=14)
        doc.set_metadata({"title": "Annual report"})
        doc.save(path)
    return path


@pytest.fixture(scope="module")
def converted(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, list[float]]:
    if shutil.which("gs") is None:
        pytest.skip("Ghostscript (gs) is not installed")
    folder = tmp_path_factory.mktemp("pdfa")
    source = source_pdf(folder / "report.pdf")
    run = run_tool("pdf-to-pdfa", [source], folder / "out")
    [output] = run.outputs
    return source, output, run.progress


@needs_gs
def test_the_output_declares_pdfa_2b(converted: tuple[Path, Path, list[float]]) -> None:
    _, output, _ = converted
    with pymupdf.open(output) as doc:
        xmp = doc.get_xml_metadata()
    assert re.search(r"pdfaid:part(>|=['\"])2", xmp) and re.search(r"pdfaid:conformance(>|=['\"])B", xmp)


@needs_gs
def test_the_output_has_an_srgb_output_intent(converted: tuple[Path, Path, list[float]]) -> None:
    _, output, _ = converted
    with pymupdf.open(output) as doc:
        kind, intents = doc.xref_get_key(doc.pdf_catalog(), "OutputIntents")
        assert kind == "array"
        intent = int(intents.strip("[]").split()[0])
        assert doc.xref_get_key(intent, "S") == ("name", "/GTS_PDFA1")
        profile = int(doc.xref_get_key(intent, "DestOutputProfile")[1].split()[0])
        assert doc.xref_get_key(profile, "N") == ("int", "3") and doc.xref_stream(profile)[36:40] == b"acsp"


@needs_gs
def test_every_font_is_embedded_even_the_ones_the_input_left_out(converted: tuple[Path, Path, list[float]]) -> None:
    source, output, _ = converted
    with pymupdf.open(source) as doc:
        assert any(font[1] == "n/a" for font in doc[1].get_fonts())  # the input relies on the reader's Helvetica
    with pymupdf.open(output) as doc:
        fonts = [font for page in doc for font in page.get_fonts()]
        assert fonts and all(font[1] != "n/a" for font in fonts), fonts


@needs_gs
def test_pages_text_images_and_title_survive(converted: tuple[Path, Path, list[float]]) -> None:
    _, output, progress = converted
    with pymupdf.open(output) as doc:
        assert doc.page_count == 2 and doc.metadata["title"] == "Annual report"
        assert pdfs.marker(1) in doc[0].get_text() and "Helvetica, not embedded" in doc[1].get_text()
        assert doc[0].get_images() and doc[0].rect == pymupdf.Rect(0, 0, *pdfs.A4)
    assert progress == sorted(progress) and progress[-1] == 1.0


@needs_gs
def test_an_encrypted_pdf_is_password_protected(tmp_path: Path) -> None:
    with pytest.raises(ConversionError) as caught:
        run_tool("pdf-to-pdfa", [pdfs.encrypted_pdf(tmp_path / "locked.pdf")], tmp_path / "out")
    assert caught.value.code == "password_protected"


def test_ghostscript_runs_sandboxed_and_may_read_only_the_profile() -> None:
    cmd = ghostscript_command("gs", Path("/in/a.pdf"), Path("/out/a.pdf"), Path("/tmp/x/pdfa.ps"),
                              Path("/tmp/x/srgb.icc"))
    assert cmd[0] == "gs" and "-dSAFER" in cmd and "-dPDFA=2" in cmd
    assert [arg for arg in cmd if arg.startswith("--permit")] == ["--permit-file-read=/tmp/x/srgb.icc"]
    assert cmd[-2:] == ["/tmp/x/pdfa.ps", "/in/a.pdf"] and "-sOutputFile=/out/a.pdf" in cmd


def test_paths_are_escaped_for_postscript() -> None:
    assert postscript_string(r"C:\temp\a (1)") == r"C:\\temp\\a \(1\)"


def test_without_ghostscript_the_tool_is_unavailable_and_says_how_to_get_it(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # an empty folder: no gs on the PATH
    tool = load_catalogue().get("pdf-to-pdfa")
    assert tool is not None and not tool.available()
    reason = tool.unavailable_reason() or ""
    assert "Ghostscript is not installed" in reason and "apt install ghostscript" in reason
    with pytest.raises(ConversionError) as caught:
        run_tool("pdf-to-pdfa", [pdfs.text_pdf(tmp_path / "a.pdf", 1)], tmp_path / "out")
    assert caught.value.code == "engine_missing"

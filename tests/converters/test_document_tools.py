"""document-to-pdf and document-convert on real engines: pandoc + Typst always, LibreOffice when installed."""

from __future__ import annotations

import shutil
import tempfile
import threading
import xml.etree.ElementTree as ET
import zipfile
from pathlib import Path

import psutil
import pymupdf
import pytest

from converters.base import Cancelled, ConversionError, ToolEnv
from converters.engines.office import close_pools, cold_command, get_pool, listen_command, registry_xcu
from converters.engines.pandoc import font_dirs, pandoc_command, text_to_pandoc_json
from tests.converters import doc_samples as s
from tests.converters.runtool import run_tool

HAS_OFFICE = shutil.which("soffice") is not None
needs_office = pytest.mark.skipif(not HAS_OFFICE, reason="LibreOffice (soffice) is not installed")


@pytest.fixture(autouse=True)
def _stop_office_instances() -> object:
    """Each test's warm LibreOffice instances end with the test (their profile dirs live under tmp_path)."""
    yield
    close_pools()


def env_for(tmp_path: Path, **settings: object) -> ToolEnv:
    return ToolEnv(models_dir=tmp_path / "data" / "models", settings=settings)


def assert_unicode(text: str) -> None:
    for sample in (s.ACCENTS, s.CJK, s.ARABIC, s.HEBREW):
        assert sample in text, f"{sample!r} missing from {text[:300]!r}"


# -- embedded engine: pandoc + Typst ----------------------------------------------------------------------

MAKERS = {
    "md": s.make_markdown,
    "html": s.make_html,
    "docx": s.make_docx,
    "odt": s.make_odt,
    "epub": s.make_epub,
    "rtf": s.make_rtf,
}


@pytest.mark.parametrize("fmt", sorted(MAKERS))
def test_pandoc_engine_renders_unicode_text_to_pdf(tmp_path: Path, fmt: str) -> None:
    source = MAKERS[fmt](tmp_path)
    run = run_tool("document-to-pdf", [source], tmp_path / "out", params={"engine": "pandoc"})
    assert len(run.outputs) == 1 and run.outputs[0].suffix == ".pdf"
    assert_unicode(s.pdf_text(run.outputs[0]))


def test_plain_text_keeps_markup_characters_literal(tmp_path: Path) -> None:
    source = tmp_path / "notes.txt"
    source.write_text("# not a heading\n\n*not bold* and $not math$ and #hash\n", encoding="utf-8")
    run = run_tool("document-to-pdf", [source], tmp_path / "out")
    text = s.pdf_text(run.outputs[0])
    assert "# not a heading" in text and "*not bold*" in text and "$not math$" in text


def test_rst_input_becomes_pdf(tmp_path: Path) -> None:
    source = tmp_path / "doc.rst"
    source.write_text("Title\n=====\n\nSome *rst* text with Zoë.\n", encoding="utf-8")
    run = run_tool("document-to-pdf", [source], tmp_path / "out")
    assert "Zoë" in s.pdf_text(run.outputs[0])


def test_page_size_letter_gives_letter_pages(tmp_path: Path) -> None:
    run = run_tool("document-to-pdf", [s.make_markdown(tmp_path)], tmp_path / "out", params={"pageSize": "letter"})
    with pymupdf.open(run.outputs[0]) as doc:
        assert (round(doc[0].rect.width), round(doc[0].rect.height)) == (612, 792)


def test_document_convert_to_pdf_goes_through_document_to_pdf(tmp_path: Path) -> None:
    source = s.make_markdown(tmp_path)
    run = run_tool("document-convert", [source], tmp_path / "out", params={"pageSize": "a5"}, output_format="pdf")
    with pymupdf.open(run.outputs[0]) as doc:
        assert (round(doc[0].rect.width), round(doc[0].rect.height)) == (420, 595)
    assert "Sample Title" in s.pdf_text(run.outputs[0])


def test_progress_rises_through_queued_converting_writing(tmp_path: Path) -> None:
    run = run_tool("document-to-pdf", [s.make_markdown(tmp_path)], tmp_path / "out")
    assert run.progress == sorted(run.progress)
    assert run.progress[-1] == 1.0
    assert any(0.0 < p <= 0.15 for p in run.progress) and any(0.9 <= p < 1.0 for p in run.progress)


def test_markdown_cannot_reach_local_files(tmp_path: Path) -> None:
    canary_text, canary_image = s.make_canary(tmp_path)
    source = s.make_markdown(tmp_path, "hostile.md", (
        "# Hostile\n\nVisible text.\n\n"
        f"![img]({canary_image.name})\n\n![abs]({canary_image.resolve()})\n\n"
        f'<iframe src="{canary_text.name}"></iframe>\n\n'
        f'```{{=typst}}\n#read("{canary_text.name}")\n```\n\n'
        f'```{{=html}}\n<iframe src="{canary_text.resolve().as_uri()}"></iframe>\n```\n'
    ))
    run = run_tool("document-to-pdf", [source], tmp_path / "out")
    with pymupdf.open(run.outputs[0]) as doc:
        text = "".join(page.get_text() for page in doc)
        images = [img for page in doc for img in page.get_images()]
    assert "Visible text." in text
    assert s.CANARY_TEXT not in text
    assert images == []


def test_html_iframe_and_images_are_not_fetched(tmp_path: Path) -> None:
    canary_text, canary_image = s.make_canary(tmp_path)
    source = s.make_html(tmp_path, (
        f'<iframe src="{canary_text.name}"></iframe><img src="{canary_image.name}">'
        f'<img src="{canary_image.resolve().as_uri()}"><link rel="stylesheet" href="{canary_text.name}">'
    ))
    run = run_tool("document-to-pdf", [source], tmp_path / "out", params={"engine": "pandoc"})
    with pymupdf.open(run.outputs[0]) as doc:
        assert s.CANARY_TEXT not in "".join(page.get_text() for page in doc)
        assert [img for page in doc for img in page.get_images()] == []
    assert any("image(s) left out" in note for note in run.notes)


def test_embedded_image_in_docx_is_kept(tmp_path: Path) -> None:
    image = s.make_cover(tmp_path, (64, 48))
    source = s.make_docx(tmp_path, "pic.docx", f"# Pic\n\n![a picture]({image.name})\n")
    run = run_tool("document-to-pdf", [source], tmp_path / "out", params={"engine": "pandoc"})
    with pymupdf.open(run.outputs[0]) as doc:
        assert [(img[2], img[3]) for page in doc for img in page.get_images()] == [(64, 48)]


# Metadata that pandoc's Typst template puts in verbatim: an import, raw Typst in the preamble that
# would read the generated document.typ (the one file in Typst's root) into the PDF, and text that
# would be typeset above the body. Each must stay out of the output; the title is kept, as text.
HOSTILE_METADATA = {
    "template": ('template: "@preview/evil:0.1.0"', "evil"),
    "header-includes": ('header-includes: |\n  ```{=typst}\n  #read("document.typ")\n  ```', "#read"),
    "include-before": ("include-before: HEADER-7f3a-INJECTED", "HEADER-7f3a-INJECTED"),
}


@pytest.mark.parametrize("key", sorted(HOSTILE_METADATA))
def test_metadata_cannot_import_typst_code(tmp_path: Path, key: str) -> None:
    line, marker = HOSTILE_METADATA[key]
    source = s.make_markdown(tmp_path, "meta.md", f"---\ntitle: Safe\n{line}\n---\n\nBody.\n")
    run = run_tool("document-to-pdf", [source], tmp_path / "out")
    text = s.pdf_text(run.outputs[0])
    assert "Safe" in text and text.count("Body.") == 1, text
    assert marker not in text and "document.typ" not in text, text


def test_damaged_docx_fails_cleanly_without_output(tmp_path: Path) -> None:
    source = tmp_path / "broken.docx"
    with zipfile.ZipFile(source, "w") as zf:
        zf.writestr("[Content_Types].xml", "<Types/>")
        zf.writestr("word/document.xml", "<not-closed>")
    out = tmp_path / "out"
    with pytest.raises(ConversionError) as err:
        run_tool("document-to-pdf", [source], out, params={"engine": "pandoc"})
    assert err.value.code == "damaged_input"
    assert list(out.iterdir()) == []


def test_legacy_doc_without_libreoffice_says_engine_missing(tmp_path: Path) -> None:
    source = tmp_path / "old.doc"
    source.write_bytes(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\x00" * 600)
    env = env_for(tmp_path, libreoffice_path=str(tmp_path / "no-such-soffice"))
    with pytest.raises(ConversionError) as err:
        run_tool("document-to-pdf", [source], tmp_path / "out", env=env)
    assert err.value.code == "engine_missing" and "LibreOffice" in err.value.message


def test_cancel_while_pandoc_runs_stops_it_and_leaves_nothing(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    # Long enough that pandoc is still reading when the tool first asks whether to stop.
    body = "".join(f"Paragraph {n} with *some* emphasis and **bold** words in it.\n\n" for n in range(12_000))
    source = s.make_markdown(tmp_path, "long.md", body)
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))  # where the tool's work dir goes
    seen: list[psutil.Process] = []

    def cancelled() -> bool:  # cancel once pandoc is running, not before
        if not seen:
            seen.extend(p for p in psutil.Process().children(recursive=True) if "pandoc" in p.name())
        return bool(seen)

    with pytest.raises(Cancelled):
        run_tool("document-to-pdf", [source], tmp_path / "out", params={"engine": "pandoc"}, cancelled=cancelled)
    assert seen, "pandoc never ran"
    alive = [p for p in seen if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
    assert alive == [], f"pandoc outlived the cancel: {alive}"
    assert list((tmp_path / "out").iterdir()) == []
    assert list(scratch.iterdir()) == []


def test_bundled_fonts_cover_cjk_arabic_and_hebrew() -> None:
    names = " ".join(p.name for d in font_dirs() for p in d.iterdir())
    assert "CJK" in names and "Arabic" in names and "Hebrew" in names


def test_pandoc_command_is_sandboxed_and_filtered(tmp_path: Path) -> None:
    cmd = pandoc_command("pandoc", "markdown", "typst", Path("/in.md"), Path("/out.typ"), Path("/f.lua"),
                         extract_media="media", variables={"papersize": "a4"})
    assert cmd[:2] == ["pandoc", "--sandbox"]
    assert "--lua-filter=/f.lua" in cmd and "--extract-media=media" in cmd and "--variable=papersize:a4" in cmd
    assert cmd[-3:] == ["-o", "/out.typ", "/in.md"]


def test_text_to_pandoc_json_keeps_paragraphs_and_lines() -> None:
    doc = text_to_pandoc_json("one\ntwo\n\nthree")
    assert '"LineBreak"' in doc and doc.count('"Para"') == 2


# -- document-convert ------------------------------------------------------------------------------------

def test_markdown_to_docx_carries_text(tmp_path: Path) -> None:
    run = run_tool("document-convert", [s.make_markdown(tmp_path)], tmp_path / "out", output_format="docx")
    assert run.outputs[0].suffix == ".docx"
    assert_unicode(s.zip_text(run.outputs[0]))


def test_docx_to_markdown_keeps_headings(tmp_path: Path) -> None:
    run = run_tool("document-convert", [s.make_docx(tmp_path)], tmp_path / "out", output_format="md",
                   params={"engine": "pandoc"})
    text = run.outputs[0].read_text(encoding="utf-8")
    assert "# First heading" in text
    assert_unicode(text)


def test_html_to_odt_carries_text(tmp_path: Path) -> None:
    run = run_tool("document-convert", [s.make_html(tmp_path)], tmp_path / "out", output_format="odt")
    assert_unicode(s.zip_text(run.outputs[0]))


def test_markdown_to_epub_has_title_and_author(tmp_path: Path) -> None:
    run = run_tool("document-convert", [s.make_markdown(tmp_path)], tmp_path / "out", output_format="epub")
    opf = s.zip_text(run.outputs[0], (".opf",))
    assert "Sample Title" in opf and "Ada Lovelace" in opf


def test_xlsx_to_csv_writes_one_file_per_sheet(tmp_path: Path) -> None:
    run = run_tool("document-convert", [s.make_xlsx(tmp_path)], tmp_path / "out", output_format="csv")
    names = [p.name for p in run.outputs]
    assert names == ["book-People.csv", "book-Totals.csv"]
    people = run.outputs[0].read_text(encoding="utf-8").splitlines()
    assert people == ["name,age,born", "Zoë,31,1994-05-17", f"{s.CJK},42,1983-01-02"]


def test_ods_to_csv_quotes_and_trims(tmp_path: Path) -> None:
    run = run_tool("document-convert", [s.make_ods(tmp_path)], tmp_path / "out", output_format="csv")
    lines = run.outputs[0].read_text(encoding="utf-8").splitlines()
    assert lines == ["name,score,when", '"Zoë, ""the"" best",9.5,2024-02-29']


def test_pdf_to_docx_keeps_text_of_every_page(tmp_path: Path) -> None:
    import docx

    run = run_tool("document-convert", [s.make_pdf(tmp_path, pages=2)], tmp_path / "out", output_format="docx")
    text = "\n".join(p.text for p in docx.Document(str(run.outputs[0])).paragraphs)
    assert "Heading 1" in text and "Heading 2" in text and "crème brûlée" in text
    assert any(0.1 < p < 0.9 for p in run.progress)


def test_same_format_conversion_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConversionError) as err:
        run_tool("document-convert", [s.make_docx(tmp_path)], tmp_path / "out", output_format="docx")
    assert err.value.code == "unsupported_conversion"


def test_pdf_to_markdown_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConversionError) as err:
        run_tool("document-convert", [s.make_pdf(tmp_path)], tmp_path / "out", output_format="md")
    assert err.value.code == "unsupported_conversion"


# -- LibreOffice -----------------------------------------------------------------------------------------

def test_profile_registry_forbids_macros_and_links() -> None:
    root = ET.fromstring(registry_xcu())
    values = {(item.get("{http://openoffice.org/2001/registry}path"), prop.get("{http://openoffice.org/2001/registry}name")):
              prop.findtext("value") for item in root for prop in item}
    assert values[("/org.openoffice.Office.Common/Security/Scripting", "MacroSecurityLevel")] == "3"
    assert values[("/org.openoffice.Office.Common/Security/Scripting", "DisableMacrosExecution")] == "true"
    assert values[("/org.openoffice.Office.Common/Security/Scripting", "BlockUntrustedRefererLinks")] == "true"
    assert values[("/org.openoffice.Office.Writer/Content/Update", "Link")] == "2"


def test_soffice_command_lines_use_own_profile(tmp_path: Path) -> None:
    listen = listen_command("soffice", tmp_path / "p", "pipe1")
    assert "--headless" in listen and f"-env:UserInstallation={(tmp_path / 'p').as_uri()}" in listen
    assert listen[-1] == "--accept=pipe,name=pipe1;urp;StarOffice.ComponentContext"
    cold = cold_command("soffice", tmp_path / "p", Path("/a.docx"), Path("/out"), "pdf")
    assert cold[-5:] == ["--convert-to", "pdf", "--outdir", "/out", "/a.docx"]


@needs_office
@pytest.mark.parametrize("maker", ["docx", "odt", "rtf"])
def test_libreoffice_renders_writer_documents_with_unicode(tmp_path: Path, maker: str) -> None:
    source = MAKERS[maker](tmp_path)
    run = run_tool("document-to-pdf", [source], tmp_path / "out", env=env_for(tmp_path))
    assert "LibreOffice" not in " ".join(run.notes)
    assert_unicode(s.pdf_text(run.outputs[0]))


@needs_office
def test_libreoffice_renders_spreadsheet_and_presentation(tmp_path: Path) -> None:
    sheet = s.make_xlsx(tmp_path)
    slides = s.pandoc_write("# Slide one\n\nZoë\n\n# Slide two\n\nBob\n", tmp_path / "deck.pptx")
    run = run_tool("document-to-pdf", [sheet, slides], tmp_path / "out", env=env_for(tmp_path))
    assert "Zoë" in s.pdf_text(run.outputs[0])
    with pymupdf.open(run.outputs[1]) as doc:
        assert doc.page_count == 2


@needs_office
def test_libreoffice_reads_csv_as_utf8(tmp_path: Path) -> None:
    run = run_tool("document-to-pdf", [s.make_csv(tmp_path)], tmp_path / "out", env=env_for(tmp_path))
    text = s.pdf_text(run.outputs[0])
    assert "Zürich" in text and s.CJK in text


@needs_office
def test_linked_image_and_included_file_are_not_loaded(tmp_path: Path) -> None:
    canary_text, canary_image = s.make_canary(tmp_path)
    source = s.make_docx_with_links(tmp_path, canary_text, canary_image)
    run = run_tool("document-to-pdf", [source], tmp_path / "out", env=env_for(tmp_path))
    with pymupdf.open(run.outputs[0]) as doc:
        text = "".join(page.get_text() for page in doc)
        sizes = [(img[2], img[3]) for page in doc for img in page.get_images()]
    assert "Visible body text." in text
    assert s.CANARY_TEXT not in text
    assert (123, 45) not in sizes


@needs_office
def test_document_macro_never_runs(tmp_path: Path) -> None:
    marker = tmp_path / "macro-ran.txt"
    source = s.make_odt_with_macro(tmp_path, marker)
    run = run_tool("document-to-pdf", [source], tmp_path / "out", env=env_for(tmp_path))
    assert "auto-run macro" in s.pdf_text(run.outputs[0])
    assert not marker.exists()


@needs_office
def test_cold_mode_converts_with_a_fresh_soffice(tmp_path: Path) -> None:
    run = run_tool("document-to-pdf", [s.make_docx(tmp_path)], tmp_path / "out",
                   env=env_for(tmp_path, office_mode="cold"))
    assert_unicode(s.pdf_text(run.outputs[0]))


@needs_office
def test_hung_conversion_is_killed_and_instance_restarted(tmp_path: Path) -> None:
    source = s.make_docx(tmp_path)
    with pytest.raises(ConversionError) as err:
        run_tool("document-to-pdf", [source], tmp_path / "out1", env=env_for(tmp_path, office_timeout_seconds=0.001))
    assert err.value.code == "timeout"
    assert list((tmp_path / "out1").iterdir()) == []
    run = run_tool("document-to-pdf", [source], tmp_path / "out2", env=env_for(tmp_path))
    assert_unicode(s.pdf_text(run.outputs[0]))


@needs_office
def test_instance_is_restarted_after_max_conversions(tmp_path: Path) -> None:
    env = env_for(tmp_path, office_max_conversions=2)
    source = s.make_docx(tmp_path)
    for i in range(3):
        run_tool("document-to-pdf", [source], tmp_path / f"out{i}", env=env)
    from converters.engines.office import find_soffice, find_uno_python

    soffice = find_soffice({})
    assert soffice is not None
    python = find_uno_python({}, soffice)
    if python is None:
        pytest.skip("no Python with uno: conversions run cold")
    instance = get_pool(env, soffice, python, font_dirs()).instances[0]
    assert instance.starts == 2


@needs_office
def test_eight_concurrent_conversions_are_not_mixed_up(tmp_path: Path) -> None:
    env = env_for(tmp_path, office_instances=2)
    sources = [s.make_docx(tmp_path, f"doc{i}.docx", f"# Document {i}\n\nUNIQUE-{i}-MARK\n") for i in range(8)]
    results: dict[int, str] = {}
    errors: list[BaseException] = []

    def convert(i: int) -> None:
        try:
            run = run_tool("document-to-pdf", [sources[i]], tmp_path / f"out{i}", env=env)
            results[i] = s.pdf_text(run.outputs[0])
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=convert, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=240)
    assert errors == []
    for i in range(8):
        assert f"UNIQUE-{i}-MARK" in results[i]
        assert all(f"UNIQUE-{j}-MARK" not in results[i] for j in range(8) if j != i)


@needs_office
def test_odt_converts_to_docx_with_libreoffice_engine(tmp_path: Path) -> None:
    first = run_tool("document-convert", [s.make_odt(tmp_path)], tmp_path / "mid", output_format="docx",
                     params={"engine": "libreoffice"}, env=env_for(tmp_path))
    assert_unicode(s.zip_text(first.outputs[0]))


@needs_office
def test_libreoffice_reports_page_progress(tmp_path: Path) -> None:
    text = "\n\n".join(f"# Part {i}\n\n" + "words " * 400 for i in range(8))
    source = s.make_docx(tmp_path, "long.docx", text)
    run = run_tool("document-to-pdf", [source], tmp_path / "out", env=env_for(tmp_path))
    with pymupdf.open(run.outputs[0]) as doc:
        pages = doc.page_count
    assert pages >= 4
    assert run.progress == sorted(run.progress)
    assert len({p for p in run.progress if 0.3 < p < 0.9}) >= pages // 2

"""ebook-convert on real engines: the built-in path always, Calibre when installed."""

from __future__ import annotations

import shutil
import zipfile
from pathlib import Path

import pymupdf
import pytest

from converters.base import ConversionError, ToolEnv
from converters.tools.ebooks.convert import calibre_command
from converters.tools.ebooks.meta import epub_info, fb2_info, mobi_info
from tests.converters import doc_samples as s
from tests.converters.runtool import run_tool

needs_calibre = pytest.mark.skipif(
    shutil.which("ebook-convert") is None, reason="Calibre (ebook-convert) is not installed"
)


def test_epub_to_pdf_keeps_title_author_cover_and_unicode(tmp_path: Path) -> None:
    book = s.make_epub(tmp_path, cover=s.make_cover(tmp_path))
    run = run_tool("ebook-convert", [book], tmp_path / "out", output_format="pdf")
    with pymupdf.open(run.outputs[0]) as doc:
        assert doc.metadata["title"] == "Sample Title" and doc.metadata["author"] == "Ada Lovelace"
        sizes = [(img[2], img[3]) for page in doc.pages(0, 3) for img in page.get_images()]
        text = "".join(page.get_text() for page in doc)
    assert (240, 360) in sizes
    for sample in (s.ACCENTS, s.CJK, s.ARABIC, s.HEBREW):
        assert sample in text


def test_cover_is_not_doubled_in_pdf(tmp_path: Path) -> None:
    book = s.make_epub(tmp_path, cover=s.make_cover(tmp_path))
    run = run_tool("ebook-convert", [book], tmp_path / "out", output_format="pdf")
    with pymupdf.open(run.outputs[0]) as doc:
        assert sum((img[2], img[3]) == (240, 360) for page in doc for img in page.get_images()) == 1


@pytest.mark.parametrize(("size", "points"), [("a5", (420, 595)), ("letter", (612, 792))])
def test_page_size_sets_pdf_pages(tmp_path: Path, size: str, points: tuple[int, int]) -> None:
    run = run_tool("ebook-convert", [s.make_fb2(tmp_path)], tmp_path / "out", output_format="pdf",
                   params={"pageSize": size})
    with pymupdf.open(run.outputs[0]) as doc:
        assert (round(doc[-1].rect.width), round(doc[-1].rect.height)) == points


def test_fb2_to_epub_keeps_title_author_and_cover(tmp_path: Path) -> None:
    cover = s.make_cover(tmp_path)
    run = run_tool("ebook-convert", [s.make_fb2(tmp_path, cover=cover)], tmp_path / "out", output_format="epub")
    info = epub_info(run.outputs[0])
    assert (info.title, info.author) == ("Sample Title", "Ada Lovelace")
    assert info.cover == cover.read_bytes()


def test_markdown_to_epub_takes_title_and_author_from_front_matter(tmp_path: Path) -> None:
    run = run_tool("ebook-convert", [s.make_markdown(tmp_path)], tmp_path / "out", output_format="epub")
    info = epub_info(run.outputs[0])
    assert (info.title, info.author) == ("Sample Title", "Ada Lovelace")
    assert s.CJK in s.zip_text(run.outputs[0])


def test_text_file_to_epub_is_titled_after_the_file(tmp_path: Path) -> None:
    source = tmp_path / "My Story.txt"
    source.write_text("Once upon a time.\n\nThe end.\n", encoding="utf-8")
    run = run_tool("ebook-convert", [source], tmp_path / "out", output_format="epub")
    assert epub_info(run.outputs[0]).title == "My Story"


def test_docx_to_txt_gives_the_text(tmp_path: Path) -> None:
    run = run_tool("ebook-convert", [s.make_docx(tmp_path)], tmp_path / "out", output_format="txt")
    text = run.outputs[0].read_text(encoding="utf-8")
    assert "First heading" in text and s.CJK in text


def test_cbz_to_pdf_has_one_page_per_image(tmp_path: Path) -> None:
    run = run_tool("ebook-convert", [s.make_cbz(tmp_path, pages=3)], tmp_path / "out", output_format="pdf")
    with pymupdf.open(run.outputs[0]) as doc:
        assert doc.page_count == 3
        assert all(len(page.get_images()) == 1 for page in doc)


def test_cbz_to_epub_has_every_page_and_a_cover(tmp_path: Path) -> None:
    run = run_tool("ebook-convert", [s.make_cbz(tmp_path, pages=3)], tmp_path / "out", output_format="epub")
    with zipfile.ZipFile(run.outputs[0]) as zf:
        assert zf.namelist()[0] == "mimetype"
        assert len([n for n in zf.namelist() if n.endswith(".png")]) == 3
    assert epub_info(run.outputs[0]).cover is not None
    with pymupdf.open(run.outputs[0]) as doc:
        assert doc.page_count >= 3


def test_cbz_to_txt_reports_no_text(tmp_path: Path) -> None:
    with pytest.raises(ConversionError) as err:
        run_tool("ebook-convert", [s.make_cbz(tmp_path)], tmp_path / "out", output_format="txt")
    assert err.value.code == "no_text"


def test_html_book_does_not_pull_in_local_files(tmp_path: Path) -> None:
    canary_text, canary_image = s.make_canary(tmp_path)
    source = s.make_html(tmp_path, f'<iframe src="{canary_text.name}"></iframe><img src="{canary_image.name}">')
    run = run_tool("ebook-convert", [source], tmp_path / "out", output_format="epub")
    with zipfile.ZipFile(run.outputs[0]) as zf:
        blobs = [zf.read(n) for n in zf.namelist()]
    assert not any(s.CANARY_TEXT.encode() in b for b in blobs)
    assert canary_image.read_bytes() not in blobs


def test_kindle_output_without_calibre_says_engine_missing(tmp_path: Path) -> None:
    env = ToolEnv(models_dir=tmp_path / "models", settings={"calibre_path": str(tmp_path / "nowhere")})
    with pytest.raises(ConversionError) as err:
        run_tool("ebook-convert", [s.make_epub(tmp_path)], tmp_path / "out", output_format="mobi", env=env)
    assert err.value.code == "engine_missing" and "Calibre" in err.value.message


def test_calibre_command_line_sets_paper_size() -> None:
    assert calibre_command("ebook-convert", Path("/a.epub"), Path("/b.pdf"), "a5") == [
        "ebook-convert", "/a.epub", "/b.pdf", "--paper-size", "a5"]


@needs_calibre
@pytest.mark.parametrize("fmt", ["mobi", "azw3"])
def test_calibre_writes_kindle_formats_with_metadata_and_cover(tmp_path: Path, fmt: str) -> None:
    cover = s.make_cover(tmp_path)
    run = run_tool("ebook-convert", [s.make_epub(tmp_path, cover=cover)], tmp_path / "out", output_format=fmt)
    info = mobi_info(run.outputs[0])
    assert (info.title, info.author) == ("Sample Title", "Ada Lovelace")
    assert info.cover is not None


@needs_calibre
def test_calibre_writes_fb2_with_metadata(tmp_path: Path) -> None:
    run = run_tool("ebook-convert", [s.make_epub(tmp_path)], tmp_path / "out", output_format="fb2")
    info = fb2_info(run.outputs[0])
    assert info.title == "Sample Title" and "Lovelace" in info.author


@needs_calibre
def test_azw3_reads_back_to_epub(tmp_path: Path) -> None:
    kindle = run_tool("ebook-convert", [s.make_epub(tmp_path, cover=s.make_cover(tmp_path))], tmp_path / "k",
                      output_format="azw3").outputs[0]
    run = run_tool("ebook-convert", [kindle], tmp_path / "out", output_format="epub")
    info = epub_info(run.outputs[0])
    assert (info.title, info.author) == ("Sample Title", "Ada Lovelace") and info.cover is not None
    assert s.CJK in s.zip_text(run.outputs[0])


@needs_calibre
def test_mobi_to_pdf_keeps_metadata_and_text(tmp_path: Path) -> None:
    mobi = run_tool("ebook-convert", [s.make_epub(tmp_path, cover=s.make_cover(tmp_path))], tmp_path / "k",
                    output_format="mobi").outputs[0]
    run = run_tool("ebook-convert", [mobi], tmp_path / "out", output_format="pdf")
    with pymupdf.open(run.outputs[0]) as doc:
        assert doc.metadata["title"] == "Sample Title" and doc.metadata["author"] == "Ada Lovelace"
        assert "First heading" in "".join(page.get_text() for page in doc)


@needs_calibre
def test_html_to_mobi_through_calibre_does_not_leak_local_files(tmp_path: Path) -> None:
    canary_text, canary_image = s.make_canary(tmp_path)
    source = s.make_html(tmp_path, (
        f'<iframe src="{canary_text.name}"></iframe><img src="{canary_image.name}">'
        f'<a href="{canary_text.name}">link</a>'
    ))
    mobi = run_tool("ebook-convert", [source], tmp_path / "out", output_format="mobi").outputs[0]
    with pymupdf.open(mobi) as doc:
        text = "".join(page.get_text() for page in doc)
    assert "First heading" in text and s.CANARY_TEXT not in text
    assert (123, 45) not in mobi_image_sizes(mobi)


def mobi_image_sizes(path: Path) -> list[tuple[int, int]]:
    """Sizes of every image record in a MOBI file (PalmDB records that Pillow can open)."""
    import io
    import struct

    from PIL import Image, UnidentifiedImageError

    data = path.read_bytes()
    count = struct.unpack_from(">H", data, 76)[0]
    offsets = [struct.unpack_from(">I", data, 78 + 8 * i)[0] for i in range(count)] + [len(data)]
    sizes = []
    for start, end in zip(offsets, offsets[1:], strict=False):
        try:
            sizes.append(Image.open(io.BytesIO(data[start:end])).size)
        except (UnidentifiedImageError, OSError):
            continue
    return sizes


@needs_calibre
def test_mobi_image_sizes_sees_the_cover(tmp_path: Path) -> None:
    mobi = run_tool("ebook-convert", [s.make_epub(tmp_path, cover=s.make_cover(tmp_path))], tmp_path / "k",
                    output_format="mobi").outputs[0]
    assert any(w > 100 and h > 100 for w, h in mobi_image_sizes(mobi))

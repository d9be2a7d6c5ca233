"""Ebooks: EPUB, MOBI, AZW3, FB2, CBZ, text, Markdown, HTML and Word to EPUB, PDF or text — and, with Calibre,
to MOBI, AZW3 and FB2. Title, author and cover travel with the book.

Built in: pandoc (sandboxed) for the text formats and EPUB/FB2, Typst for PDF, PyMuPDF for MOBI and CBZ.
Calibre (``ebook-convert``), when found, writes the Kindle formats and FB2 and reads AZW3.
"""

from __future__ import annotations

import html
import os
import shutil
import zipfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from converters.base import Context, ConversionError, InputFile, Params, Tool, atomic_output, scaled
from converters.engines.mupdf import check_pdf
from converters.engines.pandoc import PANDOC_ENGINE, pandoc_to_pdf, run_pandoc
from converters.engines.procs import run_command, scratch_dir
from converters.tools.ebooks.meta import BookInfo, book_info, cbz_pages, set_epub_cover

CALIBRE_OUTPUTS = frozenset({"mobi", "azw3", "fb2"})
CALIBRE_HINT = "Install Calibre (Debian/Ubuntu: apt install calibre; others: calibre-ebook.com) or set calibre_path."
PANDOC_INPUTS = frozenset({"epub", "fb2", "txt", "md", "html", "docx"})
CALIBRE_TIMEOUT = 600.0
PAPER_POINTS = {"a4": (595, 842), "a5": (420, 595), "a6": (298, 420), "letter": (612, 792), "legal": (612, 1008)}


def find_calibre(settings: Mapping[str, Any]) -> str | None:
    """``ebook-convert``: the ``calibre_path`` setting (the executable or its folder), else PATH."""
    configured = settings.get("calibre_path")
    if configured:
        path = Path(str(configured))
        if path.is_dir():
            for name in ("ebook-convert", "ebook-convert.exe"):
                if (path / name).is_file():
                    return str(path / name)
            return None
        return str(path) if path.is_file() else None
    return shutil.which("ebook-convert")


def calibre_command(ebook_convert: str, source: Path, target: Path, paper: str | None = None) -> list[str]:
    """The ``ebook-convert`` command line (Calibre picks formats from the suffixes)."""
    cmd = [ebook_convert, str(source), str(target)]
    if paper:
        cmd += ["--paper-size", paper]
    return cmd


def calibre_env(work: Path) -> dict[str, str]:
    """Calibre gets a private config and temp dir: never the user's own library settings."""
    env = dict(os.environ)
    env["CALIBRE_CONFIG_DIRECTORY"] = str(work / "calibre-config")
    env["CALIBRE_TEMP_DIR"] = str(work / "calibre-tmp")
    (work / "calibre-tmp").mkdir(parents=True, exist_ok=True)
    return env


class EbookParams(Params):
    engine: Literal["auto", "calibre", "embedded"] = Field(
        "auto",
        description="auto: Calibre where it is needed (mobi, azw3, fb2 output; azw3 input) or better (mobi input), "
        "the built-in engine otherwise.",
        json_schema_extra={"x-enumLabels": {"auto": "Automatic", "calibre": "Calibre", "embedded": "Built-in"}},
    )
    page_size: Literal["a4", "a5", "a6", "letter", "legal"] = Field(
        "a5", alias="pageSize", description="Page size of PDF output.",
        json_schema_extra={"x-enumLabels": {"a4": "A4", "a5": "A5", "a6": "A6", "letter": "Letter", "legal": "Legal"}},
    )


def plan(src: str, dst: str, engine: str, calibre: str | None) -> str:
    """``calibre`` when Calibre does the whole conversion, ``embedded`` otherwise; raises when impossible."""
    if src == dst:
        raise ConversionError("unsupported_conversion", f"The book already is {dst}")
    needs = dst in CALIBRE_OUTPUTS or src == "azw3"
    if engine == "embedded" and needs:
        raise ConversionError("engine_missing" if calibre is None else "unsupported_conversion",
                              f"{src} to {dst} needs Calibre. {CALIBRE_HINT}")
    if needs or engine == "calibre":
        if calibre is None:
            raise ConversionError("engine_missing",
                                  f"{src} to {dst} needs Calibre, which is not installed. {CALIBRE_HINT}")
        return "calibre"
    if engine == "auto" and calibre is not None and src == "mobi" and dst == "epub":
        return "calibre"
    return "embedded"


class EbookConvert(Tool):
    """Ebook formats to one another, keeping title, author and cover."""

    id = "ebook-convert"
    category = "ebooks"
    title = "Convert ebook"
    description = (
        "EPUB, MOBI, AZW3, FB2, CBZ, text, Markdown, HTML or Word to EPUB, PDF or text, keeping title, author and "
        "cover. MOBI, AZW3 and FB2 output and AZW3 input need Calibre."
    )
    accepts = ("epub", "mobi", "azw3", "fb2", "cbz", "txt", "md", "html", "docx")
    produces = ("epub", "pdf", "txt", "mobi", "azw3", "fb2")
    params = EbookParams
    engines = (PANDOC_ENGINE,)
    max_input_size_bytes = 500 * 1000**2
    timeout_seconds = 900.0

    def convert(self, ctx: Context, source: InputFile, progress: Callable[[float], None]) -> None:
        dst = ctx.output_format
        calibre = find_calibre(ctx.env.settings)
        route = plan(source.format, dst, ctx.params.engine, calibre)
        progress(0.05)
        info = book_info(source.path, source.format)
        with scratch_dir() as work, atomic_output(ctx.output_path(source.name, dst), require_content=True) as part:
            progress(0.1)
            if route == "calibre":
                assert calibre is not None
                self._calibre(ctx, source, dst, part, work, calibre, info)
            elif dst == "epub":
                self._to_epub(ctx, source, part, work, info)
            elif dst == "pdf":
                self._to_pdf(ctx, source, part, work, info, scaled(progress, 0.1, 0.8))
            else:
                self._to_txt(ctx, source, part, work)
            progress(0.95)
        progress(1.0)

    # -- routes --------------------------------------------------------------------------------------

    def _calibre(self, ctx: Context, source: InputFile, dst: str, part: Path, work: Path, calibre: str,
                 info: BookInfo) -> None:
        src_path = source.path
        if source.format in ("txt", "md", "html", "docx"):
            # Calibre follows links in HTML-like inputs to local files; pandoc (sandboxed) makes a closed EPUB first.
            src_path = work / "intermediate.epub"
            self._to_epub(ctx, source, src_path, work / "pandoc", info)
        else:
            src_path = work / f"input.{source.format}"
            shutil.copyfile(source.path, src_path)  # Calibre picks the reader from the suffix
        out = work / f"output.{dst}"
        paper = ctx.params.page_size if dst == "pdf" else None
        run_command(calibre_command(calibre, src_path, out, paper), timeout=CALIBRE_TIMEOUT, cancelled=ctx.cancelled,
                    cwd=work, env=calibre_env(work), engine="Calibre")
        if not out.is_file():
            raise ConversionError("damaged_input", "Calibre could not convert the book")
        shutil.move(str(out), part)

    def _to_epub(self, ctx: Context, source: InputFile, target: Path, work: Path, info: BookInfo) -> None:
        work.mkdir(parents=True, exist_ok=True)
        if source.format == "cbz":
            write_comic_epub(source.path, target, info)
            return
        src_path, src_fmt = source.path, source.format
        if source.format == "mobi":
            src_path, src_fmt = mobi_to_html(source.path, work, info), "html"
        ctx.notes.extend(run_pandoc(ctx.env, src_path, src_fmt, "epub3", target, work, ctx.cancelled,
                                    title_fallback=info.title or Path(source.name).stem))
        if info.cover is not None and set_epub_cover(target, info.cover, info.cover_mime):
            pass

    def _to_pdf(self, ctx: Context, source: InputFile, target: Path, work: Path, info: BookInfo,
                progress: Callable[[float], None]) -> None:
        width, height = PAPER_POINTS[ctx.params.page_size]
        if source.format in PANDOC_INPUTS:
            ctx.notes.extend(pandoc_to_pdf(ctx.env, source.path, source.format, target, work, progress, ctx.cancelled,
                                           paper=ctx.params.page_size))
        else:
            mupdf_to_pdf(source.path, target, width, height, progress, ctx.check_cancelled)
        finish_pdf(target, info, width, height, cover_page=source.format != "cbz")

    def _to_txt(self, ctx: Context, source: InputFile, target: Path, work: Path) -> None:
        if source.format in PANDOC_INPUTS:
            ctx.notes.extend(run_pandoc(ctx.env, source.path, source.format, "plain", target, work, ctx.cancelled,
                                        keep_images=False))
            return
        if source.format == "cbz":
            raise ConversionError("no_text", "A comic book archive holds only images: there is no text to extract")
        import pymupdf

        with pymupdf.open(source.path) as doc:  # type: ignore[no-untyped-call]
            text = "\n".join(page.get_text() for page in doc)
        if not text.strip():
            raise ConversionError("no_text", "The book has no extractable text")
        target.write_text(text, encoding="utf-8")


# -- helpers -------------------------------------------------------------------------------------------

def mobi_to_html(source: Path, work: Path, info: BookInfo) -> Path:
    """MOBI through MuPDF to one XHTML file (images inline as data: URIs), for pandoc to read."""
    import pymupdf

    try:
        doc: Any = pymupdf.open(source)  # type: ignore[no-untyped-call]
    except (pymupdf.FileDataError, RuntimeError) as exc:
        raise ConversionError("damaged_input", f"The MOBI file could not be read: {exc}") from exc
    with doc:
        body = "\n".join(page.get_text("xhtml") for page in doc)
    title, author = html.escape(info.title, quote=True), html.escape(info.author, quote=True)
    out = work / "mobi.html"
    out.write_text(f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{title}</title>"
                   f"<meta name='author' content='{author}'></head><body>{body}</body></html>", encoding="utf-8")
    return out


def mupdf_to_pdf(source: Path, target: Path, width: float, height: float,
                 progress: Callable[[float], None], check_cancelled: Callable[[], None]) -> None:
    """MOBI or CBZ rendered by MuPDF, page by page, at the chosen page size."""
    import pymupdf

    try:
        doc: Any = pymupdf.open(source)  # type: ignore[no-untyped-call]
    except (pymupdf.FileDataError, RuntimeError) as exc:
        raise ConversionError("damaged_input", f"The book could not be read: {exc}") from exc
    with doc:
        if doc.is_reflowable:
            doc.layout(width=width, height=height, fontsize=11)
        out: Any = pymupdf.open()  # type: ignore[no-untyped-call]
        total = doc.page_count
        if total == 0:
            raise ConversionError("damaged_input", "The book has no pages")
        for start in range(0, total, 10):
            check_cancelled()
            end = min(start + 10, total) - 1
            chunk = pymupdf.open("pdf", doc.convert_to_pdf(from_page=start, to_page=end))  # type: ignore[no-untyped-call]
            out.insert_pdf(chunk)
            progress((end + 1) / total)
        out.save(target, garbage=3, deflate=True)


def finish_pdf(target: Path, info: BookInfo, width: float, height: float, cover_page: bool) -> None:
    """Put title and author into the PDF's metadata and, when the book has a cover, make it page one."""
    import pymupdf

    check_pdf(target)
    doc: Any = pymupdf.open(target)  # type: ignore[no-untyped-call]
    with doc:
        meta = dict(doc.metadata or {})
        if info.title:
            meta["title"] = info.title
        if info.author:
            meta["author"] = info.author
        doc.set_metadata(meta)
        if cover_page and info.cover and not has_cover_already(doc, info.cover):
            page = doc.new_page(pno=0, width=width, height=height)
            try:
                page.insert_image(page.rect, stream=info.cover, keep_proportion=True)
            except (ValueError, RuntimeError):
                doc.delete_page(0)  # an unreadable cover is no reason to fail the book
        tmp = target.with_name(target.name + ".meta")
        doc.save(tmp, garbage=3, deflate=True)
    tmp.replace(target)


def has_cover_already(doc: Any, cover: bytes) -> bool:
    """Whether one of the first pages already shows an image of the cover's size (the book's own cover page)."""
    import io

    from PIL import Image, UnidentifiedImageError

    try:
        size = Image.open(io.BytesIO(cover)).size
    except (UnidentifiedImageError, OSError):
        return True  # unreadable: do not add it
    for page in doc.pages(0, min(3, doc.page_count)):
        if any((img[2], img[3]) == size for img in page.get_images()):
            return True
    return False


def write_comic_epub(source: Path, target: Path, info: BookInfo) -> None:
    """A CBZ as an EPUB 3: one page per image, the first image as cover."""
    from converters.tools.ebooks.meta import MIME_BY_EXT

    pages = cbz_pages(source)
    if not pages:
        raise ConversionError("damaged_input", "The comic archive holds no images")
    title = html.escape(info.title or source.stem)
    manifest, spine, nav = [], [], []
    with zipfile.ZipFile(source) as zf, zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as out:
        out.writestr("mimetype", "application/epub+zip", compress_type=zipfile.ZIP_STORED)
        out.writestr("META-INF/container.xml",
                     '<?xml version="1.0"?><container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:'
                     'container"><rootfiles><rootfile full-path="OEBPS/content.opf" '
                     'media-type="application/oebps-package+xml"/></rootfiles></container>')
        for i, name in enumerate(pages, start=1):
            ext = name.rsplit(".", 1)[-1].lower()
            image = f"images/p{i:04d}.{ext}"
            out.writestr(f"OEBPS/{image}", zf.read(name))
            out.writestr(f"OEBPS/p{i:04d}.xhtml",
                         '<?xml version="1.0" encoding="UTF-8"?><!DOCTYPE html><html xmlns="http://www.w3.org/1999/'
                         f'xhtml"><head><title>{title} {i}</title><style>body{{margin:0}}img{{width:100%}}</style>'
                         f'</head><body><img src="{image}" alt="page {i}"/></body></html>')
            props = ' properties="cover-image"' if i == 1 else ""
            manifest.append(f'<item id="img{i}" href="{image}" media-type="{MIME_BY_EXT[ext]}"{props}/>'
                            f'<item id="p{i}" href="p{i:04d}.xhtml" media-type="application/xhtml+xml"/>')
            spine.append(f'<itemref idref="p{i}"/>')
            nav.append(f'<li><a href="p{i:04d}.xhtml">{i}</a></li>')
        out.writestr("OEBPS/nav.xhtml",
                     '<?xml version="1.0" encoding="UTF-8"?><!DOCTYPE html><html xmlns="http://www.w3.org/1999/xhtml" '
                     f'xmlns:epub="http://www.idpf.org/2007/ops"><head><title>{title}</title></head><body>'
                     f'<nav epub:type="toc"><ol>{"".join(nav)}</ol></nav></body></html>')
        author = f"<dc:creator>{html.escape(info.author)}</dc:creator>" if info.author else ""
        out.writestr("OEBPS/content.opf",
                     '<?xml version="1.0" encoding="UTF-8"?><package xmlns="http://www.idpf.org/2007/opf" '
                     'version="3.0" unique-identifier="id"><metadata xmlns:dc="http://purl.org/dc/elements/1.1/">'
                     f'<dc:identifier id="id">urn:filekiln:{html.escape(source.stem)}</dc:identifier>'
                     f'<dc:title>{title}</dc:title>{author}<dc:language>en</dc:language>'
                     '<meta property="dcterms:modified">2000-01-01T00:00:00Z</meta>'
                     '<meta name="cover" content="img1"/></metadata><manifest>'
                     '<item id="nav" href="nav.xhtml" media-type="application/xhtml+xml" properties="nav"/>'
                     f'{"".join(manifest)}</manifest><spine>{"".join(spine)}</spine></package>')



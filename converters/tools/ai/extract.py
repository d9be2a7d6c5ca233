"""Text out of documents, for the AI text tools: PyMuPDF for pdf and epub, pandoc for docx, odt and html.

pandoc comes from ``pypandoc-binary`` (or PATH). Without it, docx and odt are read from their
XML and html through Python's own parser -- plainer, but the tools still work.
"""

from __future__ import annotations

import html.parser
import importlib.util
import os
import re
import shutil
import subprocess
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

from converters.base import ConversionError, InputFile
from converters.inputs import safexml

TEXT_FORMATS = ("pdf", "docx", "odt", "txt", "md", "html", "epub")
PANDOC_READERS = {"docx": "docx", "odt": "odt", "html": "html"}
PANDOC_TIMEOUT = 300.0


def pandoc_path() -> str | None:
    """The pandoc inside ``pypandoc-binary``, else one on PATH."""
    spec = importlib.util.find_spec("pypandoc")
    if spec is not None and spec.origin:
        bundled = Path(spec.origin).parent / "files" / ("pandoc.exe" if os.name == "nt" else "pandoc")
        if bundled.is_file():
            return str(bundled)
    return shutil.which("pandoc")


def pandoc_command(pandoc: str, source: Path, reader: str, markdown: bool) -> list[str]:
    """The pandoc command line turning ``source`` into Markdown (gfm) or plain text on stdout."""
    writer = "gfm-raw_html" if markdown else "plain"
    return [pandoc, "--sandbox", "--wrap=none", "-f", reader, "-t", writer, str(source)]


def extract_text(source: InputFile, markdown: bool, cancelled: Callable[[], bool] = lambda: False) -> str:
    """The document's text; Markdown where the format carries structure and ``markdown`` is asked for."""
    fmt = source.format
    if fmt in ("pdf", "epub"):
        return _pymupdf_text(source.path, fmt, cancelled)
    if fmt in ("txt", "md"):
        return decode(source.path.read_bytes())
    if fmt in ("docx", "odt"):
        safexml.check_archive(source.path)  # pandoc's readers of both expand declared entities without a limit
    pandoc = pandoc_path()
    if pandoc is not None and fmt in PANDOC_READERS:
        command = pandoc_command(pandoc, source.path, PANDOC_READERS[fmt], markdown)
        try:
            done = subprocess.run(command, capture_output=True, timeout=PANDOC_TIMEOUT, check=False)
        except subprocess.TimeoutExpired as exc:
            raise ConversionError("damaged_input", "Reading the document took too long.") from exc
        if done.returncode == 0:
            return done.stdout.decode("utf-8", "replace")
        # pandoc is strict about package parts (an odt without styles.xml ...); the plain reader is not.
        failure = done.stderr.decode("utf-8", "replace").strip()[:300]
        try:
            return _fallback_text(source.path, fmt)
        except ConversionError:
            raise ConversionError("damaged_input", f"The document cannot be read: {failure}") from None
    return _fallback_text(source.path, fmt)


def _fallback_text(path: Path, fmt: str) -> str:
    if fmt == "html":
        return html_text(decode(path.read_bytes()))
    return _office_xml_text(path, fmt)


def decode(data: bytes) -> str:
    """Text bytes as str: UTF-8 (with or without BOM), UTF-16 with BOM, else Latin-1."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return data.decode("utf-16")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return data.decode("latin-1")


def _pymupdf_text(path: Path, fmt: str, cancelled: Callable[[], bool]) -> str:
    import pymupdf

    opener: Any = pymupdf.open
    try:
        doc = opener(path, filetype=fmt)
    except (pymupdf.FileDataError, RuntimeError, ValueError) as exc:
        raise ConversionError("damaged_input", f"The document cannot be opened: {exc}") from exc
    if doc.needs_pass:
        raise ConversionError("password_protected", "The document is password-protected; unlock it first.")
    pages = []
    for page in doc:
        if cancelled():
            break
        pages.append(page.get_text("text", sort=True).strip())
    doc.close()
    return "\n\n".join(p for p in pages if p)


class _TextOf(html.parser.HTMLParser):
    """Visible text of an HTML page, with blocks on lines of their own."""

    BLOCKS = {"p", "div", "br", "li", "tr", "h1", "h2", "h3", "h4", "h5", "h6", "section", "article", "table"}
    HIDDEN = {"script", "style", "head", "template", "noscript"}

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.hidden = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in self.HIDDEN:
            self.hidden += 1
        elif tag in self.BLOCKS:
            self.parts.append("\n\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in self.HIDDEN:
            self.hidden = max(0, self.hidden - 1)
        elif tag in self.BLOCKS:
            self.parts.append("\n\n")

    def handle_data(self, data: str) -> None:
        if not self.hidden:
            self.parts.append(data)


def html_text(markup: str) -> str:
    parser = _TextOf()
    parser.feed(markup)
    parser.close()
    text = re.sub(r"[ \t\r\f\v]+", " ", "".join(parser.parts))
    return re.sub(r"\n\s*\n(\s*\n)*", "\n\n", text).strip()


def _office_xml_text(path: Path, fmt: str) -> str:
    """Paragraph texts of a docx (word/document.xml) or odt (content.xml), without pandoc."""
    member, paragraph, run_text = {
        "docx": ("word/document.xml", "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}p",
                 "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}t"),
        "odt": ("content.xml", None, None),
    }[fmt]  # fmt: skip
    try:
        with zipfile.ZipFile(path) as archive:
            root = safexml.fromstring(archive.read(member))
    except (zipfile.BadZipFile, KeyError, ElementTree.ParseError, OSError) as exc:
        raise ConversionError("damaged_input", f"The document cannot be read: {exc}") from exc
    if fmt == "docx":
        paragraphs = ["".join(t.text or "" for t in p.iter(run_text)) for p in root.iter(paragraph)]
    else:
        text_ns = "{urn:oasis:names:tc:opendocument:xmlns:text:1.0}"
        paragraphs = ["".join(p.itertext()) for p in root.iter() if p.tag in (f"{text_ns}p", f"{text_ns}h")]
    return "\n\n".join(p.strip() for p in paragraphs if p.strip())

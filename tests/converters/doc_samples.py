"""Sample documents and ebooks for the documents/ebooks tests, made on the spot (pandoc writes most of them)."""

from __future__ import annotations

import base64
import io
import re
import subprocess
import zipfile
from pathlib import Path

from PIL import Image

ACCENTS = "Café crème brûlée, naïve Zoë"
CJK = "日本語のテキスト"
ARABIC = "بالعالم"
HEBREW = "שלום"
UNICODE_LINE = f"{ACCENTS}. {CJK}. مرحبا {ARABIC}. {HEBREW} עולם."

MARKDOWN = f"""---
title: Sample Title
author: Ada Lovelace
---

# First heading

{UNICODE_LINE}

Plain paragraph with **bold** and *italic* words.

# Second heading

| fruit | count |
|-------|-------|
| apple | 3     |
"""


def pandoc_path() -> str:
    import pypandoc

    return str(pypandoc.get_pandoc_path())


def pandoc_write(markdown: str, out: Path, *extra: str) -> Path:
    """Write ``markdown`` to ``out`` with pandoc (format from the suffix)."""
    # no timeout of its own: pytest-timeout ends a hung test, and a slow machine is not a failure
    subprocess.run(
        [pandoc_path(), "-f", "markdown", "-o", str(out), *extra],
        input=markdown.encode(), check=True, cwd=out.parent,
    )
    return out


def make_markdown(tmp: Path, name: str = "sample.md", text: str = MARKDOWN) -> Path:
    path = tmp / name
    path.write_text(text, encoding="utf-8")
    return path


def make_html(tmp: Path, body: str = "", name: str = "sample.html") -> Path:
    path = tmp / name
    path.write_text(
        "<!DOCTYPE html><html><head><meta charset='utf-8'><title>Sample Title</title>"
        "<meta name='author' content='Ada Lovelace'></head><body>"
        f"<h1>First heading</h1><p>{UNICODE_LINE}</p>{body}</body></html>",
        encoding="utf-8",
    )
    return path


def make_docx(tmp: Path, name: str = "sample.docx", text: str = MARKDOWN) -> Path:
    return pandoc_write(text, tmp / name)


def make_odt(tmp: Path, name: str = "sample.odt", text: str = MARKDOWN) -> Path:
    return pandoc_write(text, tmp / name)


def make_rtf(tmp: Path, name: str = "sample.rtf", text: str = MARKDOWN) -> Path:
    return pandoc_write(text, tmp / name, "-s")


def make_cover(tmp: Path, size: tuple[int, int] = (240, 360), color: tuple[int, int, int] = (200, 30, 30)) -> Path:
    path = tmp / "cover.jpg"
    Image.new("RGB", size, color).save(path, quality=90)
    return path


def make_epub(tmp: Path, name: str = "book.epub", cover: Path | None = None, text: str = MARKDOWN) -> Path:
    """An EPUB 3 with title, author, two chapters and optionally a cover image."""
    extra = [f"--epub-cover-image={cover}"] if cover else []
    return pandoc_write(text, tmp / name, *extra)


def make_fb2(tmp: Path, name: str = "book.fb2", cover: Path | None = None) -> Path:
    """A FictionBook 2 file with title, author, a cover and Unicode text, written by hand."""
    binary = ""
    coverpage = ""
    if cover is not None:
        data = base64.b64encode(cover.read_bytes()).decode()
        binary = f'<binary id="cover.jpg" content-type="image/jpeg">{data}</binary>'
        coverpage = '<coverpage><image l:href="#cover.jpg"/></coverpage>'
    text = (
        '<?xml version="1.0" encoding="utf-8"?>\n'
        '<FictionBook xmlns="http://www.gribuser.ru/xml/fictionbook/2.0" xmlns:l="http://www.w3.org/1999/xlink">'
        "<description><title-info><author><first-name>Ada</first-name><last-name>Lovelace</last-name></author>"
        f"<book-title>Sample Title</book-title>{coverpage}<lang>en</lang></title-info></description>"
        f"<body><section><title><p>First heading</p></title><p>{UNICODE_LINE}</p></section>"
        "<section><title><p>Second heading</p></title><p>Second chapter text.</p></section></body>"
        f"{binary}</FictionBook>"
    )
    path = tmp / name
    path.write_text(text, encoding="utf-8")
    return path


def make_cbz(tmp: Path, pages: int = 3, name: str = "comic.cbz") -> Path:
    """A comic book archive of ``pages`` distinct PNG pages."""
    path = tmp / name
    with zipfile.ZipFile(path, "w") as zf:
        for i in range(pages):
            buf = io.BytesIO()
            Image.new("RGB", (300, 450), (40 * i, 100, 200 - 40 * i)).save(buf, "PNG")
            zf.writestr(f"page{i + 1:02d}.png", buf.getvalue())
    return path


def make_csv(tmp: Path, name: str = "table.csv") -> Path:
    path = tmp / name
    path.write_text(f"name,city\nZoë,Zürich\n{CJK},東京\n", encoding="utf-8")
    return path


def make_xlsx(tmp: Path, name: str = "book.xlsx") -> Path:
    """A two-sheet workbook: text with Unicode, numbers, a date and a formula with a cached value."""
    import datetime

    import openpyxl

    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "People"
    ws.append(["name", "age", "born"])
    ws.append(["Zoë", 31, datetime.date(1994, 5, 17)])
    ws.append([CJK, 42, datetime.date(1983, 1, 2)])
    second = wb.create_sheet("Totals")
    second.append(["total", 73])
    path = tmp / name
    wb.save(path)
    return path


def make_pdf(tmp: Path, name: str = "sample.pdf", pages: int = 2) -> Path:
    """A text PDF with a heading and a paragraph per page."""
    import pymupdf

    doc = pymupdf.open()
    for i in range(pages):
        page = doc.new_page()
        page.insert_text((72, 90), f"Heading {i + 1}", fontsize=20)
        page.insert_text((72, 130), f"Body text on page {i + 1} about crème brûlée.", fontsize=11)
    path = tmp / name
    doc.save(path)
    return path


# --- hostile documents -------------------------------------------------------------------------------

CANARY_TEXT = "CANARY-7f3a9c-SECRET"


def make_canary(tmp: Path) -> tuple[Path, Path]:
    """A local text file and a local PNG (odd size 123x45) that no output may ever contain."""
    text = tmp / "canary.txt"
    text.write_text(CANARY_TEXT + "\n", encoding="utf-8")
    image = tmp / "canary.png"
    Image.new("RGB", (123, 45), (0, 255, 0)).save(image)
    return text, image


def make_docx_with_links(
    tmp: Path, canary_text: Path, canary_image: Path, name: str = "linked.docx", remote: str | None = None
) -> Path:
    """A docx whose body links an external image, INCLUDETEXTs a local file (cached result: placeholder) and
    holds an OLE object linked to that file. With ``remote`` (an http URL) it also links an image there and
    INCLUDETEXTs and INCLUDEPICTUREs from there."""
    base = make_docx(tmp, "base-for-links.docx", "# Linked\n\nVisible body text.\n")
    out = tmp / name
    targets = [("rIdCanaryImg", "image", canary_image.resolve().as_uri()),
               ("rIdCanaryOle", "oleObject", canary_text.resolve().as_uri())]
    body = _docx_linked_image("rIdCanaryImg", 77) + _docx_field(f'INCLUDETEXT "{canary_text.resolve()}"') + (
        '<w:p><w:r><w:object w:dxaOrig="1440" w:dyaOrig="720">'
        '<v:shape id="_x0000_i1099" type="#_x0000_t75" style="width:72pt;height:36pt" o:ole=""/>'
        '<o:OLEObject Type="Link" ProgID="Word.Document.12" ShapeID="_x0000_i1099" DrawAspect="Content" '
        'r:id="rIdCanaryOle" UpdateMode="Always"><o:LinkType>EnhancedMetaFile</o:LinkType>'
        "<o:LockedField>false</o:LockedField></o:OLEObject></w:object></w:r></w:p>"
    )
    if remote is not None:
        targets.append(("rIdRemoteImg", "image", f"{remote}/linked.png"))
        body += _docx_linked_image("rIdRemoteImg", 78) + _docx_field(f'INCLUDETEXT "{remote}/included.txt"')
        body += _docx_field(f'INCLUDEPICTURE "{remote}/included.png" \\d')
    rels = "".join(
        f'<Relationship Id="{rid}" TargetMode="External" '
        f'Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/{kind}" Target="{target}"/>'
        for rid, kind, target in targets
    )
    with zipfile.ZipFile(base) as src, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for item in src.infolist():
            data = src.read(item.filename)
            if item.filename == "word/_rels/document.xml.rels":
                data = data.replace(b"</Relationships>", rels.encode() + b"</Relationships>")
            elif item.filename == "word/document.xml":
                data = data.replace(b"<w:sectPr", body.encode() + b"<w:sectPr", 1)
            dst.writestr(item, data)
    return out


def _docx_linked_image(rid: str, shape_id: int) -> str:
    """A picture whose bytes are not in the docx: ``r:link`` names an external relationship."""
    return (
        f'<w:p><w:r><w:drawing><wp:inline><wp:extent cx="1171575" cy="428625"/><wp:docPr id="{shape_id}" '
        'name="linked"/><a:graphic><a:graphicData uri="http://schemas.openxmlformats.org/drawingml/2006/picture">'
        f'<pic:pic><pic:nvPicPr><pic:cNvPr id="{shape_id}" name="linked.png"/><pic:cNvPicPr/></pic:nvPicPr>'
        f'<pic:blipFill><a:blip r:link="{rid}"/><a:stretch><a:fillRect/></a:stretch></pic:blipFill>'
        '<pic:spPr><a:xfrm><a:off x="0" y="0"/><a:ext cx="1171575" cy="428625"/></a:xfrm>'
        '<a:prstGeom prst="rect"><a:avLst/></a:prstGeom></pic:spPr></pic:pic>'
        "</a:graphicData></a:graphic></wp:inline></w:drawing></w:r></w:p>"
    )


def _docx_field(instruction: str) -> str:
    """A complex field whose cached result is the word "placeholder"."""
    return (
        '<w:p><w:r><w:fldChar w:fldCharType="begin"/></w:r>'
        f'<w:r><w:instrText xml:space="preserve"> {instruction} </w:instrText></w:r>'
        '<w:r><w:fldChar w:fldCharType="separate"/></w:r><w:r><w:t>placeholder</w:t></w:r>'
        '<w:r><w:fldChar w:fldCharType="end"/></w:r></w:p>'
    )


def odf_linked_body(canary_text: Path, canary_image: Path, remote: str) -> str:
    """ODF text paragraphs that link instead of embed: an image, a section's content (Writer's INCLUDETEXT)
    and an OLE object, each once to the local canary files and once to ``remote`` (an http URL)."""
    def image(href: str, n: int) -> str:
        return (f'<text:p><draw:frame draw:name="linked{n}" text:anchor-type="as-char" svg:width="3cm" '
                f'svg:height="1cm"><draw:image xlink:href="{href}" xlink:type="simple" xlink:show="embed" '
                'xlink:actuate="onLoad"/></draw:frame></text:p>')

    def section(href: str, n: int, filter_name: str) -> str:
        return (f'<text:section text:name="included{n}"><text:section-source xlink:href="{href}" '
                f'xlink:type="simple" text:filter-name="{filter_name}"/><text:p>placeholder</text:p></text:section>')

    def ole(href: str, n: int) -> str:
        return (f'<text:p><draw:frame draw:name="object{n}" text:anchor-type="as-char" svg:width="3cm" '
                f'svg:height="1cm"><draw:object xlink:href="{href}" xlink:type="simple" xlink:show="embed" '
                'xlink:actuate="onLoad"/></draw:frame></text:p>')

    text_uri, image_uri = canary_text.resolve().as_uri(), canary_image.resolve().as_uri()
    return (
        "<text:p>Visible body text.</text:p>"
        + image(image_uri, 1) + image(f"{remote}/linked.png", 2)
        + section(text_uri, 1, "Text") + section(f"{remote}/included.html", 2, "HTML (StarWriter)")
        + ole(text_uri, 1) + ole(f"{remote}/object.odt", 2)
    )


def make_odt_with_links(tmp: Path, canary_text: Path, canary_image: Path, remote: str,
                        name: str = "linked.odt") -> Path:
    """An ODT whose body is :func:`odf_linked_body`."""
    base = make_odt(tmp, "base-for-links.odt", "Body.\n")
    out = tmp / name
    body = odf_linked_body(canary_text, canary_image, remote).encode()
    with zipfile.ZipFile(base) as src, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for item in src.infolist():
            data = src.read(item.filename)
            if item.filename == "content.xml":
                data = re.sub(rb"(<office:text[^>]*>).*(</office:text>)", lambda m: m[1] + body + m[2], data,
                              count=1, flags=re.DOTALL)
            dst.writestr(item, data)
    return out


def make_fodt_with_links(tmp: Path, canary_text: Path, canary_image: Path, remote: str,
                         name: str = "linked.fodt") -> Path:
    """A flat ODT (the whole document as one XML file, no ZIP) whose body is :func:`odf_linked_body`."""
    ns = {
        "office": "urn:oasis:names:tc:opendocument:xmlns:office:1.0",
        "text": "urn:oasis:names:tc:opendocument:xmlns:text:1.0",
        "draw": "urn:oasis:names:tc:opendocument:xmlns:drawing:1.0",
        "svg": "urn:oasis:names:tc:opendocument:xmlns:svg-compatible:1.0",
        "xlink": "http://www.w3.org/1999/xlink",
    }
    declarations = " ".join(f'xmlns:{prefix}="{uri}"' for prefix, uri in ns.items())
    path = tmp / name
    path.write_text(
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f'<office:document {declarations} office:version="1.3" '
        'office:mimetype="application/vnd.oasis.opendocument.text">'
        f"<office:body><office:text>{odf_linked_body(canary_text, canary_image, remote)}</office:text></office:body>"
        "</office:document>\n",
        encoding="utf-8",
    )
    return path


def make_odt_with_macro(tmp: Path, marker: Path, name: str = "macro.odt") -> Path:
    """An ODT whose Basic macro, bound to the document's load event, would write ``marker``."""
    base = make_odt(tmp, "base-for-macro.odt", "# Macro\n\nA document with an auto-run macro.\n")
    out = tmp / name
    module = (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<!DOCTYPE script:module PUBLIC "-//OpenOffice.org//DTD OfficeDocument 1.0//EN" "module.dtd">\n'
        '<script:module xmlns:script="http://openoffice.org/2000/script" script:name="Module1" '
        'script:language="StarBasic">Sub Main\n'
        f'  Open "{marker.resolve()}" For Output As #1\n  Print #1, "macro ran"\n  Close #1\nEnd Sub\n'
        "</script:module>"
    )
    library = (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<!DOCTYPE library:library PUBLIC "-//OpenOffice.org//DTD OfficeDocument 1.0//EN" "library.dtd">\n'
        '<library:library xmlns:library="http://openoffice.org/2000/library" library:name="Standard" '
        'library:readonly="false" library:passwordprotected="false">'
        '<library:element library:name="Module1"/></library:library>'
    )
    container = (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<!DOCTYPE library:libraries PUBLIC "-//OpenOffice.org//DTD OfficeDocument 1.0//EN" "libraries.dtd">\n'
        '<library:libraries xmlns:library="http://openoffice.org/2000/library" '
        'xmlns:xlink="http://www.w3.org/1999/xlink">'
        '<library:library library:name="Standard" library:link="false"/></library:libraries>'
    )
    events = (
        "<office:scripts><office:event-listeners>"
        '<script:event-listener script:language="ooo:script" script:event-name="dom:load" '
        'xlink:href="vnd.sun.star.script:Standard.Module1.Main?language=Basic&amp;location=document" '
        'xlink:type="simple"/></office:event-listeners></office:scripts>'
    )
    manifest_extra = (
        '<manifest:file-entry manifest:media-type="text/xml" manifest:full-path="Basic/Standard/Module1.xml"/>'
        '<manifest:file-entry manifest:media-type="text/xml" manifest:full-path="Basic/Standard/script-lb.xml"/>'
        '<manifest:file-entry manifest:media-type="text/xml" manifest:full-path="Basic/script-lc.xml"/>'
    )
    with zipfile.ZipFile(base) as src, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for item in src.infolist():
            data = src.read(item.filename)
            if item.filename == "content.xml":
                data = re.sub(rb"(<office:document-content[^>]*>)", rb"\1" + events.encode(), data, count=1)
            elif item.filename == "META-INF/manifest.xml":
                data = data.replace(b"</manifest:manifest>", manifest_extra.encode() + b"</manifest:manifest>")
            dst.writestr(item, data)
        dst.writestr("Basic/Standard/Module1.xml", module)
        dst.writestr("Basic/Standard/script-lb.xml", library)
        dst.writestr("Basic/script-lc.xml", container)
    return out


def make_ods(tmp: Path, name: str = "book.ods") -> Path:
    """A one-sheet OpenDocument spreadsheet written by hand: text, a float, a date and a repeated empty tail."""
    content = (
        '<?xml version="1.0" encoding="UTF-8"?>'
        '<office:document-content xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
        'xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0" '
        'xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" office:version="1.3">'
        '<office:body><office:spreadsheet><table:table table:name="Data">'
        "<table:table-row><table:table-cell office:value-type=\"string\"><text:p>name</text:p></table:table-cell>"
        "<table:table-cell office:value-type=\"string\"><text:p>score</text:p></table:table-cell>"
        "<table:table-cell office:value-type=\"string\"><text:p>when</text:p></table:table-cell></table:table-row>"
        "<table:table-row><table:table-cell office:value-type=\"string\"><text:p>Zoë, \"the\" best</text:p>"
        "</table:table-cell><table:table-cell office:value-type=\"float\" office:value=\"9.5\"><text:p>9.5</text:p>"
        "</table:table-cell><table:table-cell office:value-type=\"date\" office:date-value=\"2024-02-29\">"
        "<text:p>29/02/24</text:p></table:table-cell>"
        '<table:table-cell table:number-columns-repeated="16381"/></table:table-row>'
        '<table:table-row table:number-rows-repeated="1048574"><table:table-cell '
        'table:number-columns-repeated="16384"/></table:table-row>'
        "</table:table></office:spreadsheet></office:body></office:document-content>"
    )
    path = tmp / name
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("mimetype", "application/vnd.oasis.opendocument.spreadsheet", compress_type=zipfile.ZIP_STORED)
        zf.writestr("content.xml", content)
        zf.writestr(
            "META-INF/manifest.xml",
            '<?xml version="1.0" encoding="UTF-8"?><manifest:manifest '
            'xmlns:manifest="urn:oasis:names:tc:opendocument:xmlns:manifest:1.0" manifest:version="1.3">'
            '<manifest:file-entry manifest:full-path="/" '
            'manifest:media-type="application/vnd.oasis.opendocument.spreadsheet"/>'
            '<manifest:file-entry manifest:full-path="content.xml" manifest:media-type="text/xml"/>'
            "</manifest:manifest>",
        )
    return path


def pdf_text(path: Path) -> str:
    import pymupdf

    with pymupdf.open(path) as doc:
        return "\n".join(page.get_text() for page in doc)


def zip_text(path: Path, suffixes: tuple[str, ...] = (".xml", ".xhtml", ".html", ".opf")) -> str:
    """Every XML-ish member of a zip container (docx, odt, epub), concatenated."""
    with zipfile.ZipFile(path) as zf:
        return "\n".join(zf.read(n).decode("utf-8", "replace") for n in zf.namelist() if n.endswith(suffixes))

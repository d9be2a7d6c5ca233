"""Sample files for the AI tool tests: a clear object on a plain background, and small documents."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pymupdf
from PIL import Image, ImageDraw

STORY = (
    "The community garden opened in April. Volunteers planted tomatoes, beans and sunflowers.",
    "In June a storm damaged the greenhouse roof. The city paid for the repairs.",
    "The autumn harvest gave three hundred kilograms of vegetables to the food bank.",
)


def object_on_background(path: Path, size: tuple[int, int] = (320, 240)) -> Path:
    """A red disc, centred, on a plain light-grey background (png, jpg ... by suffix)."""
    picture = Image.new("RGB", size, (232, 232, 232))
    width, height = size
    radius = min(size) // 4
    ImageDraw.Draw(picture).ellipse(
        (width // 2 - radius, height // 2 - radius, width // 2 + radius, height // 2 + radius), fill=(200, 30, 30)
    )
    picture.save(path)
    return path


def text_file(path: Path, paragraphs: tuple[str, ...] = STORY) -> Path:
    path.write_text("\n\n".join(paragraphs) + "\n", encoding="utf-8")
    return path


def pdf_file(path: Path, paragraphs: tuple[str, ...] = STORY) -> Path:
    doc = pymupdf.open()
    for paragraph in paragraphs:
        page = doc.new_page(width=595, height=842)
        page.insert_textbox(pymupdf.Rect(50, 50, 545, 800), paragraph, fontsize=11)
    doc.save(path)
    return path


def image_only_pdf(path: Path) -> Path:
    doc = pymupdf.open()
    page = doc.new_page(width=200, height=200)
    page.draw_rect(pymupdf.Rect(20, 20, 180, 180), fill=(0.2, 0.4, 0.8))
    doc.save(path)
    return path


def html_file(path: Path, paragraphs: tuple[str, ...] = STORY) -> Path:
    body = "".join(f"<p>{p}</p>" for p in paragraphs)
    path.write_text(f"<!doctype html><html><head><style>p{{}}</style></head><body>{body}</body></html>", "utf-8")
    return path


_W = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"


def docx_file(path: Path, paragraphs: tuple[str, ...] = STORY) -> Path:
    """A minimal WordprocessingML package, written by hand."""
    body = "".join(f"<w:p><w:r><w:t>{p}</w:t></w:r></w:p>" for p in paragraphs)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr(
            "[Content_Types].xml",
            '<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/'
            'content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.'
            'relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/word/'
            'document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main'
            '+xml"/></Types>',
        )
        zf.writestr(
            "_rels/.rels",
            '<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/'
            '2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/'
            'relationships/officeDocument" Target="word/document.xml"/></Relationships>',
        )
        zf.writestr("word/document.xml", f'<?xml version="1.0" encoding="UTF-8"?><w:document xmlns:w="{_W}"><w:body>'
                    f"{body}</w:body></w:document>")
    return path


def odt_file(path: Path, paragraphs: tuple[str, ...] = STORY) -> Path:
    """A minimal OpenDocument text package, written by hand."""
    body = "".join(f"<text:p>{p}</text:p>" for p in paragraphs)
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("mimetype", "application/vnd.oasis.opendocument.text", compress_type=zipfile.ZIP_STORED)
        zf.writestr(
            "META-INF/manifest.xml",
            '<?xml version="1.0" encoding="UTF-8"?><manifest:manifest xmlns:manifest="urn:oasis:names:tc:opendocument:'
            'xmlns:manifest:1.0" manifest:version="1.2"><manifest:file-entry manifest:full-path="/" manifest:media-type'
            '="application/vnd.oasis.opendocument.text"/><manifest:file-entry manifest:full-path="content.xml" '
            'manifest:media-type="text/xml"/></manifest:manifest>',
        )
        zf.writestr(
            "content.xml",
            '<?xml version="1.0" encoding="UTF-8"?><office:document-content xmlns:office="urn:oasis:names:tc:'
            'opendocument:xmlns:office:1.0" xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" '
            f'office:version="1.2"><office:body><office:text>{body}</office:text></office:body>'
            "</office:document-content>",
        )
        zf.writestr(
            "styles.xml",
            '<?xml version="1.0" encoding="UTF-8"?><office:document-styles xmlns:office="urn:oasis:names:tc:'
            'opendocument:xmlns:office:1.0" office:version="1.2"/>',
        )
    return path


def epub_file(path: Path, paragraphs: tuple[str, ...] = STORY) -> Path:
    """A minimal EPUB 3 with one chapter, written by hand."""
    chapter = "".join(f"<p>{p}</p>" for p in paragraphs)
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("mimetype", "application/epub+zip", compress_type=zipfile.ZIP_STORED)
        zf.writestr(
            "META-INF/container.xml",
            '<?xml version="1.0"?><container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:container">'
            '<rootfiles><rootfile full-path="content.opf" media-type="application/oebps-package+xml"/></rootfiles>'
            "</container>",
        )
        zf.writestr(
            "content.opf",
            '<?xml version="1.0"?><package xmlns="http://www.idpf.org/2007/opf" version="3.0" unique-identifier="id">'
            '<metadata xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:identifier id="id">sample</dc:identifier>'
            "<dc:title>Garden</dc:title><dc:language>en</dc:language></metadata><manifest>"
            '<item id="c1" href="chapter.xhtml" media-type="application/xhtml+xml"/></manifest>'
            '<spine><itemref idref="c1"/></spine></package>',
        )
        zf.writestr(
            "chapter.xhtml",
            '<?xml version="1.0" encoding="UTF-8"?><html xmlns="http://www.w3.org/1999/xhtml"><head><title>Garden'
            f"</title></head><body>{chapter}</body></html>",
        )
    return path

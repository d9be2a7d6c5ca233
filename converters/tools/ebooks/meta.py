"""Ebook metadata: reading title, author and cover from EPUB, FB2 and CBZ; writing a cover into an EPUB."""

from __future__ import annotations

import base64
import html
import posixpath
import re
import zipfile
from dataclasses import dataclass
from pathlib import Path
from xml.etree import ElementTree

from converters.base import ConversionError
from converters.inputs import safexml

IMAGE_EXT = {"image/jpeg": "jpg", "image/png": "png", "image/gif": "gif", "image/webp": "webp"}
MIME_BY_EXT = {"jpg": "image/jpeg", "jpeg": "image/jpeg", "png": "image/png", "gif": "image/gif", "webp": "image/webp"}


@dataclass
class BookInfo:
    title: str = ""
    author: str = ""
    cover: bytes | None = None
    cover_mime: str = ""


def _opf_path(zf: zipfile.ZipFile) -> str:
    container = safexml.fromstring(zf.read("META-INF/container.xml"))
    for el in container.iter():
        if el.tag.endswith("rootfile") and el.get("full-path"):
            return str(el.get("full-path"))
    raise KeyError("no rootfile")


def epub_info(path: Path) -> BookInfo:
    """Title, first author and cover image of an EPUB (2 or 3); empty fields when absent or unreadable."""
    info = BookInfo()
    try:
        with zipfile.ZipFile(path) as zf:
            opf_name = _opf_path(zf)
            opf = safexml.fromstring(zf.read(opf_name))
            items: dict[str, tuple[str, str, str]] = {}
            cover_id = ""
            for el in opf.iter():
                tag = el.tag.rsplit("}", 1)[-1]
                if tag == "title" and not info.title:
                    info.title = (el.text or "").strip()
                elif tag == "creator" and not info.author:
                    info.author = (el.text or "").strip()
                elif tag == "meta" and el.get("name") == "cover":
                    cover_id = el.get("content", "")
                elif tag == "item":
                    items[el.get("id", "")] = (el.get("href", ""), el.get("media-type", ""), el.get("properties", ""))
            href, mime = "", ""
            for item_href, item_mime, props in items.values():
                if "cover-image" in props.split():
                    href, mime = item_href, item_mime
            if not href and cover_id in items:
                href, mime = items[cover_id][:2]
            if href and mime in IMAGE_EXT:
                name = posixpath.normpath(posixpath.join(posixpath.dirname(opf_name), href))
                info.cover, info.cover_mime = zf.read(name), mime
    except (zipfile.BadZipFile, KeyError, ElementTree.ParseError, ConversionError, OSError):
        pass
    return info


def fb2_info(path: Path) -> BookInfo:
    """Title, first author and cover of a FictionBook 2 file."""
    info = BookInfo()
    try:
        root = safexml.parse(path)
    except (ElementTree.ParseError, ConversionError, OSError):
        return info

    def local(el: ElementTree.Element) -> str:
        return el.tag.rsplit("}", 1)[-1]

    cover_ref = ""
    for el in root.iter():
        name = local(el)
        if name == "title-info":
            for sub in el.iter():
                sub_name = local(sub)
                if sub_name == "book-title" and not info.title:
                    info.title = (sub.text or "").strip()
                elif sub_name == "author" and not info.author:
                    names = ("first-name", "middle-name", "last-name")
                    parts = [(p.text or "").strip() for p in sub if local(p) in names]
                    info.author = " ".join(p for p in parts if p)
                elif sub_name == "image" and local(el) == "title-info":
                    for key, value in sub.attrib.items():
                        if key.endswith("href"):
                            cover_ref = value.lstrip("#")
    if cover_ref:
        for el in root.iter():
            if local(el) == "binary" and el.get("id") == cover_ref:
                mime = el.get("content-type", "")
                if mime in IMAGE_EXT:
                    try:
                        info.cover, info.cover_mime = base64.b64decode(el.text or ""), mime
                    except ValueError:
                        pass
    return info


def cbz_pages(path: Path) -> list[str]:
    """The image members of a comic archive, in reading order."""
    with zipfile.ZipFile(path) as zf:
        names = [n for n in zf.namelist() if n.rsplit(".", 1)[-1].lower() in MIME_BY_EXT and not n.endswith("/")]
    return sorted(names, key=lambda n: [int(t) if t.isdigit() else t.lower() for t in re.split(r"(\d+)", n)])


def cbz_info(path: Path) -> BookInfo:
    """A comic's cover is its first page; its title, the archive's name."""
    info = BookInfo(title=path.stem)
    try:
        pages = cbz_pages(path)
        if pages:
            with zipfile.ZipFile(path) as zf:
                info.cover = zf.read(pages[0])
            info.cover_mime = MIME_BY_EXT[pages[0].rsplit(".", 1)[-1].lower()]
    except (zipfile.BadZipFile, OSError):
        pass
    return info


def mobi_info(path: Path) -> BookInfo:
    """Title, author and cover from a MOBI/AZW3 file's EXTH header (records 503/100/201)."""
    import struct

    info = BookInfo()
    try:
        data = path.read_bytes()
        count = struct.unpack_from(">H", data, 76)[0]
        offsets = [struct.unpack_from(">I", data, 78 + 8 * i)[0] for i in range(count)]
        rec0 = offsets[0]
        if data[rec0 + 16 : rec0 + 20] != b"MOBI":
            return info
        header_len, = struct.unpack_from(">I", data, rec0 + 20)
        name_off, name_len = struct.unpack_from(">II", data, rec0 + 84)
        info.title = data[rec0 + name_off : rec0 + name_off + name_len].decode("utf-8", "replace")
        first_image, = struct.unpack_from(">I", data, rec0 + 108)
        exth_flags, = struct.unpack_from(">I", data, rec0 + 128)
        if not exth_flags & 0x40:
            return info
        pos = rec0 + 16 + header_len
        if data[pos : pos + 4] != b"EXTH":
            return info
        n_records, = struct.unpack_from(">I", data, pos + 8)
        pos += 12
        for _ in range(n_records):
            kind, length = struct.unpack_from(">II", data, pos)
            value = data[pos + 8 : pos + length]
            pos += length
            if kind == 100 and not info.author:
                info.author = value.decode("utf-8", "replace").strip()
            elif kind == 503:
                info.title = value.decode("utf-8", "replace").strip()
            elif kind == 201 and len(value) == 4:
                index = first_image + struct.unpack(">I", value)[0]
                if index + 1 < len(offsets):
                    image = data[offsets[index] : offsets[index + 1]]
                    mime = {b"\xff\xd8": "image/jpeg", b"\x89P": "image/png"}.get(image[:2], "")
                    if mime:
                        info.cover, info.cover_mime = image, mime
    except (struct.error, IndexError, OSError):
        pass
    return info


def book_info(path: Path, fmt: str) -> BookInfo:
    if fmt in ("mobi", "azw3"):
        return mobi_info(path)
    if fmt == "epub":
        return epub_info(path)
    if fmt == "fb2":
        return fb2_info(path)
    if fmt == "cbz":
        return cbz_info(path)
    return BookInfo()


def _rewrite_zip(path: Path, replace: dict[str, bytes], add: dict[str, bytes]) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with zipfile.ZipFile(path) as src, zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as dst:
        for item in src.infolist():
            data = replace.get(item.filename, src.read(item.filename))
            # mimetype stays first and stored, as the EPUB container format requires
            dst.writestr(item, data, compress_type=zipfile.ZIP_STORED if item.filename == "mimetype" else None)
        for name, data in add.items():
            dst.writestr(name, data)
    tmp.replace(path)


def set_epub_cover(path: Path, image: bytes, mime: str) -> bool:
    """Give an EPUB a cover (image, manifest entry, EPUB 2 meta, first page) unless it has one. True if added."""
    with zipfile.ZipFile(path) as zf:
        opf_name = _opf_path(zf)
        opf = zf.read(opf_name).decode("utf-8")
    if "cover-image" in opf or mime not in IMAGE_EXT:
        return False
    base = posixpath.dirname(opf_name)
    image_href = f"filekiln-cover.{IMAGE_EXT[mime]}"
    page = (
        '<?xml version="1.0" encoding="UTF-8"?>\n<!DOCTYPE html>\n'
        '<html xmlns="http://www.w3.org/1999/xhtml" xmlns:epub="http://www.idpf.org/2007/ops">'
        '<head><title>Cover</title><style>body{margin:0;text-align:center}img{max-width:100%;max-height:100vh}'
        f'</style></head><body epub:type="cover"><img src="{html.escape(image_href)}" alt="Cover"/></body></html>'
    )
    manifest = (
        f'<item id="filekiln-cover-image" href="{image_href}" media-type="{mime}" properties="cover-image"/>'
        '<item id="filekiln-cover-page" href="filekiln-cover.xhtml" media-type="application/xhtml+xml"/>'
    )
    opf = re.sub(r"(<manifest[^>]*>)", lambda m: m.group(1) + manifest, opf, count=1)
    opf = re.sub(r"(<spine[^>]*>)", lambda m: m.group(1) + '<itemref idref="filekiln-cover-page"/>', opf, count=1)
    opf = re.sub(r"(</metadata>)", lambda m: '<meta name="cover" content="filekiln-cover-image"/>' + m.group(1),
                 opf, count=1)
    _rewrite_zip(
        path,
        replace={opf_name: opf.encode("utf-8")},
        add={posixpath.join(base, image_href): image, posixpath.join(base, "filekiln-cover.xhtml"): page.encode()},
    )
    return True

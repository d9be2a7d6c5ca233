"""Sample PDFs the tests make for themselves with PyMuPDF: text pages, image-heavy, encrypted, damaged."""

from __future__ import annotations

import io
from pathlib import Path

import pymupdf

from tests.converters.image_samples import photo, with_alpha

A4 = (595.0, 842.0)


def marker(page_number: int) -> str:
    """The text written on 1-based page ``page_number``, to tell pages apart after rearranging."""
    return f"FKMARK{page_number:03d}"


def text_pdf(path: Path, pages: int = 3, size: tuple[float, float] = A4, *, title: str = "") -> Path:
    """A PDF whose page N carries a heading and the word ``marker(N)``."""
    doc = pymupdf.open()
    for number in range(1, pages + 1):
        page = doc.new_page(width=size[0], height=size[1])
        page.insert_text((72, 90), f"Chapter {number}", fontsize=24)
        page.insert_text((72, 130), f"This page carries {marker(number)} in its text layer.", fontsize=11)
    if title:
        doc.set_metadata({"title": title, "author": "Sample Author"})
    doc.save(path)
    doc.close()
    return path


def image_pdf(path: Path, pages: int = 2, pixels: tuple[int, int] = (1200, 1500)) -> Path:
    """An image-heavy PDF: a high-resolution JPEG photo per page, a Flate photo and an alpha image, plus text."""
    doc = pymupdf.open()
    for number in range(1, pages + 1):
        page = doc.new_page(width=A4[0], height=A4[1])
        buffer = io.BytesIO()
        photo(pixels, seed=number).save(buffer, "JPEG", quality=95)
        page.insert_image(pymupdf.Rect(60, 160, 535, 760), stream=buffer.getvalue())
        page.insert_text((72, 90), f"Photo page {marker(number)}", fontsize=18)
    lossless = io.BytesIO()
    photo((600, 450), seed=9).save(lossless, "PNG")
    doc[0].insert_image(pymupdf.Rect(300, 40, 420, 130), stream=lossless.getvalue())
    transparent = io.BytesIO()
    with_alpha((400, 300)).save(transparent, "PNG")
    doc[-1].insert_image(pymupdf.Rect(60, 770, 180, 830), stream=transparent.getvalue())
    doc.save(path, garbage=3, deflate=True)
    doc.close()
    return path


def encrypted_pdf(path: Path, user_password: str = "open-sesame", owner_password: str = "owner-key") -> Path:
    """A 2-page AES-256 PDF that needs ``user_password`` to open."""
    source = text_pdf(path.with_name("plain-" + path.name), pages=2)
    doc = pymupdf.open(source)
    doc.save(
        path,
        encryption=pymupdf.PDF_ENCRYPT_AES_256,
        user_pw=user_password,
        owner_pw=owner_password,
        permissions=pymupdf.PDF_PERM_PRINT,
    )
    doc.close()
    return path


def damaged_pdf(path: Path) -> Path:
    """A file that starts like a PDF and then is noise: no object, no xref, no page can be recovered."""
    path.write_bytes(b"%PDF-1.7\n" + bytes((i * 7919) % 251 for i in range(4000)))
    return path


def rotated_pdf(path: Path, rotation: int = 90) -> Path:
    """A 1-page portrait PDF whose page has /Rotate ``rotation``."""
    doc = pymupdf.open()
    page = doc.new_page(width=400, height=600)
    page.insert_text((50, 80), marker(1), fontsize=14)
    page.set_rotation(rotation)
    doc.save(path)
    doc.close()
    return path


def huge_page_pdf(path: Path) -> Path:
    """One 200 x 200 inch page (the PDF maximum): 600 dpi would be 14 gigapixels."""
    doc = pymupdf.open()
    page = doc.new_page(width=14400, height=14400)
    page.insert_text((100, 100), marker(1), fontsize=40)
    doc.save(path)
    doc.close()
    return path

"""Sample files for the OCR tests: pictures of known words, made with PyMuPDF's own fonts."""

from __future__ import annotations

from pathlib import Path

import pymupdf
from PIL import Image

WORDS = ("Quick brown foxes jump over lazy dogs", "Invoice number 4711 paid in March")


def text_picture(lines: tuple[str, ...] = WORDS, dpi: int = 200, rotate: int = 0) -> Image.Image:
    """A white A6-landscape page with ``lines`` in 20 pt Helvetica, rendered as an RGB picture."""
    doc = pymupdf.open()
    page = doc.new_page(width=420, height=200)
    for index, line in enumerate(lines):
        page.insert_text((30, 60 + 40 * index), line, fontsize=20, fontname="helv")
    pix = page.get_pixmap(dpi=dpi)
    picture = Image.frombytes("RGB", (pix.width, pix.height), pix.samples)
    return picture.rotate(rotate, expand=True) if rotate else picture


def image_file(path: Path, lines: tuple[str, ...] = WORDS, dpi: int = 200, frames: int = 1) -> Path:
    """``path`` (png, jpg or tiff by suffix) showing ``lines``; ``frames`` > 1 makes a multi-page TIFF."""
    pictures = [text_picture(lines if n == 0 else (f"Page {n + 1} says hello",), dpi) for n in range(frames)]
    if frames > 1:
        pictures[0].save(path, save_all=True, append_images=pictures[1:], dpi=(dpi, dpi), compression="tiff_deflate")
    else:
        pictures[0].save(path, dpi=(dpi, dpi))
    return path


def scanned_pdf(path: Path, pages: list[tuple[str, ...]], dpi: int = 150, rotate: int = 0) -> Path:
    """An image-only PDF, one page per entry of ``pages``; ``rotate`` stores the scan sideways
    and sets the page's /Rotate so that it shows upright."""
    doc = pymupdf.open()
    for lines in pages:
        picture = text_picture(lines, dpi, rotate=rotate)  # counter-clockwise, undone by /Rotate
        png = path.with_suffix(".tmp.png")
        picture.save(png)
        width, height = picture.width * 72 / dpi, picture.height * 72 / dpi
        page = doc.new_page(width=width, height=height)
        page.insert_image(page.rect, filename=str(png))
        png.unlink()
        if rotate:
            page.set_rotation(rotate)
    doc.save(path)
    return path


def mixed_pdf(path: Path, dpi: int = 150) -> Path:
    """Page 1 holds digital text ("Digital page"), page 2 is a scan of :data:`WORDS`."""
    scanned = pymupdf.open(scanned_pdf(path.with_suffix(".scan.pdf"), [WORDS], dpi))
    doc = pymupdf.open()
    page = doc.new_page(width=420, height=200)
    page.insert_text((30, 60), "Digital page", fontsize=20)
    doc.insert_pdf(scanned)
    doc.save(path)
    return path

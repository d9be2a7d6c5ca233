"""Ebooks: EPUB, MOBI, AZW3, FB2, CBZ and PDF (PyMuPDF + pandoc, Calibre when found)."""

from converters.tools.ebooks.convert import EbookConvert

TOOLS = [EbookConvert()]

"""Documents: office files, Markdown, HTML and friends to PDF and between each other (pandoc + Typst, LibreOffice)."""

from converters.tools.documents.convert import DocumentConvert, DocumentToPdf

TOOLS = [DocumentToPdf(), DocumentConvert()]

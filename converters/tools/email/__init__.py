"""E-mail messages: EML to PDF on the standard library's parser and PyMuPDF's HTML layout."""

from converters.base import Tool
from converters.tools.email.convert import EmailToPdf

TOOLS: list[Tool] = [EmailToPdf()]

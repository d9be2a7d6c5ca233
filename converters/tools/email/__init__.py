"""E-mail messages: EML and Outlook MSG to PDF, read by the standard library's parser and extract-msg, laid out
by PyMuPDF's HTML layout."""

from converters.base import Tool
from converters.tools.email.convert import EmailToPdf

TOOLS: list[Tool] = [EmailToPdf()]

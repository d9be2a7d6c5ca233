"""Font tools on fontTools (+ Brotli for WOFF2) and PyMuPDF: convert and subset, preview."""

from converters.base import Tool
from converters.tools.fonts.convert import FontConvert
from converters.tools.fonts.preview import FontPreview

TOOLS: list[Tool] = [FontConvert(), FontPreview()]

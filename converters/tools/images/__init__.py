"""Image tools on Pillow (+ pillow-heif for HEIC)."""

from converters.base import Tool
from converters.tools.images.convert import ImageConvert
from converters.tools.images.edit import ImageCompress, ImageResize, ImageRotate

TOOLS: list[Tool] = [ImageConvert(), ImageResize(), ImageCompress(), ImageRotate()]

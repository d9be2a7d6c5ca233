"""Image tools on Pillow (+ pillow-heif for HEIC, pillow-jxl-plugin for JPEG XL); vector graphics on resvg,
MuPDF and vtracer."""

from converters.base import Tool
from converters.tools.images.convert import ImageConvert
from converters.tools.images.edit import ImageCompress, ImageResize, ImageRotate
from converters.tools.images.vector import VectorConvert

TOOLS: list[Tool] = [ImageConvert(), ImageResize(), ImageCompress(), ImageRotate(), VectorConvert()]

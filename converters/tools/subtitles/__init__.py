"""Subtitle tools on pysubs2 (and PyAV for putting subtitles into videos)."""

from converters.tools.subtitles.convert import SubtitleConvertTool
from converters.tools.subtitles.video import VideoAddSubtitlesTool

TOOLS = [SubtitleConvertTool(), VideoAddSubtitlesTool()]

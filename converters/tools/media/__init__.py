"""Audio and video tools on PyAV (FFmpeg's libraries), sharing one audio encoding path."""

from converters.tools.media.audio import AudioConvertTool
from converters.tools.media.info import MediaInfoTool
from converters.tools.media.stills import VideoThumbnailTool, VideoToGifTool
from converters.tools.media.video import VideoConvertTool, VideoToAudioTool

TOOLS = [AudioConvertTool(), VideoConvertTool(), VideoToAudioTool(), VideoToGifTool(), VideoThumbnailTool(),
         MediaInfoTool()]

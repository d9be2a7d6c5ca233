"""``media-info``: what an audio or video file is, as JSON (the GUI shows it before a conversion)."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from converters.base import Context, ConversionError, InputFile, Tool, atomic_output
from converters.engines.media.container import MEDIA_FORMATS, PYAV, engine_errors, is_cover_art, open_input
from converters.engines.media.pipeline import decode

if TYPE_CHECKING:
    from av.container import InputContainer
    from av.stream import Stream


def _seconds(value: Any, time_base: Any) -> float | None:
    return round(float(value * time_base), 6) if value is not None and time_base else None


def _rate(value: Any) -> float | None:
    return round(float(value), 3) if value else None


def describe_stream(stream: Stream) -> dict[str, Any]:
    """One stream: its kind, codec and the properties that matter for that kind."""
    context: Any = stream.codec_context
    info: dict[str, Any] = {
        "index": stream.index,
        "type": stream.type,
        "codec": stream.codec.canonical_name if context is not None else None,
        "codecLongName": stream.codec.long_name if context is not None else None,
        "profile": getattr(stream, "profile", None),
        "bitRate": (context.bit_rate or None) if context is not None else None,
        "duration": _seconds(stream.duration, stream.time_base),
        "startTime": _seconds(stream.start_time, stream.time_base),
        "frames": stream.frames or None,
        "language": stream.language,
    }
    if stream.type == "video":
        info.update(
            width=context.width,
            height=context.height,
            pixelFormat=context.pix_fmt,
            frameRate=_rate(stream.average_rate or stream.guessed_rate),
            sampleAspectRatio=str(context.sample_aspect_ratio) if context.sample_aspect_ratio else None,
            coverArt=is_cover_art(stream),
        )
    elif stream.type == "audio":
        info.update(
            sampleRate=context.sample_rate,
            channels=context.channels,
            channelLayout=context.layout.name,
            sampleFormat=context.format.name if context.format else None,
        )
    info["tags"] = dict(stream.metadata)
    return info


def _rotation(container: InputContainer, stream: Stream) -> int:
    """The display rotation of a video stream, from its first decoded frame (0 when none)."""
    errors: list[str] = []
    for packet in container.demux(stream):
        for frame in decode(stream, packet, errors):
            return int(getattr(frame, "rotation", 0) or 0)
        if len(errors) > 5:
            break
    return 0


def describe(container: InputContainer, size: int) -> dict[str, Any]:
    """The whole file: container, duration, overall bitrate, tags and streams."""
    streams = [describe_stream(s) for s in container.streams if s.type in ("audio", "video", "subtitle")]
    if not streams:
        raise ConversionError("empty_media", "The file has no audio or video streams.")
    duration = container.duration / 1_000_000 if container.duration else None
    video = [s for s in container.streams.video if not is_cover_art(s)]
    if video:
        rotation = _rotation(container, video[0])
        next(info for info in streams if info["index"] == video[0].index)["rotation"] = rotation
    return {
        "kind": "video" if video else "audio" if container.streams.audio else "other",
        "format": {
            "name": container.format.name,
            "longName": container.format.long_name,
            "duration": round(duration, 6) if duration else None,
            "startTime": container.start_time / 1_000_000 if container.start_time is not None else None,
            "bitRate": container.bit_rate or (round(size * 8 / duration) if duration else None),
            "sizeBytes": size,
            "tags": dict(container.metadata),
        },
        "streams": streams,
    }


class MediaInfoTool(Tool):
    """``media-info``: streams, codecs, duration and bitrate of an audio or video file, as JSON."""

    id = "media-info"
    category = "video"
    title = "Media info"
    description = "Describe an audio or video file: container, duration, bitrate, and each stream's codec and format."
    accepts = MEDIA_FORMATS
    produces = ("json",)
    engines = (PYAV,)
    timeout_seconds = 120.0

    def convert(self, ctx: Context, source: InputFile, progress: Callable[[float], None]) -> None:
        with engine_errors(), contextlib.closing(open_input(source.path)) as container:
            info = describe(container, source.path.stat().st_size)
        ctx.check_cancelled()
        final = ctx.output_path(source.name, "json")
        with atomic_output(final) as temp:
            temp.write_text(json.dumps(info, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        progress(1.0)



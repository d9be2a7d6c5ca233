"""Shared helpers for the PyAV tools: safe opening, stream choice, trim windows and atomic output.

Safety is the first concern here. FFmpeg's demuxers can follow references to
other files or URLs (HLS and DASH playlists, ffconcat lists, image sequences,
subtitles embedded in AVI that are themselves playlists). Every input is
therefore opened with two allow-lists that FFmpeg enforces itself, for the
top-level demuxer and for any nested one: ``protocol_whitelist=file`` and a
``format_whitelist`` of plain media containers. Text playlists are refused
before FFmpeg sees them, and the chosen demuxer is checked again after opening.

The decode/filter/encode loop lives in ``converters.engines.media.pipeline``. PyAV is
imported inside functions only, so importing these modules stays cheap.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from converters.base import ConversionError, Engine

if TYPE_CHECKING:
    from av.audio.stream import AudioStream
    from av.container import InputContainer, OutputContainer
    from av.container.core import Chapter
    from av.stream import Stream
    from av.video.stream import VideoStream

PYAV = Engine(
    name="PyAV",
    module="av",
    distribution="av",
    install_hint="Install it with `pip install av` (FFmpeg's libraries come inside the wheel).",
)

AUDIO_FORMATS = ("mp3", "wav", "flac", "ogg", "opus", "m4a", "aac", "aiff", "wma", "webm",
                 "amr", "ac3", "eac3", "dts", "ape", "wv", "caf")
VIDEO_FORMATS = ("mp4", "mov", "mkv", "webm", "avi", "m4v", "mpeg", "flv", "wmv", "3gp",
                 "ts", "ogv", "mxf", "dv", "h264", "hevc")
# Everything sniff.py can name that PyAV opens as media; playlists (m3u8, ffconcat) are deliberately absent.
MEDIA_FORMATS = tuple(dict.fromkeys(AUDIO_FORMATS + VIDEO_FORMATS))

# Demuxers that read only the bytes of the file they are given. Names are FFmpeg's
# (a demuxer named "mov,mp4,m4a,3gp,3g2,mj2" matches when any part is listed).
ALLOWED_DEMUXERS = frozenset({
    "mov", "matroska", "webm", "avi", "asf", "flv", "mpeg", "mpegts", "mpegvideo",
    "mp3", "wav", "w64", "flac", "ogg", "aac", "aiff",
    # single-file containers and elementary streams (MXF's demuxer does not open external essence files)
    "mxf", "dv", "amr", "amrnb", "amrwb", "ac3", "eac3", "dts", "ape", "wv", "caf", "h264", "hevc",
})

_PLAYLIST_MARKERS = (b"#extm3u", b"ffconcat", b"#ext-x-", b"<mpd", b"[playlist]")

# Container tags that describe the source file rather than its content.
_TECHNICAL_TAGS = frozenset({"major_brand", "minor_version", "compatible_brands", "encoder", "handler_name"})


def demuxer_allowed(name: str) -> bool:
    """Whether FFmpeg's demuxer ``name`` (possibly a comma-separated alias list) is on the allow-list."""
    return any(part in ALLOWED_DEMUXERS for part in name.split(","))


def _refuse_playlists(path: Path) -> None:
    with open(path, "rb") as f:
        head = f.read(4096)
    text = head.lstrip(b"\xef\xbb\xbf \t\r\n").lower()
    if any(text.startswith(marker) for marker in _PLAYLIST_MARKERS) or b"#ext-x-" in text:
        raise ConversionError("unsafe_input", "The file is a playlist that refers to other files; it is not converted.")


def open_input(path: Path) -> InputContainer:
    """Open ``path`` for demuxing so that FFmpeg can read this file and nothing else.

    Raises ``ConversionError`` with ``unsafe_input`` for playlists or containers off the
    allow-list and ``damaged_input`` for files FFmpeg cannot make sense of.
    """
    import av

    _refuse_playlists(path)
    options = {"protocol_whitelist": "file", "format_whitelist": ",".join(sorted(ALLOWED_DEMUXERS))}
    try:
        # The "file:" prefix stops FFmpeg from reading a name like "concat:a|b" as a URL.
        container = av.open(
            "file:" + str(path.resolve()), mode="r", container_options=options, metadata_errors="replace"
        )
    except av.error.ArgumentError as exc:
        # EINVAL at open is how FFmpeg reports "format not on whitelist".
        raise ConversionError(
            "unsafe_input", "The file's container type is not allowed (it could make FFmpeg read other files)."
        ) from exc
    except (av.error.FFmpegError, OSError, UnicodeError) as exc:
        raise ConversionError("damaged_input", f"The file could not be read as audio or video: {reason(exc)}") from exc
    if not demuxer_allowed(container.format.name):
        container.close()
        raise ConversionError("unsafe_input", f"The container type {container.format.name!r} is not allowed.")
    return container


def is_cover_art(stream: Stream) -> bool:
    """Album art in audio files shows up as a one-frame video stream; it is not video."""
    import av

    return bool(stream.disposition & av.stream.Disposition.attached_pic)


def audio_stream(container: InputContainer) -> AudioStream:
    """The input's main audio stream, or ``no_audio_stream``."""
    streams = list(container.streams.audio)
    if not streams:
        raise ConversionError("no_audio_stream", "The file has no audio stream.")
    best = container.streams.best("audio")
    return cast("AudioStream", best) if best is not None else streams[0]


def video_stream(container: InputContainer) -> VideoStream:
    """The input's main video stream (cover art excluded), or ``no_video_stream``."""
    streams = [s for s in container.streams.video if not is_cover_art(s)]
    if not streams:
        raise ConversionError("no_video_stream", "The file has no video stream.")
    best = container.streams.best("video")
    stream = best if best is not None and best in streams else streams[0]
    # Frame threading makes decoding several times faster; FFmpeg's own tools enable it too.
    stream.thread_type = "AUTO"
    return stream


def media_duration(container: InputContainer) -> float | None:
    """Duration in seconds from the container, else the longest stream; ``None`` when unknown."""
    if container.duration and container.duration > 0:
        return container.duration / 1_000_000
    lengths = [float(s.duration * s.time_base) for s in container.streams if s.duration and s.time_base]
    return max(lengths) if lengths else None


@dataclass(frozen=True)
class Window:
    """The part of the input to convert, in the input's own timeline (seconds).

    ``start`` is subtracted from every output timestamp, so the output starts at
    zero and all of its streams keep their relative timing (A/V sync).
    """

    start: float
    end: float | None
    length: float | None
    trimmed: bool

    def fraction(self, t: float | None) -> float:
        """How far through the window time ``t`` is, clamped to 0..1."""
        if t is None or not self.length:
            return 0.0
        return min(max((t - self.start) / self.length, 0.0), 1.0)


def trim_window(container: InputContainer, start: float | None, end: float | None) -> Window:
    """Resolve user ``start``/``end`` (seconds from the beginning) against the input's timeline."""
    base = container.start_time / 1_000_000 if container.start_time is not None else 0.0
    duration = media_duration(container)
    first = start or 0.0
    last = end
    if duration is not None:
        if first >= duration:
            raise ConversionError(
                "invalid_trim", f"start ({first:g} s) is at or past the end of the media ({duration:.2f} s)."
            )
        if last is not None and last >= duration:
            last = None  # an end past the media means "to the end"
    stop = last if last is not None else duration
    return Window(
        start=base + first,
        end=base + last if last is not None else None,
        length=stop - first if stop is not None else None,
        trimmed=first > 0 or last is not None,
    )


def seek_to(container: InputContainer, window: Window) -> None:
    """Seek a little before the window's start; the trim filters then cut exactly.

    The second of margin covers demuxers whose seeking is approximate (MP3 without a TOC).
    """
    import av

    target = window.start - 1.0
    if not window.trimmed or target <= 1.0:
        return
    try:
        container.seek(int(target * 1_000_000), backward=True)
    except av.error.FFmpegError:
        container.seek(0)  # unseekable: decode from the beginning, the trim still cuts right


def frame_rate(stream: VideoStream) -> Fraction:
    """The stream's frame rate as FFmpeg guesses it, with a sane fallback for odd files."""
    for rate in (stream.average_rate, stream.guessed_rate, stream.base_rate):
        if rate and 0 < rate <= 240:
            return Fraction(rate).limit_denominator(1001)
    return Fraction(30)


def source_tags(container: InputContainer) -> dict[str, str]:
    """The input's descriptive tags (title, artist ...) worth carrying into the output."""
    return {k: v for k, v in container.metadata.items() if k.lower() not in _TECHNICAL_TAGS}


MAX_CHAPTERS = 10_000  # a real audiobook has hundreds; a file declaring more keeps the first ones


def carry_chapters(source: InputContainer, out: OutputContainer, window: Window) -> int:
    """The input's chapters (an audiobook's, a film's) into the output, moved and cut to ``window``; the
    number kept. Muxers that hold chapters (MP4/M4A/M4B, Matroska, Ogg) write them; others drop them."""
    kept: list[Chapter] = []
    end = window.start + window.length if window.length is not None else None
    for chapter in source.chapters()[:MAX_CHAPTERS]:
        base = chapter["time_base"]
        if base is None:
            continue
        start_s, end_s = float(chapter["start"] * base), float(chapter["end"] * base)
        start_s, end_s = max(start_s, window.start), min(end_s, end) if end is not None else end_s
        if end_s <= start_s:
            continue
        kept.append({"id": len(kept), "start": round((start_s - window.start) / base),
                     "end": round((end_s - window.start) / base), "time_base": base,
                     "metadata": chapter["metadata"]})
    if kept:
        out.set_chapters(kept)
    return len(kept)


@contextlib.contextmanager
def output_container(
    path: Path, muxer: str, options: dict[str, str] | None = None
) -> Iterator[OutputContainer]:
    """Open an output container; on failure close it quietly so the temporary file can be removed."""
    import av

    # "file:" again: an output name is never taken for another protocol either.
    container = av.open("file:" + str(path.resolve()), mode="w", format=muxer, container_options=options or {})
    try:
        yield container
    except BaseException:
        with contextlib.suppress(Exception):
            container.close()
        raise
    container.close()


@contextlib.contextmanager
def engine_errors() -> Iterator[None]:
    """Report an FFmpeg failure that escaped the pipeline as a ``ConversionError`` (``ffmpeg_error``)."""
    import av

    try:
        yield
    except av.error.FFmpegError as exc:
        raise ConversionError("ffmpeg_error", f"FFmpeg could not convert the file: {reason(exc)}") from exc


def reason(exc: BaseException) -> str:
    """An FFmpeg or OS error in words, without the file name it carries (a path inside the data dir)."""
    strerror = getattr(exc, "strerror", None)
    return str(strerror) if strerror else str(exc)


def end_after_start(params: Any) -> Any:
    """Params validator of the tools that trim (``start``/``end``): an empty or reversed span is refused."""
    if params.end is not None and params.start is not None and params.end <= params.start:
        raise ValueError("end must be after start")
    return params


def require_content(frames: int, errors: list[str]) -> None:
    """Fail clearly when decoding produced nothing: damaged if the decoder complained, else empty."""
    if frames:
        return
    if errors:
        raise ConversionError("damaged_input", f"The media could not be decoded: {errors[0]}")
    raise ConversionError("empty_media", "The file has no media content (zero duration).")


def muxer_options(muxer: str) -> dict[str, str]:
    """Container options: MP4-family files get their index up front so they play while downloading."""
    if muxer in ("mp4", "mov", "ipod"):
        return {"movflags": "+faststart"}
    return {}

"""Video conversion on PyAV: ``video-convert`` and ``video-to-audio``.

``video-convert`` copies a stream unchanged (a remux) when nothing asks for a
change and the output container takes its codec; otherwise it decodes, runs a
filter graph (trim, rotation, constant frame rate, scale, pixel format) and
encodes. Both streams share one time shift, which keeps them in sync.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, cast

from pydantic import Field, model_validator

from converters.base import Context, ConversionError, InputFile, Params, Tool, ToolEnv, atomic_output
from converters.engines.media.container import (
    PYAV,
    VIDEO_FORMATS,
    Window,
    audio_stream,
    carry_chapters,
    end_after_start,
    engine_errors,
    frame_rate,
    muxer_options,
    open_input,
    output_container,
    source_tags,
    trim_window,
    video_stream,
)
from converters.engines.media.pipeline import (
    Chain,
    Copier,
    Geometry,
    PacketGate,
    StreamJob,
    Ticker,
    Transcoder,
    build_chain,
    run_streams,
    trim_filters,
    video_source_args,
)
from converters.tools.media.audio import AudioEncoder, AudioParams, AudioTarget, convert_audio, resolve_settings

if TYPE_CHECKING:
    from av.audio.stream import AudioStream
    from av.container import InputContainer, OutputContainer
    from av.packet import Packet
    from av.video.stream import VideoStream

Preset = Literal["ultrafast", "superfast", "veryfast", "faster", "fast", "medium", "slow", "slower", "veryslow"]
VideoCodecName = Literal["h264", "h265", "vp9", "av1"]
AudioCodecName = Literal["aac", "opus", "mp3", "flac"]

# x264's preset names are the common vocabulary; VP9 and SVT-AV1 speeds are mapped onto them.
VP9_CPU_USED = {"ultrafast": 8, "superfast": 7, "veryfast": 6, "faster": 5, "fast": 5, "medium": 4,
                "slow": 2, "slower": 1, "veryslow": 0}
# How long each preset takes against medium (x264's own relative speeds, rounded up): the weight of a
# frame in the work estimate below. Lossless (crf 0) costs about twice as much again.
PRESET_COST = {"ultrafast": 0.2, "superfast": 0.25, "veryfast": 0.35, "faster": 0.55, "fast": 0.75, "medium": 1.0,
               "slow": 1.6, "slower": 3.0, "veryslow": 6.0}
# The work a video-convert job may ask for, in output pixels x frames at the medium preset: about
# 2.5 hours of 1080p at 30 fps (setting ``video_max_output_pixel_frames``).
DEFAULT_MAX_PIXEL_FRAMES = 6e11
SVT_AV1_PRESET = {"ultrafast": 12, "superfast": 11, "veryfast": 10, "faster": 9, "fast": 8, "medium": 7,
                  "slow": 5, "slower": 4, "veryslow": 2}


@dataclass(frozen=True)
class VideoCodec:
    """An encoder behind a ``videoCodec`` name, with its CRF scale."""

    encoder: str
    family: str  # FFmpeg's codec name, compared with the input's for stream copy
    default_crf: int
    max_crf: int

    def options(self, crf: int, preset: str) -> dict[str, str]:
        """Encoder options for constant-quality encoding at ``crf`` and speed ``preset``."""
        if self.encoder == "libx264":
            return {"crf": str(crf), "preset": preset}
        if self.encoder == "libx265":
            return {"crf": str(crf), "preset": preset, "x265-params": "log-level=error"}
        if self.encoder == "libvpx-vp9":
            # b=0 makes crf a pure quality target; row-mt lets VP9 use more than one core per tile.
            return {"crf": str(crf), "b": "0", "deadline": "good", "cpu-used": str(VP9_CPU_USED[preset]),
                    "row-mt": "1"}
        return {"crf": str(crf), "preset": str(SVT_AV1_PRESET[preset])}


VIDEO_CODECS: dict[str, VideoCodec] = {
    "h264": VideoCodec("libx264", "h264", 23, 51),
    "h265": VideoCodec("libx265", "hevc", 28, 51),
    "vp9": VideoCodec("libvpx-vp9", "vp9", 31, 63),
    "av1": VideoCodec("libsvtav1", "av1", 35, 63),
}

# Audio encoders inside a video container (the muxer field does not apply: the video's container muxes).
AUDIO_IN_VIDEO: dict[str, AudioTarget] = {
    "aac": AudioTarget("aac", "", 128, max_kbps=512),
    "opus": AudioTarget("libopus", "", 96, max_kbps=512),
    "mp3": AudioTarget("libmp3lame", "", 128, max_kbps=320, max_channels=2),
    "flac": AudioTarget("flac", "", None),
}


@dataclass(frozen=True)
class Container:
    """What an output container takes: codecs to encode (first = default) and codecs it may copy."""

    muxer: str
    video: tuple[str, ...]
    audio: tuple[str, ...]
    copy_video: frozenset[str]
    copy_audio: frozenset[str]


CONTAINERS: dict[str, Container] = {
    "mp4": Container("mp4", ("h264", "h265", "av1"), ("aac", "mp3"),
                     frozenset({"h264", "hevc", "av1"}), frozenset({"aac", "mp3"})),
    "webm": Container("webm", ("vp9", "av1"), ("opus",),
                      frozenset({"vp9", "vp8", "av1"}), frozenset({"opus", "vorbis"})),
    "mkv": Container("matroska", ("h264", "h265", "vp9", "av1"), ("aac", "opus", "mp3", "flac"),
                     frozenset({"h264", "hevc", "vp9", "vp8", "av1", "mpeg4", "mpeg2video", "mpeg1video"}),
                     frozenset({"aac", "opus", "mp3", "vorbis", "flac", "ac3", "eac3", "mp2", "pcm_s16le"})),
    "mov": Container("mov", ("h264", "h265"), ("aac",),
                     frozenset({"h264", "hevc", "prores", "mjpeg"}), frozenset({"aac", "mp3", "alac", "pcm_s16le"})),
}


class VideoParams(Params):
    """Parameters of ``video-convert``."""

    video_codec: VideoCodecName | None = Field(
        default=None,
        alias="videoCodec",
        description="h264 or h265 (mp4, mov, mkv), vp9 or av1 (webm, mkv; av1 also mp4). Default: first listed.",
        json_schema_extra={
            "x-enumLabels": {"h264": "H.264 (most compatible)", "h265": "H.265 / HEVC (smaller, slower)",
                             "vp9": "VP9 (open, for the web)", "av1": "AV1 (smallest, slowest)"},
            "x-enumDescriptions": {
                "h264": "Plays on nearly every phone, browser and TV.",
                "h265": "About half the size of H.264 at the same quality; newer devices play it, encoding is slower.",
                "vp9": "Royalty-free, about as small as H.265; plays in browsers (WebM).",
                "av1": "The smallest files; encoding is much slower, and older devices cannot play it.",
            },
        },
    )
    crf: int | None = Field(
        default=None, ge=0, le=63, title="Quality (CRF)",
        description="Constant quality, lower is better (0-51 for h264/h265, 0-63 otherwise).",
    )
    # Titled for what it is: the options pane has "Saved settings" (the service's presets) beside it.
    preset: Preset | None = Field(
        default=None, title="Encoding speed",
        description="Encoder speed in x264's names: faster makes bigger files, slower smaller ones. Default: medium.",
        json_schema_extra={"x-enumLabels": {
            "ultrafast": "Fastest (largest file)", "superfast": "Super fast", "veryfast": "Very fast",
            "faster": "Faster", "fast": "Fast", "medium": "Medium (balanced)", "slow": "Slow",
            "slower": "Slower", "veryslow": "Slowest (smallest file)"}},
    )
    width: int | None = Field(
        default=None, ge=16, le=8192, description="Output width in pixels; height keeps the aspect.",
        json_schema_extra={"x-unit": "px", "examples": [426, 640, 854, 1280, 1920, 2560, 3840], "x-suggested": 1280},
    )
    height: int | None = Field(
        default=None, ge=16, le=8192, description="Output height in pixels; with width: fit inside.",
        json_schema_extra={"x-unit": "px", "examples": [240, 360, 480, 720, 1080, 1440, 2160], "x-suggested": 720},
    )
    fps: float | None = Field(
        default=None, gt=0, le=240, description="Output frame rate. Default: the input's.",
        json_schema_extra={"x-unit": "fps", "examples": [23.976, 24, 25, 29.97, 30, 50, 60], "x-suggested": 30},
    )
    start: float | None = Field(default=None, ge=0, description="Trim: start time in seconds.")
    end: float | None = Field(default=None, gt=0, description="Trim: end time in seconds.")
    audio_codec: AudioCodecName | None = Field(
        default=None, alias="audioCodec", description="aac, opus, mp3 or flac. Default: aac (opus for webm).",
        json_schema_extra={"x-enumLabels": {"aac": "AAC (most compatible)", "opus": "Opus (best at low bitrates)",
                                            "mp3": "MP3", "flac": "FLAC (lossless, large)"}},
    )
    audio_bitrate: int | None = Field(
        default=None, alias="audioBitrate", ge=8, le=512, description="Audio bitrate in kbps. Default: 128 (96 opus).",
        json_schema_extra={"x-unit": "kbps", "examples": [64, 96, 128, 160, 192, 256, 320], "x-suggested": 128},
    )
    remove_audio: bool = Field(default=False, alias="removeAudio", description="Drop the audio.")

    _end_after_start = model_validator(mode="after")(end_after_start)


@dataclass(frozen=True)
class Plan:
    """What happens to each stream: copied, or encoded with which codec."""

    video: VideoCodec | None  # None: copy
    audio: str | None  # an AUDIO_IN_VIDEO key; None: copy (or no audio)
    with_audio: bool

    def copied(self) -> list[str]:
        """The kinds of stream that are copied rather than encoded."""
        kinds = ["video"] if self.video is None else []
        return kinds + (["audio"] if self.with_audio and self.audio is None else [])


def plan(spec: Container, vstream: VideoStream, astream: AudioStream | None, params: VideoParams,
         window: Window, allow_copy: bool = True) -> Plan:
    """Decide copy or encode per stream; refuse codecs the container cannot hold."""
    if params.video_codec is not None and params.video_codec not in spec.video:
        raise ConversionError("invalid_params", f"{params.video_codec} is not available in this container; "
                                                f"choose one of {', '.join(spec.video)}.")
    if params.audio_codec is not None and params.audio_codec not in spec.audio:
        raise ConversionError("invalid_params", f"{params.audio_codec} audio is not available in this container; "
                                                f"choose one of {', '.join(spec.audio)}.")
    family = vstream.codec.canonical_name
    wanted = VIDEO_CODECS[params.video_codec].family if params.video_codec else None
    reshape = params.width or params.height or params.fps or params.crf is not None or params.preset
    copy_video = (
        allow_copy and not window.trimmed and not reshape and family in spec.copy_video and wanted in (None, family)
    )
    video = None if copy_video else VIDEO_CODECS[params.video_codec or spec.video[0]]
    if video is not None and params.crf is not None and params.crf > video.max_crf:
        raise ConversionError("invalid_params", f"crf for {video.encoder} goes from 0 to {video.max_crf}.")
    if astream is None:
        return Plan(video=video, audio=None, with_audio=False)
    afamily = astream.codec.canonical_name
    copy_audio = (
        allow_copy and not window.trimmed and params.audio_bitrate is None and afamily in spec.copy_audio
        and params.audio_codec in (None, afamily)
    )
    return Plan(video=video, audio=None if copy_audio else (params.audio_codec or spec.audio[0]), with_audio=True)


class VideoEncoder:
    """Encodes decoded video frames: filters (trim, rotation, fps, scale, yuv420p) and encoder set up on frame one."""

    def __init__(self, gate: PacketGate, out: OutputContainer, codec: VideoCodec, vstream: VideoStream,
                 params: VideoParams, window: Window, muxer: str) -> None:
        self._gate = gate
        self._source = vstream
        self._params = params
        self._window = window
        self._rate = Fraction(params.fps).limit_denominator(1001) if params.fps else frame_rate(vstream)
        crf = params.crf if params.crf is not None else codec.default_crf
        options = codec.options(crf, params.preset or "medium")
        if codec.encoder == "libsvtav1":
            os.environ.setdefault("SVT_LOG", "1")  # SVT-AV1 prints its whole configuration to stderr otherwise
        self._stream = cast("VideoStream", out.add_stream(codec.encoder, rate=self._rate, options=options))
        if codec.family == "hevc" and muxer in ("mp4", "mov"):
            self._stream.codec_tag = "hvc1"  # the tag Apple's players require for HEVC
        self._chain: Chain | None = None

    def push(self, frame: Any) -> int:
        if self._chain is None:
            self._chain = self._configure(frame)
        return self._encode(self._chain.push(frame))

    @property
    def stream(self) -> VideoStream:
        """The output stream it writes."""
        return self._stream

    def flush(self) -> int:
        count = self._encode(self._chain.push(None)) if self._chain is not None else 0
        # packet by packet as the encoder lets them go: its lookahead's frames are encoded here, for
        # up to half the job, and progress follows each one written
        self._gate.mux(self._drained())
        return count

    def _drained(self) -> Iterator[Packet]:
        for packet in self._stream.codec_context.encode_lazy(None):
            packet.stream = self._stream  # what Stream.encode does for the packets it returns
            yield packet

    def _configure(self, frame: Any) -> Chain:
        import av

        source_sar = self._source.codec_context.sample_aspect_ratio
        shape = Geometry.of(frame, source_sar)
        filters = trim_filters(self._window, audio=False) + shape.rotate
        # Constant frame rate from time zero: what MP4 players expect, and what keeps the duration exact.
        filters.append(("fps", f"fps={self._rate}:start_time=0"))
        if self._window.end is not None and self._window.length:
            # Cut again on the output's frame grid, which the trim start may have shifted by part of a frame.
            filters.append(("trim", f"end={self._window.length:.6f}"))
        resize, (width, height), sar = shape.resize(self._params.width, self._params.height)
        filters += resize
        filters.append(("format", "yuv420p"))
        chain = build_chain(video_source_args(frame, source_sar), False, filters)
        self._stream.width, self._stream.height = width, height
        self._stream.pix_fmt = "yuv420p"
        self._stream.codec_context.time_base = 1 / self._rate
        if sar != 1:
            self._stream.codec_context.sample_aspect_ratio = sar
        # Frame threading, as FFmpeg's CLI uses; PyAV's default (slice threads) makes x264 slower.
        self._stream.codec_context.thread_type = av.codec.context.ThreadType.AUTO
        self._gate.ready()
        return chain

    def _encode(self, frames: list[Any]) -> int:
        import av

        for frame in frames:
            # Decoded frames keep their I/P/B type, which encoders would obey; let them choose.
            frame.pict_type = av.video.frame.PictureType.NONE
            self._gate.mux(self._stream.encode(frame))
        return len(frames)


def convert_video(ctx: Context, source: InputFile, progress: Callable[[float], None], params: VideoParams,
                  fmt: str) -> Path:
    """Convert ``source`` to container ``fmt``; returns the output path."""
    import av

    spec = CONTAINERS[fmt]
    final = ctx.output_path(source.name, fmt)
    plans: list[Plan] = []

    def attempt(allow_copy: bool) -> Plan:
        with contextlib.closing(open_input(source.path)) as container:
            vstream = video_stream(container)
            astream = None if params.remove_audio or not container.streams.audio else audio_stream(container)
            window = trim_window(container, params.start, params.end)
            chosen = plan(spec, vstream, astream, params, window, allow_copy)
            plans.append(chosen)
            _write(ctx, container, final, spec, chosen, vstream, astream, params, window, progress)
            return chosen

    try:
        chosen = attempt(allow_copy=True)
    except av.error.FFmpegError:
        if not plans or not plans[0].copied():
            raise
        # Some inputs cannot be remuxed as they are (timestamps a muxer refuses); encoding them works.
        ctx.notes.append("stream copy failed; re-encoded instead")
        chosen = attempt(allow_copy=False)
    if chosen.copied():
        ctx.notes.append(f"{' and '.join(chosen.copied())} copied without re-encoding")
    progress(1.0)
    return final


def _write(ctx: Context, container: InputContainer, final: Path, spec: Container, chosen: Plan,
           vstream: VideoStream, astream: AudioStream | None, params: VideoParams, window: Window,
           progress: Callable[[float], None]) -> None:
    errors: list[str] = []
    with atomic_output(final) as temp, output_container(temp, spec.muxer, muxer_options(spec.muxer)) as out:
        out.metadata.update(source_tags(container))
        carry_chapters(container, out, window)
        gate = PacketGate(out, waiting=1 if chosen.video is not None else 0)
        ticker = Ticker(ctx, progress, window)
        jobs: dict[Any, StreamJob] = {}
        if chosen.video is None:
            jobs[vstream] = Copier(gate, vstream, out.add_stream_from_template(vstream), window)
        else:
            encoder = VideoEncoder(gate, out, chosen.video, vstream, params, window, spec.muxer)
            gate.follow(encoder.stream, ticker)
            jobs[vstream] = Transcoder(vstream, encoder, errors)
        if astream is not None:
            if chosen.audio is None:
                jobs[astream] = Copier(gate, astream, out.add_stream_from_template(astream), window)
            else:
                target = AUDIO_IN_VIDEO[chosen.audio]
                settings = resolve_settings(target, astream, AudioParams(bitrate=params.audio_bitrate))
                audio = AudioEncoder(gate, out, settings, window, alone=False)
                jobs[astream] = Transcoder(astream, audio, errors)
        run_streams(ctx, container, jobs, window, ticker, errors)


class VideoConvertTool(Tool):
    """``video-convert``: MP4, WebM, MKV or MOV; codec, quality, size, frame rate, trim, audio."""

    id = "video-convert"
    category = "video"
    title = "Convert video"
    description = ("Convert video to MP4 (H.264/H.265), WebM (VP9/AV1), MKV or MOV; resize, change frame rate, trim, "
                   "re-encode or drop the audio. Streams are copied when nothing needs re-encoding.")
    accepts = VIDEO_FORMATS
    produces = ("mp4", "webm", "mkv", "mov")
    params = VideoParams
    engines = (PYAV,)
    timeout_seconds = 4 * 3600.0

    def precheck(self, inputs: Sequence[InputFile], params: Any, env: ToolEnv | None = None) -> None:
        """Refuse work no machine finishes in reasonable time (a 4096-wide, lossless, veryslow encode of
        thousands of frames holds a worker for hours), judged from the container's headers."""
        limit = max_pixel_frames(env)
        for source in inputs:
            try:
                with engine_errors(), contextlib.closing(open_input(source.path)) as container:
                    work = encode_work(container, video_stream(container), params)
            except ConversionError:
                continue  # what cannot be read is the run's to report, with the engine's reason
            if work > limit:
                raise ConversionError(
                    "input_too_large",
                    f"Converting {source.name} with these settings is about {work / limit:.1f} times the work a "
                    f"job may ask for (output pixels x frames, weighted by the preset; setting "
                    f"video_max_output_pixel_frames). Choose a smaller size, a faster preset, or trim it.")

    def convert(self, ctx: Context, source: InputFile, progress: Callable[[float], None]) -> None:
        with engine_errors():
            convert_video(ctx, source, progress, ctx.params, ctx.output_format)


def max_pixel_frames(env: ToolEnv | None) -> float:
    value = (env.settings if env else {}).get("video_max_output_pixel_frames", DEFAULT_MAX_PIXEL_FRAMES)
    try:
        return float(value)
    except (TypeError, ValueError):
        return DEFAULT_MAX_PIXEL_FRAMES


def encode_work(container: Any, vstream: VideoStream, params: VideoParams) -> float:
    """Output pixels x frames of a video-convert job, weighted by its preset (medium = 1)."""
    src_w, src_h = vstream.codec_context.width or 0, vstream.codec_context.height or 0
    width, height = float(src_w), float(src_h)
    if src_w and src_h:
        if params.width and params.height:
            scale = min(params.width / src_w, params.height / src_h)
            width, height = src_w * scale, src_h * scale
        elif params.width:
            width, height = params.width, params.width * src_h / src_w
        elif params.height:
            width, height = params.height * src_w / src_h, params.height
    window = trim_window(container, params.start, params.end)
    seconds = window.length or 0.0
    fps = params.fps or float(frame_rate(vstream))
    cost = PRESET_COST[params.preset or "medium"] * (2.0 if params.crf == 0 else 1.0)
    return width * height * seconds * fps * cost


class VideoToAudioTool(Tool):
    """``video-to-audio``: the soundtrack of a video as MP3, M4A, WAV, FLAC or Opus."""

    id = "video-to-audio"
    category = "video"
    title = "Extract audio"
    description = "Save a video's soundtrack as MP3, M4A (AAC), WAV, FLAC or Opus; copied when already in that codec."
    accepts = VIDEO_FORMATS
    produces = ("mp3", "m4a", "wav", "flac", "opus")
    params = AudioParams
    engines = (PYAV,)
    timeout_seconds = 3600.0

    def convert(self, ctx: Context, source: InputFile, progress: Callable[[float], None]) -> None:
        with engine_errors():
            convert_audio(ctx, source, progress, ctx.params, ctx.output_format)



"""Pictures from video on PyAV and Pillow: ``video-to-gif`` and ``video-thumbnail``.

Both decode through the same filter graph as ``video-convert`` (trim, display
rotation, frame rate, scale) and end in RGB frames that Pillow encodes.
"""

from __future__ import annotations

import contextlib
import math
import re
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import Field, field_validator, model_validator

from converters.base import Context, ConversionError, InputFile, Params, Tool, atomic_output, scaled
from converters.engines.media.container import (
    PYAV,
    VIDEO_FORMATS,
    Window,
    end_after_start,
    engine_errors,
    media_duration,
    open_input,
    trim_window,
    video_stream,
)
from converters.engines.media.pipeline import (
    Chain,
    Geometry,
    Transcoder,
    build_chain,
    run_streams,
    trim_filters,
    video_source_args,
)

if TYPE_CHECKING:
    from PIL import Image

GIF_DEFAULT_WIDTH = 480
GIF_MAX_FRAMES = 3000  # about 50 MB of palette frames at 480x270; longer clips should be trimmed
PALETTE_SAMPLES = 24  # frames the shared palette is built from

_AT = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(%?)\s*$")


class RgbFrames:
    """An encoder-shaped sink: filters decoded frames (trim, rotation, fps, scale) into Pillow RGB images."""

    def __init__(self, window: Window, fps: Fraction | None, width: int | None, max_width: int | None,
                 sink: Callable[[Image.Image], None], sample_aspect: Fraction | None = None) -> None:
        self._window = window
        self._fps = fps
        self._width = width
        self._max_width = max_width
        self._sink = sink
        self._sample_aspect = sample_aspect
        self._chain: Chain | None = None

    def push(self, frame: Any) -> int:
        if self._chain is None:
            self._chain = self._configure(frame)
        return self._emit(self._chain.push(frame))

    def flush(self) -> int:
        return self._emit(self._chain.push(None)) if self._chain is not None else 0

    def _configure(self, frame: Any) -> Chain:
        shape = Geometry.of(frame, self._sample_aspect)
        filters = trim_filters(self._window, audio=False) + shape.rotate
        if self._fps is not None:
            filters.append(("fps", f"fps={self._fps}:start_time=0"))
            if self._window.end is not None and self._window.length:
                filters.append(("trim", f"end={self._window.length:.6f}"))
        # Pictures have square pixels: anamorphic video is shown at its display width.
        display = round(shape.width * shape.sar)
        width = self._width or (min(display, self._max_width) if self._max_width else display)
        unchanged = width == shape.width and shape.sar == 1
        filters += shape.resize(None if unchanged else width, None, flags="lanczos")[0]
        filters.append(("format", "rgb24"))
        return build_chain(video_source_args(frame, self._sample_aspect), False, filters)

    def _emit(self, frames: list[Any]) -> int:
        for frame in frames:
            self._sink(frame.to_image())
        return len(frames)


def decode_rgb(ctx: Context, path: Path, window: Window, fps: Fraction | None, width: int | None,
               max_width: int | None, sink: Callable[[Image.Image], None], progress: Callable[[float], None]) -> int:
    """Decode the window of ``path``'s video into upright RGB images handed to ``sink``; returns how many.

    ``width`` is the picture width wanted (height follows); without it the displayed
    width is kept, up to ``max_width``.
    """
    with contextlib.closing(open_input(path)) as container:
        stream = video_stream(container)
        errors: list[str] = []
        frames = RgbFrames(window, fps, width, max_width, sink, stream.codec_context.sample_aspect_ratio)
        counts = run_streams(ctx, container, {stream: Transcoder(stream, frames, errors)}, window, progress, errors)
        return counts[stream.index]


class GifParams(Params):
    """Parameters of ``video-to-gif``."""

    fps: float = Field(default=10, gt=0, le=50, description="Frames per second of the GIF.")
    width: int | None = Field(
        default=None, ge=16, le=1920, description=f"Width in pixels; default the input's, at most {GIF_DEFAULT_WIDTH}."
    )
    start: float | None = Field(default=None, ge=0, description="Trim: start time in seconds.")
    end: float | None = Field(default=None, gt=0, description="Trim: end time in seconds.")

    _end_after_start = model_validator(mode="after")(end_after_start)


def gif_delays(count: int, fps: float) -> list[int]:
    """Per-frame delays in ms, multiples of 10 (GIF counts centiseconds) that add up to the true length."""
    ticks = [round(100 * i / fps) for i in range(count + 1)]
    return [max(10 * (b - a), 10) for a, b in zip(ticks, ticks[1:], strict=False)]


class VideoToGifTool(Tool):
    """``video-to-gif``: an animated GIF with one palette built from the whole clip."""

    id = "video-to-gif"
    category = "video"
    title = "Video to GIF"
    description = "Make an animated GIF from a video or part of it; one adaptive palette with dithering for quality."
    accepts = VIDEO_FORMATS
    produces = ("gif",)
    params = GifParams
    engines = (PYAV,)
    timeout_seconds = 1800.0

    def convert(self, ctx: Context, source: InputFile, progress: Callable[[float], None]) -> None:
        with engine_errors():
            self._convert(ctx, source, progress)

    def _convert(self, ctx: Context, source: InputFile, progress: Callable[[float], None]) -> None:
        from PIL import Image

        params: GifParams = ctx.params
        fps = Fraction(params.fps).limit_denominator(1001)
        with contextlib.closing(open_input(source.path)) as container:
            video_stream(container)
            window = trim_window(container, params.start, params.end)
        expected = math.ceil((window.length or 0) * params.fps)
        if expected > GIF_MAX_FRAMES:
            raise ConversionError(
                "input_too_long",
                f"That would be {expected} GIF frames (limit {GIF_MAX_FRAMES}); trim the clip or lower fps.",
            )
        # Pass 1: sample frames across the clip and build one palette, so colours do not flicker between frames.
        sampler = PaletteSampler(every=max(1, expected // PALETTE_SAMPLES))
        decode_rgb(ctx, source.path, window, fps, params.width, GIF_DEFAULT_WIDTH, sampler, scaled(progress, 0.0, 0.3))
        palette = _palette(sampler.images)
        # Pass 2: map every frame onto the palette with Floyd-Steinberg dithering.
        frames: list[Image.Image] = []

        def keep(image: Image.Image) -> None:
            frames.append(image.quantize(palette=palette, dither=Image.Dither.FLOYDSTEINBERG))

        decode_rgb(ctx, source.path, window, fps, params.width, GIF_DEFAULT_WIDTH, keep, scaled(progress, 0.3, 0.65))
        ctx.check_cancelled()
        final = ctx.output_path(source.name, "gif")
        with atomic_output(final) as temp:
            frames[0].save(temp, format="GIF", save_all=True, append_images=frames[1:],
                           duration=gif_delays(len(frames), params.fps), loop=0, optimize=False)
        progress(1.0)


class PaletteSampler:
    """Keeps an evenly spread handful of frames, thinning them out if the clip turns out longer than expected."""

    def __init__(self, every: int) -> None:
        self.every = every
        self.seen = 0
        self.images: list[Image.Image] = []

    def __call__(self, image: Image.Image) -> None:
        if self.seen >= GIF_MAX_FRAMES:
            raise ConversionError(
                "input_too_long", f"More than {GIF_MAX_FRAMES} GIF frames; trim the clip or lower fps."
            )
        if self.seen % self.every == 0:
            self.images.append(image)
            if len(self.images) > 2 * PALETTE_SAMPLES:
                self.images, self.every = self.images[::2], self.every * 2
        self.seen += 1


def _palette(samples: list[Image.Image]) -> Image.Image:
    """One 256-colour palette for the sampled frames (median cut over them all, stacked)."""
    from PIL import Image

    width = samples[0].width
    height = sum(s.height for s in samples)
    sheet = Image.new("RGB", (width, height))
    y = 0
    for image in samples:
        sheet.paste(image, (0, y))
        y += image.height
    return sheet.quantize(colors=256, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE)


class ThumbnailParams(Params):
    """Parameters of ``video-thumbnail``."""

    at: float | str = Field(
        default="10%",
        title="Time in the video",
        description='Where to take the picture: seconds (12.5) or a percentage of the duration ("50%").',
    )
    width: int | None = Field(default=None, ge=16, le=8192, description="Width in pixels; default the video's.")

    @field_validator("at")
    @classmethod
    def _valid_at(cls, value: float | str) -> float | str:
        if isinstance(value, str):
            match = _AT.match(value)
            if match is None:
                raise ValueError('use seconds (12.5) or a percentage ("50%")')
            if match.group(2) and float(match.group(1)) > 100:
                raise ValueError("a percentage goes up to 100%")
        elif value < 0:
            raise ValueError("seconds must not be negative")
        return value


def resolve_at(at: float | str, duration: float | None) -> float:
    """Seconds from the start for ``at`` (seconds or "N%" of ``duration``)."""
    if isinstance(at, str):
        match = _AT.match(at)
        assert match is not None  # checked by the params model
        number = float(match.group(1))
        if match.group(2):
            return (duration or 0.0) * number / 100
        return number
    return float(at)


THUMBNAIL_SAVE = {"jpg": ("JPEG", {"quality": 90}), "png": ("PNG", {}), "webp": ("WEBP", {"quality": 90})}


class VideoThumbnailTool(Tool):
    """``video-thumbnail``: one frame of the video as a picture."""

    id = "video-thumbnail"
    category = "video"
    title = "Video thumbnail"
    description = "Take one frame of a video, at a time or a percentage of its length, as JPG, PNG or WebP."
    accepts = VIDEO_FORMATS
    produces = ("jpg", "png", "webp")
    params = ThumbnailParams
    engines = (PYAV,)
    timeout_seconds = 300.0

    def convert(self, ctx: Context, source: InputFile, progress: Callable[[float], None]) -> None:
        with engine_errors():
            self._convert(ctx, source, progress)

    def _convert(self, ctx: Context, source: InputFile, progress: Callable[[float], None]) -> None:
        params: ThumbnailParams = ctx.params
        with contextlib.closing(open_input(source.path)) as container:
            video_stream(container)
            duration = media_duration(container)
            at = resolve_at(params.at, duration)
            if duration is not None and at >= duration:
                ctx.notes.append(f"{at:g} s is past the end ({duration:.2f} s): the last frame was taken")
                at = max(duration - 1.0, 0.0)
                latest = True
            else:
                latest = False
            # Read a few seconds past ``at`` only: enough for any frame interval, not the whole file.
            window = trim_window(container, at, at + 5.0)
        pictures: list[Image.Image] = []

        def keep(image: Image.Image) -> None:
            # The first frame at or after ``at`` is the one; past the end, the last one decoded.
            if latest or not pictures:
                pictures[:] = [image]

        decode_rgb(ctx, source.path, window, None, params.width, None, keep, scaled(progress, 0.0, 0.9))
        if not pictures:
            raise ConversionError("empty_media", "No frame could be decoded at that time.")
        final = ctx.output_path(source.name, ctx.output_format)
        pillow_format, options = THUMBNAIL_SAVE[ctx.output_format]
        with atomic_output(final) as temp:
            pictures[0].save(temp, format=pillow_format, **options)
        progress(1.0)



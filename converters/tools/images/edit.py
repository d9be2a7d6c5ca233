"""Image tools that change pixels or bytes but not (by default) the format: resize, compress, rotate.

Their output format is the input's unless the job names another: ``keep``,
the first entry of ``produces`` and so the default, means "same as the input".
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field, model_validator

from converters.base import Context, ConversionError, InputFile, scaled
from converters.engines.pictures import LOSSY, WRITABLE_FORMATS, Picture, encode, has_alpha
from converters.tools.images.convert import ImageParams, ImageTool, write_output

if TYPE_CHECKING:
    from PIL import Image

KEEP = "keep"
MIN_QUALITY, MAX_QUALITY = 5, 95  # the span a target size is searched in
DOWNSCALE_STEP, DOWNSCALE_TRIES = 0.75, 8
# Compressing is worth slower encoders: smallest zlib output, WebP's slowest method.
MORE_EFFORT: dict[str, dict[str, Any]] = {
    "jpg": {"optimize": True},
    "png": {"optimize": True},
    "gif": {"optimize": True},
    "webp": {"method": 6},
    "tiff": {"compression": "tiff_adobe_deflate"},
}


def output_format(ctx: Context, source: InputFile) -> str:
    """The format to write: the job's, or with ``keep`` the input's own (PNG for one the tools only read)."""
    fmt = ctx.output_format
    if fmt != KEEP:
        return fmt
    return source.format if source.format in WRITABLE_FORMATS else "png"


class FormatKeepingTool(ImageTool):
    produces = (KEEP, *WRITABLE_FORMATS)


def map_frames(picture: Picture, change: Callable[[Image.Image], Image.Image], ctx: Context) -> None:
    """Apply ``change`` to every frame, checking for cancellation between frames."""
    frames = []
    for frame in picture.frames:
        ctx.check_cancelled()
        frames.append(change(frame))
    picture.frames = frames


# --------------------------------------------------------------------------- image-resize


class ResizeParams(ImageParams):
    width: int | None = Field(
        None, ge=1, le=30000, description="Target width in pixels.",
        json_schema_extra={"x-unit": "px", "examples": [320, 640, 800, 1024, 1280, 1920, 2560, 3840]},
    )
    height: int | None = Field(
        None, ge=1, le=30000, description="Target height in pixels.",
        json_schema_extra={"x-unit": "px", "examples": [240, 480, 600, 720, 768, 1080, 1440, 2160]},
    )
    percent: float | None = Field(
        None, gt=0, le=1000, description="Scale both sides by this percentage instead.",
        json_schema_extra={"x-unit": "%", "examples": [25, 50, 75, 150, 200]},
    )
    fit: Literal["contain", "cover", "exact"] = Field(
        "contain",
        description="With width and height: contain fits inside the box, cover fills it and crops the overflow, "
        "exact stretches to it.",
        json_schema_extra={
            "x-enumLabels": {"contain": "Fit inside", "cover": "Fill and crop", "exact": "Stretch"},
            "x-enumDescriptions": {
                "contain": "The picture fits inside the width and height.",
                "cover": "The picture fills them and the overflow is cropped.",
                "exact": "The picture is stretched to them.",
            },
        },
    )
    no_enlarge: bool = Field(False, description="Never make an image bigger than it is.")

    @model_validator(mode="after")
    def _one_way_to_size(self) -> ResizeParams:
        if self.percent is not None and (self.width or self.height):
            raise ValueError("give either percent or width/height, not both")
        if self.percent is None and not (self.width or self.height):
            raise ValueError("give width, height or percent")
        return self


def plan_resize(size: tuple[int, int], params: ResizeParams) -> tuple[tuple[int, int], tuple[int, int] | None]:
    """``(scaled size, crop size or None)`` for an image of ``size`` under ``params``."""
    width, height = size
    if params.percent is not None:
        scale_x = scale_y = params.percent / 100
    elif params.width and params.height:
        scale_x, scale_y = params.width / width, params.height / height
        if params.fit == "contain":
            scale_x = scale_y = min(scale_x, scale_y)
        elif params.fit == "cover":
            scale_x = scale_y = max(scale_x, scale_y)
    else:
        scale_x = scale_y = (params.width / width) if params.width else (params.height or height) / height
    if params.no_enlarge:
        scale_x, scale_y = min(scale_x, 1.0), min(scale_y, 1.0)
    scaled = (max(1, round(width * scale_x)), max(1, round(height * scale_y)))
    crop = None
    if params.fit == "cover" and params.width and params.height and params.percent is None:
        box = (min(params.width, scaled[0]), min(params.height, scaled[1]))
        crop = box if box != scaled else None
    return scaled, crop


def resize_frame(frame: Image.Image, scaled: tuple[int, int], crop: tuple[int, int] | None) -> Image.Image:
    from PIL import Image

    result = frame if frame.size == scaled else frame.resize(scaled, Image.Resampling.LANCZOS, reducing_gap=3.0)
    if crop is not None:
        left, top = (scaled[0] - crop[0]) // 2, (scaled[1] - crop[1]) // 2
        result = result.crop((left, top, left + crop[0], top + crop[1]))
    return result


class ImageResize(FormatKeepingTool):
    """Resize by width, height or percentage, fitting, filling or stretching."""

    id = "image-resize"
    title = "Resize image"
    description = "Resize images to a width and/or height (contain, cover or exact) or by a percentage."
    params = ResizeParams

    def convert(self, ctx: Context, source: InputFile, progress: Callable[[float], None]) -> None:
        params: ResizeParams = ctx.params
        fmt = output_format(ctx, source)
        picture = self.load(ctx, source, fmt, scaled(progress, 0.0, 0.3))
        new_size, crop = plan_resize(picture.size, params)
        map_frames(picture, lambda frame: resize_frame(frame, new_size, crop), ctx)
        progress(0.7)
        data = encode(picture, fmt, params.quality, strip_metadata=params.strip_metadata, background=params.background)
        write_output(ctx, source, data, fmt)
        progress(1.0)


# --------------------------------------------------------------------------- image-rotate


class RotateParams(ImageParams):
    angle: float = Field(
        90, ge=-360, le=360, description="Clockwise turn in degrees; angles other than 90/180/270 widen the canvas."
    )
    flip: Literal["none", "horizontal", "vertical"] = Field(
        "none", description="Mirror the image after turning it.",
        json_schema_extra={
            "x-enumLabels": {"none": "No flip", "horizontal": "Left to right", "vertical": "Upside down"},
        },
    )


def rotate_frame(frame: Image.Image, angle: float, flip: str, background: str, keep_alpha: bool) -> Image.Image:
    from PIL import Image, ImageColor

    turn = angle % 360
    right_angles = {90: Image.Transpose.ROTATE_270, 180: Image.Transpose.ROTATE_180, 270: Image.Transpose.ROTATE_90}
    if turn in right_angles:
        frame = frame.transpose(right_angles[int(turn)])  # exact: no resampling
    elif turn:
        # A free angle exposes corners: transparent where the output can hold alpha, else the background.
        source = frame.convert("RGBA") if keep_alpha else frame.convert("RGB")
        fill = (0, 0, 0, 0) if keep_alpha else ImageColor.getrgb(background)
        frame = source.rotate(-turn, resample=Image.Resampling.BICUBIC, expand=True, fillcolor=fill)
    if flip == "horizontal":
        frame = frame.transpose(Image.Transpose.FLIP_LEFT_RIGHT)
    elif flip == "vertical":
        frame = frame.transpose(Image.Transpose.FLIP_TOP_BOTTOM)
    return frame


class ImageRotate(FormatKeepingTool):
    """Turn and/or mirror images."""

    id = "image-rotate"
    title = "Rotate image"
    description = "Turn images clockwise by any angle (90/180/270 are exact) and optionally mirror them."
    params = RotateParams

    def convert(self, ctx: Context, source: InputFile, progress: Callable[[float], None]) -> None:
        params: RotateParams = ctx.params
        fmt = output_format(ctx, source)
        picture = self.load(ctx, source, fmt, scaled(progress, 0.0, 0.3))
        keep_alpha = fmt not in ("jpg", "bmp")
        map_frames(
            picture, lambda frame: rotate_frame(frame, params.angle, params.flip, params.background, keep_alpha), ctx
        )
        progress(0.7)
        data = encode(picture, fmt, params.quality, strip_metadata=params.strip_metadata, background=params.background)
        write_output(ctx, source, data, fmt)
        progress(1.0)


# --------------------------------------------------------------------------- image-compress


class CompressParams(ImageParams):
    quality: int = Field(
        75, ge=1, le=100, description="1-100. For png, anything under 100 allows a 256-colour palette."
    )
    target_size_kb: int | None = Field(
        None, ge=1, le=1_000_000, description="Aim for at most this many kilobytes (overrides quality)."
    )
    strip_metadata: bool = Field(True, description="Drop EXIF (camera, GPS, dates); it can be tens of kilobytes.")


def _quantised(picture: Picture, colours: int) -> Picture:
    """A copy of ``picture`` reduced to a palette of ``colours`` (like pngquant), alpha kept."""
    from PIL import Image

    frames = []
    for frame in picture.frames:
        method = Image.Quantize.FASTOCTREE if has_alpha(frame) else Image.Quantize.MEDIANCUT
        source = frame.convert("RGBA" if has_alpha(frame) else "RGB")
        frames.append(source.quantize(colors=colours, method=method, dither=Image.Dither.FLOYDSTEINBERG))
    return Picture(frames, picture.durations, picture.loop, picture.exif, picture.icc_profile, picture.source_format)


def _scaled(picture: Picture, factor: float) -> Picture:
    size = (max(1, round(picture.size[0] * factor)), max(1, round(picture.size[1] * factor)))
    frames = [resize_frame(frame, size, None) for frame in picture.frames]
    return Picture(frames, picture.durations, picture.loop, picture.exif, picture.icc_profile, picture.source_format)


class ImageCompress(FormatKeepingTool):
    """Make images smaller on disk: by quality, or aiming for a size in kilobytes."""

    id = "image-compress"
    title = "Compress image"
    description = (
        "Make images smaller: lossy formats by quality (or a target size in KB), PNG by palette reduction. "
        "Keeps the format unless told; a file that would not get smaller is returned unchanged."
    )
    params = CompressParams

    def convert(self, ctx: Context, source: InputFile, progress: Callable[[float], None]) -> None:
        params: CompressParams = ctx.params
        fmt = output_format(ctx, source)
        if fmt in ("bmp", "ico") and fmt == source.format:
            raise ConversionError(
                "unsupported_format", f"{fmt} has no compression to tune; convert it to png or jpg instead."
            )
        picture = self.load(ctx, source, fmt, scaled(progress, 0.0, 0.2))
        target = params.target_size_kb * 1024 if params.target_size_kb else None

        def attempt(candidate: Picture, quality: int) -> bytes:
            ctx.check_cancelled()
            return encode(
                candidate,
                fmt,
                quality,
                strip_metadata=params.strip_metadata,
                background=params.background,
                extra=MORE_EFFORT.get(fmt),
            )

        if fmt in LOSSY:
            data = self._lossy(ctx, source, picture, attempt, params.quality, target, progress)
        else:
            data = self._lossless(ctx, source, picture, attempt, params.quality, target)
        original = source.path.stat().st_size
        if fmt == source.format and len(data) >= original:
            data = source.path.read_bytes()
            ctx.notes.append(f"{source.name}: original kept: compression did not make it smaller.")
        elif target and len(data) > target:
            reached = f"{len(data) // 1024} KB is the smallest reached (target {target // 1024} KB)"
            ctx.notes.append(f"{source.name}: {reached}.")
        write_output(ctx, source, data, fmt)
        progress(1.0)

    def _lossy(
        self,
        ctx: Context,
        source: InputFile,
        picture: Picture,
        attempt: Callable[[Picture, int], bytes],
        quality: int,
        target: int | None,
        progress: Callable[[float], None],
    ) -> bytes:
        if target is None:
            return attempt(picture, quality)
        for tries in range(DOWNSCALE_TRIES + 1):
            # Highest quality that fits, by bisection over MIN..MAX_QUALITY.
            low, high, best = MIN_QUALITY, MAX_QUALITY, None
            smallest = attempt(picture, MIN_QUALITY)
            if len(smallest) <= target:
                best = smallest
                while low < high:
                    middle = (low + high + 1) // 2
                    data = attempt(picture, middle)
                    if len(data) <= target:
                        best, low = data, middle
                    else:
                        high = middle - 1
                progress(0.9)
                if tries:
                    width, height = picture.size
                    ctx.notes.append(f"{source.name}: scaled down to {width}x{height} to reach the size.")
                return best
            if tries == DOWNSCALE_TRIES:
                return smallest
            # Even the lowest quality is too big: fewer pixels, roughly in proportion to the overshoot.
            factor = max(0.25, min(DOWNSCALE_STEP, (target / len(smallest)) ** 0.5))
            picture = _scaled(picture, factor)
            progress(0.2 + 0.7 * (tries + 1) / (DOWNSCALE_TRIES + 1))
        raise AssertionError("unreachable")

    def _lossless(
        self,
        ctx: Context,
        source: InputFile,
        picture: Picture,
        attempt: Callable[[Picture, int], bytes],
        quality: int,
        target: int | None,
    ) -> bytes:
        best = attempt(picture, quality)
        if target is None and quality >= 100:
            return best
        # Beyond lossless: a palette (one step for quality < 100; as few colours as a target needs).
        for colours in (256, 128, 64, 32, 16):
            if target is not None and len(best) <= target:
                break
            data = attempt(_quantised(picture, colours), quality)
            if len(data) < len(best):
                best = data
            if target is None:
                break
        return best



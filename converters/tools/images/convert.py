# PyMuPDF annotates only part of its API; calls into the rest are untyped by no fault of ours.
# mypy: disable-error-code="no-untyped-call"
"""``image-convert``, and the base every image tool shares (``ImageTool``, ``ImageParams``, ``write_output``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, ClassVar

from pydantic import Field

from converters.base import (
    CamelParams,
    Context,
    Engine,
    InputFile,
    Tool,
    ToolEnv,
    atomic_output,
    safe_stem,
    scaled,
)
from converters.engines.pictures import (
    ANIMATED,
    HEX_COLOUR,
    IMAGE_FORMATS,
    PILLOW,
    PILLOW_HEIF,
    PILLOW_JXL,
    WRITABLE_FORMATS,
    Picture,
    encode,
    load_picture,
    precheck_images,
)


class ImageParams(CamelParams):
    """What every image-writing tool lets you choose about the written file."""

    quality: int = Field(85, ge=1, le=100, description="Quality of lossy output (jpg, webp, avif, heic), 1-100.")
    strip_metadata: bool = Field(
        False, description="Drop EXIF (camera, GPS, dates) from the output. The colour profile is always kept."
    )
    background: str = Field(
        "#ffffff", pattern=HEX_COLOUR, description="Colour that transparent areas get in formats without alpha (jpg)."
    )


def write_output(ctx: Context, source: InputFile, data: bytes, fmt: str, suffix: str = "") -> Path:
    """Write ``data`` to a fresh output named after ``source``, atomically."""
    target = ctx.output_path(safe_stem(source.name or source.path.name) + suffix, fmt)
    with atomic_output(target) as tmp:
        tmp.write_bytes(data)
    return target


class ImageTool(Tool):
    """Base of the image tools: Pillow (+ pillow-heif), the ``images`` category, every common format."""

    category: ClassVar[str] = "images"
    accepts: ClassVar[tuple[str, ...]] = IMAGE_FORMATS
    produces: ClassVar[tuple[str, ...]] = WRITABLE_FORMATS
    engines: ClassVar[tuple[Engine, ...]] = (PILLOW, PILLOW_HEIF, PILLOW_JXL)
    max_input_size_bytes: ClassVar[int] = 1000**3

    def unavailable_reason(self, env: ToolEnv | None = None) -> str | None:
        # pillow-heif only adds HEIC: without it the tool still runs, and HEIC fails with engine_missing.
        return None if PILLOW.available() else f"Pillow is not installed. {PILLOW.install_hint}"

    def precheck(self, inputs: Sequence[InputFile], params: Any, env: ToolEnv | None = None) -> None:
        precheck_images(inputs, env)

    def load(
        self, ctx: Context, source: InputFile, fmt_out: str, progress: Callable[[float], None] = lambda f: None
    ) -> Picture:
        """Decode ``source`` (progress per frame), keeping only the first frame if ``fmt_out`` has one."""
        picture = load_picture(source.path, source.format, ctx.env, ctx.check_cancelled, progress=progress)
        if picture.animated and not (
            (fmt_out in ANIMATED and source.format in ANIMATED) or fmt_out == source.format == "tiff"
        ):
            picture.frames, picture.durations = picture.frames[:1], picture.durations[:1]
            ctx.notes.append(f"{source.name}: {fmt_out} cannot hold several frames; only the first was kept.")
        return picture


class ImageConvert(ImageTool):
    """Convert between image formats, keeping animation where both formats have it."""

    id = "image-convert"
    title = "Convert image"
    description = (
        "Convert images between PNG, JPEG, WebP, AVIF, HEIC, TIFF, BMP, GIF and ICO. "
        "EXIF orientation is applied; animations are kept where both formats support them."
    )
    params = ImageParams

    def convert(self, ctx: Context, source: InputFile, progress: Callable[[float], None]) -> None:
        params: ImageParams = ctx.params
        fmt = ctx.output_format
        picture = self.load(ctx, source, fmt, scaled(progress, 0.0, 0.5))
        ctx.check_cancelled()
        data = encode(picture, fmt, params.quality, strip_metadata=params.strip_metadata, background=params.background)
        write_output(ctx, source, data, fmt)
        progress(1.0)




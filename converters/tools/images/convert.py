# PyMuPDF annotates only part of its API; calls into the rest are untyped by no fault of ours.
# mypy: disable-error-code="no-untyped-call"
"""``image-convert``, and the base every image tool shares (``ImageTool``, ``ImageParams``, ``write_output``).

``image-convert`` also has what only some inputs need: a camera RAW's white balance, its embedded preview and
16-bit output, and a Photoshop document's layers written one file each.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import Field

from converters.base import (
    CamelParams,
    Context,
    ConversionError,
    Engine,
    InputFile,
    Tool,
    ToolEnv,
    atomic_output,
    safe_stem,
    scaled,
)
from converters.engines import photoshop, rawphoto
from converters.engines.photoshop import PHOTOSHOP_FORMATS, PSD_TOOLS
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
from converters.engines.rawphoto import RAW_FORMATS, RAWPY, Development, WhiteBalance
from converters.inputs.limits import pixel_limit


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
    engines: ClassVar[tuple[Engine, ...]] = (PILLOW, PILLOW_HEIF, PILLOW_JXL, RAWPY, PSD_TOOLS)
    max_input_size_bytes: ClassVar[int] = 1000**3

    def unavailable_reason(self, env: ToolEnv | None = None) -> str | None:
        # pillow-heif, rawpy and psd-tools each add formats: without one the tool still runs, and those
        # formats fail with engine_missing.
        return None if PILLOW.available() else f"Pillow is not installed. {PILLOW.install_hint}"

    def precheck(self, inputs: Sequence[InputFile], params: Any, env: ToolEnv | None = None) -> None:
        precheck_images(inputs, env)

    def load(
        self,
        ctx: Context,
        source: InputFile,
        fmt_out: str,
        progress: Callable[[float], None] = lambda f: None,
        raw: Development | None = None,
    ) -> Picture:
        """Decode ``source`` (progress per frame), keeping only the first frame if ``fmt_out`` has one.

        A camera RAW is developed as ``raw`` says (the camera's white balance by default).
        """
        picture = load_picture(
            source.path, source.format, ctx.env, ctx.check_cancelled, progress=progress, raw=raw, notes=ctx.notes
        )
        if picture.animated and not (
            (fmt_out in ANIMATED and source.format in ANIMATED) or fmt_out == source.format == "tiff"
        ):
            picture.frames, picture.durations = picture.frames[:1], picture.durations[:1]
            ctx.notes.append(f"{source.name}: {fmt_out} cannot hold several frames; only the first was kept.")
        return picture


class ConvertParams(ImageParams):
    """``image-convert``'s params: the common ones, and those for camera RAW and Photoshop inputs."""

    raw_white_balance: WhiteBalance = Field(
        "camera",
        description="Camera RAW: the white balance the camera recorded, one worked out from the picture (auto), "
        "or plain daylight.",
        title="RAW white balance",
        json_schema_extra={"x-enumLabels": {"camera": "As shot", "auto": "Automatic", "daylight": "Daylight"}},
    )
    raw_preview: bool = Field(
        False,
        description="Camera RAW: take the preview the camera embedded instead of developing the sensor data "
        "(much faster, often smaller). A JPEG preview is not re-encoded when the output is jpg.",
    )
    raw_bit_depth: Literal[8, 16] = Field(
        8, description="Camera RAW: bits per channel of png and tiff output; 16 keeps the sensor's tonal detail.",
        title="RAW bit depth",
        json_schema_extra={"x-enumLabels": {"8": "8 bits per channel", "16": "16 bits per channel"}},
    )
    layers: Literal["flatten", "each"] = Field(
        "flatten",
        description="Photoshop (psd, psb): one flattened picture, or each layer as its own file named after it "
        "(hidden layers too).",
        title="Photoshop layers",
        json_schema_extra={
            "x-enumLabels": {"flatten": "One flattened picture", "each": "Each layer as a file"},
            "x-enumDescriptions": {
                "flatten": "One picture, as the layers look together.",
                "each": "Each layer as its own file named after it (hidden layers too).",
            },
        },
    )
    trim_layers: bool = Field(
        False, description="With layers 'each': crop every layer to its own bounds instead of the whole canvas."
    )

    def development(self) -> Development:
        return Development(self.raw_white_balance, self.raw_bit_depth)


class ImageConvert(ImageTool):
    """Convert between image formats, keeping animation where both formats have it."""

    id = "image-convert"
    title = "Convert image"
    description = (
        "Convert images between PNG, JPEG, WebP, AVIF, HEIC, TIFF, BMP, GIF and ICO; camera RAW and Photoshop "
        "files in. EXIF orientation is applied; animations are kept where both formats support them."
    )
    params = ConvertParams

    def convert(self, ctx: Context, source: InputFile, progress: Callable[[float], None]) -> None:
        params: ConvertParams = ctx.params
        fmt = ctx.output_format
        if source.format in PHOTOSHOP_FORMATS and params.layers == "each":
            self._each_layer(ctx, source, progress)
            return
        if source.format in RAW_FORMATS and params.raw_preview and self._from_preview(ctx, source):
            progress(1.0)
            return
        if source.format in RAW_FORMATS and params.raw_bit_depth == 16:
            if fmt in ("png", "tiff"):
                array = rawphoto.develop_array(source.path, pixel_limit(ctx.env), params.development())
                ctx.check_cancelled()
                write_output(ctx, source, rawphoto.encode_16bit(array, fmt), fmt)
                progress(1.0)
                return
            ctx.notes.append(f"{source.name}: {fmt} holds 8 bits per channel; 16 are written as png or tiff only.")
        picture = self.load(ctx, source, fmt, scaled(progress, 0.0, 0.5), raw=params.development())
        ctx.check_cancelled()
        data = encode(picture, fmt, params.quality, strip_metadata=params.strip_metadata, background=params.background)
        write_output(ctx, source, data, fmt)
        progress(1.0)

    def _from_preview(self, ctx: Context, source: InputFile) -> bool:
        """Write the RAW file's embedded preview; ``False`` (and a note) when it has none."""
        params: ConvertParams = ctx.params
        fmt = ctx.output_format
        preview = rawphoto.embedded_preview(source.path, pixel_limit(ctx.env))
        if preview is None:
            ctx.notes.append(f"{source.name}: the file holds no embedded preview; the sensor data was developed.")
            return False
        if preview.jpeg is not None and fmt == "jpg" and not preview.turned:
            data = preview.jpeg  # the camera's own JPEG, byte for byte
        else:
            picture = Picture(frames=[preview.image], source_format=source.format)
            data = encode(picture, fmt, params.quality, strip_metadata=True, background=params.background)
        write_output(ctx, source, data, fmt)
        return True

    def _each_layer(self, ctx: Context, source: InputFile, progress: Callable[[float], None]) -> None:
        """Every picture-holding layer of a Photoshop document as its own file: ``<name>-<n>-<layer>.<fmt>``."""
        params: ConvertParams = ctx.params
        fmt = ctx.output_format
        limit = pixel_limit(ctx.env)
        document = photoshop.open_document(source.path, limit)
        layers = photoshop.picture_layers(document)
        digits = len(str(len(layers)))
        written = 0
        for number, layer in enumerate(layers, start=1):
            ctx.check_cancelled()
            image, reason = photoshop.draw_layer(document, layer, limit, trim=params.trim_layers)
            if image is None:
                ctx.notes.append(f"{source.name}: layer {layer.name!r} was not written: {reason}.")
                continue
            picture = Picture(frames=[image], icc_profile=image.info.get("icc_profile"), source_format=source.format)
            data = encode(picture, fmt, params.quality, strip_metadata=True, background=params.background)
            name = safe_stem(layer.name.replace(".", "_"))  # a dot in a layer's name is not an extension
            write_output(ctx, source, data, fmt, suffix=f"-{number:0{digits}d}-{name}")
            written += 1
            progress(number / len(layers))
        if not written:
            raise ConversionError("unsupported_format", f"{source.name} has no layer with a picture to write; "
                                                        "use layers 'flatten' for the document as a whole.")

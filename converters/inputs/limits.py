"""Size limits every family shares: pixels a tool may decode or render, pages a job may go through.

Both are settings (``max_image_pixels``, ``max_pdf_pages``); the defaults keep one job within a worker's memory.
"""

from __future__ import annotations

from converters.base import ConversionError, ToolEnv

DEFAULT_PIXEL_LIMIT = 100_000_000  # 100 megapixels: a 10000x10000 image, ~400 MB as RGBA


DEFAULT_PAGE_LIMIT = 10_000  # pages a job may go through one by one (render, read, stamp, copy)


PRECHECK_MAX_BYTES = 256 * 1024**2  # above this, opening at job creation is not "cheap": check when running


def pixel_limit(env: ToolEnv | None) -> int:
    """The largest image, in pixels, a tool may decode or render (setting ``max_image_pixels``)."""
    if env is not None:
        value = env.settings.get("max_image_pixels")
        if value:
            return int(value)
    return DEFAULT_PIXEL_LIMIT


def page_limit(env: ToolEnv | None) -> int:
    """The most pages a job may go through one by one (setting ``max_pdf_pages``)."""
    if env is not None:
        value = env.settings.get("max_pdf_pages")
        if value:
            return int(value)
    return DEFAULT_PAGE_LIMIT


def too_large(what: str, pixels: float, limit: int) -> ConversionError:
    return ConversionError(
        "input_too_large",
        f"{what} would be {pixels / 1e6:.0f} megapixels, over the limit of {limit / 1e6:.0f} megapixels.",
    )


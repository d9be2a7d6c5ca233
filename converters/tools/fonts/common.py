"""What the font tools share: loading a font with fontTools once its header and streams are checked
(:mod:`converters.tools.fonts.headers`), checking every glyph, its names, and the ``FontTool`` base."""

from __future__ import annotations

import io
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from converters.base import Cancelled, ConversionError, Engine, InputFile, Tool, ToolEnv
from converters.tools.fonts.headers import (
    FONT_FORMATS,
    FONTTOOLS,
    MAX_FILE_BYTES,
    MAX_GLYPHS,
    Header,
    check_glyph_counts,
    check_streams,
    damaged,
    read_header,
    too_large,
)

if TYPE_CHECKING:
    from fontTools.ttLib import TTFont


@contextmanager
def font_errors(what: str) -> Iterator[None]:
    """Turn what fontTools raises on a damaged font (struct.error, AssertionError, KeyError ...) into
    ``damaged_input``, named in words; ConversionError, cancellation and MemoryError pass through."""
    try:
        yield
    except (ConversionError, Cancelled, MemoryError):
        raise
    except RecursionError:
        raise damaged(f"{what}: the font's glyphs refer to each other in a loop.") from None
    except OSError as exc:
        if getattr(exc, "errno", None) is not None:  # the disk, not the font
            raise
        raise damaged(f"{what}: {describe(exc)}") from None
    except Exception as exc:  # noqa: BLE001 - fontTools has no single error type for bad data
        raise damaged(f"{what}: {describe(exc)}") from None


def describe(exc: BaseException) -> str:
    """What went wrong, in one line: the error, its message, or where it was raised when it has none."""
    import traceback

    name = type(exc).__name__
    if name == "error":  # struct.error, zlib.error ...
        name = f"{type(exc).__module__}.{name}"
    text = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else ""
    if text:
        return f"{name}: {text}"
    frames = traceback.extract_tb(exc.__traceback__)
    if frames:
        return f"{name} in {Path(frames[-1].filename).stem}.{frames[-1].name}"
    return name


@dataclass
class LoadedFont:
    font: TTFont
    header: Header
    data: bytes  # the file as given

    @property
    def outlines(self) -> str | None:
        """``glyf`` (TrueType quadratic), ``CFF`` or ``CFF2`` (cubic), or ``None`` (bitmaps only)."""
        for tag in ("glyf", "CFF ", "CFF2"):
            if tag in self.font:
                return tag.strip()
        return None

    @property
    def variable(self) -> bool:
        return "fvar" in self.font


CORE_TABLES = ("head", "hhea", "maxp", "OS/2", "name", "cmap", "post", "hmtx")


def load_font(source: InputFile, check_cancelled: Callable[[], None] = lambda: None) -> LoadedFont:
    """Open ``source`` with fontTools after the header and stream checks; decompile the tables every tool reads."""
    from fontTools.ttLib import TTFont

    size = source.path.stat().st_size
    with open(source.path, "rb") as f:
        header = read_header(f, size)
        check_streams(f, header, check_cancelled)
        f.seek(0)
        data = f.read()
    check_cancelled()
    with font_errors(f"{source.name} cannot be read as a font"):
        font = TTFont(io.BytesIO(data), recalcTimestamp=False, checkChecksums=0)
        if header.container == "woff2":  # the tables as fontTools rebuilds them from the WOFF2 transforms
            lengths = {tag: table.length for tag, table in header.tables.items()}
            if "loca" in lengths:
                lengths["loca"] = len(font.reader["loca"])
            check_glyph_counts(lambda tag, need: _first(font.reader[tag], tag, need), lengths)
        for tag in CORE_TABLES:
            if tag in font:
                font[tag]  # noqa: B018 - decompiles it: damage shows here, not halfway through the output
        glyphs = len(font.getGlyphOrder())
        if glyphs > MAX_GLYPHS:
            raise too_large(f"The font has {glyphs:,} glyphs; the limit is {MAX_GLYPHS:,}.")
        for tag in ("glyf", "CFF ", "CFF2"):
            if tag in font:
                font[tag]  # noqa: B018
    return LoadedFont(font, header, data)


def _first(data: bytes, tag: str, need: int) -> bytes:
    if len(data) < need:
        raise damaged(f"The font's '{tag}' table is {len(data)} bytes; it needs at least {need}.")
    return data[:need]


MAX_GLYPH_STEPS = 100_000  # points and components one glyph may draw; real glyphs draw a few hundred
MAX_FONT_STEPS = 30_000_000  # and all of them together: 65,535 glyphs of ~450 each, about two minutes


class GlyphTooComplex(Exception):
    pass


def check_glyphs(font: TTFont, names: Sequence[str] | None, check_cancelled: Callable[[], None],
                 progress: Callable[[float], None] = lambda fraction: None) -> None:
    """Draw each glyph (all of them, or ``names``) once, so that damaged outlines fail here, by name.

    Drawing decodes a glyph completely: TrueType points and components, CFF charstrings with their
    subroutines. A glyph whose components nest into millions of copies is refused after
    :data:`MAX_GLYPH_STEPS`, a font whose glyphs together draw more than :data:`MAX_FONT_STEPS` too.
    """
    from fontTools.pens.basePen import BasePen

    glyph_set = font.getGlyphSet()

    class Counter(BasePen):  # type: ignore[misc]
        steps = 0

        def count(self) -> None:
            Counter.steps += 1
            if Counter.steps > MAX_GLYPH_STEPS:
                raise GlyphTooComplex()

        def _moveTo(self, pt: Any) -> None:
            self.count()

        def _lineTo(self, pt: Any) -> None:
            self.count()

        def _curveToOne(self, pt1: Any, pt2: Any, pt3: Any) -> None:
            self.count()

        def _qCurveToOne(self, pt1: Any, pt2: Any) -> None:
            self.count()

        def addComponent(self, glyphName: str, transformation: Any) -> None:  # noqa: N803 - fontTools' name
            self.count()
            super().addComponent(glyphName, transformation)

    order = list(names) if names is not None else font.getGlyphOrder()
    total = 0
    for index, name in enumerate(order):
        if index % 256 == 0:
            check_cancelled()
            progress(index / max(len(order), 1))
        if name not in glyph_set:
            continue
        Counter.steps = 0
        try:
            glyph_set[name].draw(Counter(glyph_set))
        except GlyphTooComplex:
            raise damaged(f"The glyph {name!r} draws more than {MAX_GLYPH_STEPS:,} points and components; "
                          "its components nest too deeply to be a real glyph.") from None
        except (ConversionError, Cancelled, MemoryError):
            raise
        except RecursionError:
            raise damaged(f"The glyph {name!r} refers to itself through its components.") from None
        except Exception as exc:  # noqa: BLE001 - fontTools has no single error type for bad glyph data
            raise damaged(f"The glyph {name!r} cannot be read: {describe(exc)}.") from None
        total += Counter.steps
        if total > MAX_FONT_STEPS:
            raise too_large(f"The font's glyphs draw more than {MAX_FONT_STEPS:,} points and components "
                            "together, far more than real fonts.")
    progress(1.0)


def font_names(font: TTFont) -> dict[str, str]:
    """Family, style, full name, version and PostScript name from the ``name`` table ('' when absent)."""
    out = {"family": "", "style": "", "full": "", "version": "", "postscript": ""}
    if "name" not in font:
        return out
    name = font["name"]
    try:
        out["family"] = name.getBestFamilyName() or ""
        out["style"] = name.getBestSubFamilyName() or ""
        out["full"] = name.getBestFullName() or ""
        out["version"] = (name.getDebugName(5) or "").removeprefix("Version ").strip()
        out["postscript"] = name.getDebugName(6) or ""
    except Exception:  # noqa: BLE001 - a name record in an unknown encoding: the name stays unknown
        pass
    return out


# --------------------------------------------------------------------------- the tools' base


class FontTool(Tool):
    """Base of the font tools: fontTools, the ``fonts`` category, TTF / OTF / WOFF / WOFF2 in, header checks.

    Brotli is not among the engines: without it the tools still run, and WOFF2 fails with ``engine_missing``.
    """

    category: ClassVar[str] = "fonts"
    accepts: ClassVar[tuple[str, ...]] = FONT_FORMATS
    engines: ClassVar[tuple[Engine, ...]] = (FONTTOOLS,)
    max_input_size_bytes: ClassVar[int] = MAX_FILE_BYTES
    timeout_seconds: ClassVar[float] = 600.0

    def precheck(self, inputs: Sequence[InputFile], params: Any, env: ToolEnv | None = None) -> None:
        for source in inputs:
            if source.format not in FONT_FORMATS:
                continue
            with open(source.path, "rb") as f:
                read_header(f, source.path.stat().st_size)

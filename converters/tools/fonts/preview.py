# PyMuPDF annotates only part of its API; calls into the rest are untyped by no fault of ours.
# mypy: disable-error-code="no-untyped-call"
"""``font-preview``: a specimen sheet of a font, as PNG or PDF, drawn with PyMuPDF."""

from __future__ import annotations

import io
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import Field

from converters.base import (
    CamelParams,
    Context,
    ConversionError,
    Engine,
    InputFile,
    atomic_output,
    safe_stem,
)
from converters.engines.mupdf import PYMUPDF
from converters.inputs.limits import pixel_limit, too_large
from converters.tools.fonts.common import (
    FontTool,
    LoadedFont,
    check_glyphs,
    font_errors,
    font_names,
    load_font,
)
from converters.tools.fonts.headers import FONTTOOLS

if TYPE_CHECKING:
    import pymupdf

UPPER = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
LOWER = "abcdefghijklmnopqrstuvwxyz"
DIGITS = "0123456789"
PUNCTUATION = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~ ¡¿«»–—‘’“”…€£¥©®"
PANGRAM = "The quick brown fox jumps over the lazy dog."
SIZES = (12, 18, 24, 36, 48)
SAMPLE_CHARACTERS = 400  # of a font without Latin letters: the first this many it maps
PAGE_WIDTH = 595.0  # A4's width, in points
MARGIN = 40.0
MAX_PAGE_HEIGHT = 14_400.0  # PDF's largest page side (200 inches)
WORD_GAP = 0.3  # ems between words, for fonts without a space
LABEL = "helv"  # what labels and the metadata are written in (PyMuPDF's built-in Helvetica)


class FontPreviewParams(CamelParams):
    text: str | None = Field(
        None, min_length=1, max_length=500,
        description="Your own sample text, shown at every size instead of the pangram.",
    )
    dpi: int = Field(150, ge=72, le=300, description="Resolution of the PNG (a PDF is vector and ignores it).")


@dataclass
class Line:
    text: str
    size: float
    own: bool  # in the previewed font (else the label font)
    gap: float = 0.0  # space above the line


class FontPreview(FontTool):
    id = "font-preview"
    title = "Font preview"
    description = (
        "A specimen sheet of a font: its name, family, style, version and glyph count, the alphabet, digits, "
        "punctuation and a pangram (or your text) at 12 to 48 pt; a font without Latin letters shows the "
        "characters it has. As PNG or PDF (the font embedded)."
    )
    produces = ("png", "pdf")
    params = FontPreviewParams
    engines: ClassVar[tuple[Engine, ...]] = (FONTTOOLS, PYMUPDF)
    timeout_seconds: ClassVar[float] = 300.0

    def convert(self, ctx: Context, source: InputFile, progress: Callable[[float], None]) -> None:
        import pymupdf

        params: FontPreviewParams = ctx.params
        loaded = load_font(source, ctx.check_cancelled)
        progress(0.3)
        with font_errors(f"{source.name} cannot be read as a font"):
            sfnt = sfnt_bytes(loaded)
        try:
            face = pymupdf.Font(fontbuffer=sfnt)
            if face.glyph_count == 0:
                raise ValueError("no glyphs")
        except Exception as exc:  # noqa: BLE001 - MuPDF's FzError* and friends
            reason = str(exc).splitlines()[0][:200] if str(exc).strip() else type(exc).__name__
            raise ConversionError("damaged_input", f"{source.name}: PyMuPDF cannot load the font ({reason}).") from None
        label = pymupdf.Font(LABEL)
        ctx.check_cancelled()
        lines = specimen_lines(loaded, face, params.text)
        cmap = loaded.font.getBestCmap() or {}
        drawn = {cmap[ord(c)] for line in lines if line.own for c in line.text if ord(c) in cmap}
        check_glyphs(loaded.font, sorted(drawn), ctx.check_cancelled)  # damaged outlines fail here, by name
        fmt = ctx.output_format
        doc = pymupdf.open()
        try:
            page = lay_out(doc, lines, face, label, ctx.check_cancelled)
            progress(0.7)
            stem = safe_stem(source.name or source.path.name)
            if fmt == "png":
                pixels = (page.rect.width * params.dpi / 72) * (page.rect.height * params.dpi / 72)
                limit = pixel_limit(ctx.env)
                if pixels > limit:
                    raise too_large(f"The specimen at {params.dpi} dpi", pixels, limit)
                pix = page.get_pixmap(dpi=params.dpi, alpha=False)
                data = pix.tobytes("png")
                with atomic_output(ctx.output_path(stem, "png")) as tmp:
                    tmp.write_bytes(data)
            else:
                names = font_names(loaded.font)
                doc.set_metadata({"title": f"{names['full'] or source.name} — specimen", "creator": "FileKiln"})
                try:
                    doc.subset_fonts()  # the glyphs shown, not the whole font
                except Exception:  # noqa: BLE001 - MuPDF could not subset this font: embed all of it
                    pass
                with atomic_output(ctx.output_path(stem, "pdf"), require_content=True) as tmp:
                    doc.save(tmp, garbage=3, deflate=True)
        finally:
            doc.close()
        progress(1.0)


def sfnt_bytes(loaded: LoadedFont) -> bytes:
    """The font as a plain sfnt (MuPDF reads neither WOFF nor WOFF2)."""
    if loaded.header.container == "sfnt":
        return loaded.data
    font = loaded.font
    font.flavor, font.flavorData = None, None
    buf = io.BytesIO()
    font.save(buf)
    return buf.getvalue()


def shown(text: str, face: pymupdf.Font) -> str:
    """``text`` without the characters the font lacks (MuPDF would draw them from a fallback font)."""
    return "".join(c for c in text if c in " \n" or face.has_glyph(ord(c)))


def own_characters(loaded: LoadedFont, face: pymupdf.Font, limit: int) -> str:
    """Up to ``limit`` visible characters the font maps, in code point order."""
    cmap = loaded.font.getBestCmap() or {}
    out: list[str] = []
    for cp in sorted(cmap):
        if len(out) >= limit:
            break
        char = chr(cp)
        if unicodedata.category(char)[0] in "CZM" or not face.has_glyph(cp):
            continue  # controls, spaces, unassigned, combining marks (nothing to sit on)
        out.append(char)
    return "".join(out)


def specimen_lines(loaded: LoadedFont, face: pymupdf.Font, text: str | None) -> list[Line]:
    font = loaded.font
    names = font_names(font)
    title = names["full"] or " ".join(p for p in (names["family"], names["style"]) if p) or "Untitled font"
    kind = {"glyf": "TrueType", "CFF": "CFF", "CFF2": "CFF2"}.get(loaded.outlines or "", "bitmap")
    container = {"sfnt": "", "woff": " in WOFF", "woff2": " in WOFF2"}[loaded.header.container]
    facts = [
        f"Family: {names['family'] or '-'}    Style: {names['style'] or '-'}    Version: {names['version'] or '-'}",
        f"Glyphs: {len(font.getGlyphOrder()):,}    Characters: {len(font.getBestCmap() or {}):,}    "
        f"Outlines: {kind}{container}{'    Variable font (default instance shown)' if loaded.variable else ''}",
    ]
    lines = [Line(title, 26, own=len(shown(title, face)) == len(title), gap=0)]
    lines += [Line(fact, 10, own=False, gap=4) for fact in facts]
    latin = len(shown(UPPER + LOWER, face))
    sample = None
    if latin >= len(UPPER + LOWER) // 2:
        for n, row in enumerate((UPPER, LOWER, DIGITS, PUNCTUATION)):
            kept = shown(row, face).strip()
            if kept:
                lines.append(Line(kept, 24, own=True, gap=18 if n == 0 else 6))
    else:
        own = own_characters(loaded, face, SAMPLE_CHARACTERS)
        total = len(font.getBestCmap() or {})
        what = f"Only {latin} of the 52 Latin letters" if latin else "No Latin letters"
        if own:
            lines.append(Line(f"{what}; the characters it has" +
                              (f" (the first {len(own)} of {total:,})" if total > len(own) else "") + ":",
                              10, own=False, gap=18))
        else:
            lines.append(Line(f"{what}, and no other character it maps can be shown.", 10, own=False, gap=18))
        if own:
            lines.append(Line(" ".join(own), 24, own=True, gap=4))
            sample = " ".join(own[n:n + 8] for n in range(0, min(len(own), 32), 8))
    waterfall = shown(text, face) if text else (shown(PANGRAM, face) if sample is None else sample)
    if waterfall.strip():
        for n, size in enumerate(SIZES):
            lines.append(Line(f"{size} pt", 8, own=False, gap=20 if n == 0 else 10))
            lines.append(Line(waterfall, size, own=True, gap=2))
    elif text:
        lines.append(Line("None of the characters of the sample text are in this font.", 10, own=False, gap=18))
    return lines


def measure(font: pymupdf.Font, text: str, size: float) -> float:
    """How wide ``text`` is; a font without a space character gets a third of an em between words."""
    if " " not in text or font.has_glyph(32):
        return float(font.text_length(text, fontsize=size))
    words = text.split(" ")
    return float(sum(font.text_length(w, fontsize=size) for w in words)) + WORD_GAP * size * (len(words) - 1)


def wrap(text: str, face: pymupdf.Font, size: float, width: float) -> list[str]:
    """``text`` broken into lines no wider than ``width``: at spaces, inside words too long for a line."""
    out: list[str] = []
    for paragraph in text.splitlines() or [""]:
        line = ""
        for word in paragraph.split(" "):
            candidate = f"{line} {word}" if line else word
            if measure(face, candidate, size) <= width:
                line = candidate
                continue
            if line:
                out.append(line)
            line = ""
            for char in word:  # a word (or a script without spaces) wider than the line
                if line and measure(face, line + char, size) > width:
                    out.append(line)
                    line = ""
                line += char
        out.append(line)
    return out


def lay_out(doc: pymupdf.Document, lines: Sequence[Line], face: pymupdf.Font, label: pymupdf.Font,
            check_cancelled: Callable[[], None]) -> pymupdf.Page:
    """One page as tall as the lines need, the lines written on it."""
    import pymupdf

    width = PAGE_WIDTH - 2 * MARGIN
    placed: list[tuple[float, str, Any, float]] = []  # baseline, text, font, size
    y = MARGIN
    for line in lines:
        check_cancelled()
        font = face if line.own else label
        y += line.gap
        ascender = max(font.ascender, 0.8) if line.own else 0.8
        descender = min(font.descender, -0.2) if line.own else -0.2
        for part in wrap(line.text, font, line.size, width):
            baseline = y + line.size * ascender
            placed.append((baseline, part, font, line.size))
            y = baseline - line.size * descender + line.size * 0.15
        if y > MAX_PAGE_HEIGHT - MARGIN:
            break
    height = min(max(y + MARGIN, 300.0), MAX_PAGE_HEIGHT)
    page = doc.new_page(width=PAGE_WIDTH, height=height)
    page.draw_rect(page.rect, color=None, fill=(1, 1, 1))
    writer = pymupdf.TextWriter(page.rect)
    for baseline, text, font, size in placed:
        if baseline > height - MARGIN / 2:
            break
        if font.has_glyph(32):
            if text.strip():
                writer.append((MARGIN, baseline), text, font=font, fontsize=size)
            continue
        x = MARGIN  # no space in the font: MuPDF would take one from a fallback font, so place each word
        for word in text.split(" "):
            if word:
                writer.append((x, baseline), word, font=font, fontsize=size)
            x += measure(font, word, size) + WORD_GAP * size
    writer.write_text(page, color=(0, 0, 0))
    return page

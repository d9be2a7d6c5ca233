"""``font-convert``: TTF / OTF / WOFF / WOFF2 into one another, optionally subset to some characters."""

from __future__ import annotations

import io
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated

from pydantic import AfterValidator, Field, StringConstraints

from converters.base import CamelParams, Context, ConversionError, InputFile, atomic_output, safe_stem, scaled
from converters.tools.fonts.common import (
    FontTool,
    LoadedFont,
    check_glyphs,
    font_errors,
    load_font,
)
from converters.tools.fonts.headers import need_brotli
from converters.tools.fonts.outlines import to_cff, to_glyf

if TYPE_CHECKING:
    from fontTools.ttLib import TTFont

_POINT = r"(?:[Uu]\+)?[0-9A-Fa-f]{1,6}"
_RANGE = rf"{_POINT}(?:\s*-\s*{_POINT})?"
UNICODES_PATTERN = rf"^\s*{_RANGE}(?:\s*,\s*{_RANGE})*\s*$"
FEATURE_PATTERN = r"^(\*|[A-Za-z0-9_ ]{1,4})$"
OUTLINES_OF = {"ttf": "glyf", "otf": "CFF"}
FLAVOR_OF = {"woff": "woff", "woff2": "woff2", "ttf": None, "otf": None}
NAMES = {"glyf": "TrueType", "CFF": "CFF", "CFF2": "CFF2"}


def parse_ranges(spec: str) -> list[tuple[int, int]]:
    """``"U+0020-007E, U+00A0"`` -> ``[(0x20, 0x7E), (0xA0, 0xA0)]``; a backwards or too high range is an error."""
    ranges = []
    for part in spec.split(","):
        bounds = [int(re.sub(r"^[Uu]\+", "", b.strip()), 16) for b in part.split("-")]
        low, high = bounds[0], bounds[-1]
        if high > 0x10FFFF:
            raise ValueError(f"U+{high:04X} is past the last code point, U+10FFFF")
        if low > high:
            raise ValueError(f"the range U+{low:04X}-{high:04X} runs backwards")
        ranges.append((low, high))
    return ranges


def _check_ranges(value: str | None) -> str | None:
    if value is not None:
        parse_ranges(value)
    return value


FeatureTag = Annotated[str, StringConstraints(pattern=FEATURE_PATTERN)]


class FontConvertParams(CamelParams):
    subset: str | None = Field(
        None, min_length=1, max_length=10_000,
        description="Keep only the glyphs for these characters, e.g. \"Hello, world!\" (plus .notdef and the "
                    "glyphs the kept layout features reach from them). Empty: every character is kept.",
    )
    unicodes: Annotated[str | None, AfterValidator(_check_ranges)] = Field(
        None, max_length=2000, pattern=UNICODES_PATTERN,
        description="Keep only these code points, as ranges: \"U+0020-007E,U+00A0-00FF\". With subset, the "
                    "characters of both are kept.",
    )
    layout_features: list[FeatureTag] = Field(
        default_factory=lambda: ["*"], max_length=200,
        description="OpenType layout features (GSUB/GPOS) to keep: \"*\" keeps all of them; otherwise the tags "
                    "to keep, e.g. kern, liga, calt (one per line). An empty list drops them all.",
    )


class FontConvert(FontTool):
    id = "font-convert"
    title = "Convert font"
    description = (
        "Convert fonts between WOFF2, WOFF, TTF and OTF. TTF means TrueType outlines and OTF CFF outlines: "
        "converting between them changes the curves (exactly to OTF, within 1/1000 em to TTF) and drops "
        "hinting. Optionally keep only some characters (subsetting) or some layout features."
    )
    produces = ("woff2", "woff", "ttf", "otf")
    params = FontConvertParams

    def convert(self, ctx: Context, source: InputFile, progress: Callable[[float], None]) -> None:
        params: FontConvertParams = ctx.params
        target = ctx.output_format
        loaded = load_font(source, ctx.check_cancelled)
        progress(0.1)
        font = loaded.font
        check_target(loaded, target)
        check_glyphs(font, None, ctx.check_cancelled, scaled(progress, 0.1, 0.1))
        with font_errors(f"{source.name} could not be converted"):
            if params.subset is not None or params.unicodes is not None or params.layout_features != ["*"]:
                subset_font(font, params, ctx.notes, source.name)
            progress(0.3)
            ctx.check_cancelled()
            outlines, want = loaded.outlines, OUTLINES_OF.get(target)
            if want == "glyf" and outlines in ("CFF", "CFF2"):
                font = to_glyf(font, scaled(progress, 0.3, 0.5), ctx.check_cancelled)
                ctx.notes.append(f"{source.name}: the cubic (CFF) outlines were approximated by quadratic "
                                 "(TrueType) ones; hinting was dropped.")
            elif want == "CFF" and outlines == "glyf":
                font = to_cff(font, scaled(progress, 0.3, 0.5), ctx.check_cancelled)
                ctx.notes.append(f"{source.name}: the TrueType outlines were converted to CFF exactly; "
                                 "the TrueType hinting was dropped.")
            progress(0.8)
            ctx.check_cancelled()
            data = save_font(font, target, ctx.notes, source.name)
        progress(0.95)
        check_written(data, target)
        out = ctx.output_path(safe_stem(source.name or source.path.name), target)
        with atomic_output(out) as tmp:
            tmp.write_bytes(data)
        progress(1.0)


def check_target(loaded: LoadedFont, target: str) -> None:
    """Refuse (``unsupported_conversion``) an output format this font's outlines cannot become."""
    outlines, want = loaded.outlines, OUTLINES_OF.get(target)
    if want is None or outlines == want or (want == "CFF" and outlines == "CFF2") or (want, outlines) == ("glyf", None):
        return  # a bitmap-only font (colour emoji) is a TrueType-flavoured sfnt: ttf is what it already is
    if outlines is None:
        raise ConversionError("unsupported_conversion", "The font has no outlines (bitmap glyphs only), so it "
                                                        "cannot become a CFF font (otf); choose ttf, woff2 or woff.")
    if loaded.variable:
        keep = "ttf" if outlines == "glyf" else "otf"
        raise ConversionError(
            "unsupported_conversion",
            f"This is a variable font with {NAMES[outlines]} outlines; they cannot become "
            f"{'CFF (otf)' if want == 'CFF' else 'TrueType (ttf)'} without losing the variations. "
            f"Choose woff2, woff or {keep}.")


def subset_font(font: TTFont, params: FontConvertParams, notes: list[str], name: str) -> None:
    """Keep only the asked characters (all if none) and layout features, with fontTools.subset."""
    from fontTools import subset

    cmap = font.getBestCmap() or {}
    keep_all = params.subset is None and params.unicodes is None
    wanted: set[int] = set()
    if params.subset is not None:
        asked = {ord(c) for c in params.subset if c not in "\r\n"}
        wanted |= asked & set(cmap)
        missing = sorted(asked - set(cmap))
        if missing:
            shown = " ".join(f"U+{cp:04X}" for cp in missing[:20]) + (" ..." if len(missing) > 20 else "")
            notes.append(f"{name}: {len(missing)} of the asked characters are not in the font: {shown}.")
    if params.unicodes is not None:
        ranges = parse_ranges(params.unicodes)
        wanted |= {cp for cp in cmap if any(low <= cp <= high for low, high in ranges)}
    if not keep_all and not wanted:
        raise ConversionError("invalid_params", "None of the asked characters are in the font, so nothing would "
                                                "be left of it.")
    # every name record is kept, also those (IDs 256 and up) only a dropped feature or axis referred to
    name_ids = sorted({record.nameID for record in font["name"].names}) if "name" in font else []
    options = subset.Options(
        layout_features=list(params.layout_features), name_IDs=["*", *name_ids], name_languages=["*"],
        name_legacy=True,
        notdef_outline=True, glyph_names=True, legacy_kern=True, legacy_cmap=True, symbol_cmap=True,
        recalc_bounds=True,
    )
    before = set(font.keys())
    subsetter = subset.Subsetter(options)
    if keep_all:
        subsetter.populate(glyphs=font.getGlyphOrder(), unicodes=list(cmap))
    else:
        subsetter.populate(unicodes=sorted(wanted))
    subsetter.subset(font)
    dropped = sorted(before - set(font.keys()) - {"GlyphOrder", "DSIG"})
    if dropped:
        notes.append(f"{name}: tables the subsetter cannot adjust were dropped: {', '.join(dropped)}.")
    if not keep_all:
        notes.append(f"{name}: kept {len(wanted)} characters in {len(font.getGlyphOrder())} glyphs.")


def save_font(font: TTFont, target: str, notes: list[str], name: str) -> bytes:
    flavor = FLAVOR_OF[target]
    if flavor == "woff2":
        need_brotli()
    if "CFF " in font or "CFF2" in font:
        font.sfntVersion = "OTTO"
    elif "glyf" in font or target == "ttf":
        font.sfntVersion = "\x00\x01\x00\x00"
    if flavor is None and font.flavorData is not None:
        data = font.flavorData
        if getattr(data, "metaData", None) or getattr(data, "privData", None):
            notes.append(f"{name}: the WOFF metadata and private data have no place in a {target} file and "
                         "were left out.")
        font.flavorData = None
    font.flavor = flavor
    if "DSIG" in font:  # a signature of the old bytes, wrong for the new ones
        del font["DSIG"]
    buf = io.BytesIO()
    font.save(buf)
    return buf.getvalue()


def check_written(data: bytes, target: str) -> None:
    """Read the written font back: what fontTools cannot reopen is never handed out."""
    from fontTools.ttLib import TTFont

    try:
        font = TTFont(io.BytesIO(data))
        font.getGlyphOrder()
        for tag in ("head", "maxp", "cmap"):
            if tag in font:
                font[tag]  # noqa: B018
        outlines = "glyf" if "glyf" in font else "CFF" if "CFF " in font or "CFF2" in font else None
    except Exception as exc:  # noqa: BLE001 - reported as the engine's failure
        raise ConversionError("engine_failed", f"The converted font does not read back: {exc}"[:300]) from None
    want = OUTLINES_OF.get(target)
    if want is not None and outlines is not None and outlines != want:
        raise ConversionError("engine_failed", f"The {target} written has {outlines} outlines.")

"""Changing a font's outlines between TrueType (``glyf``, quadratic curves) and CFF (cubic curves), in place.

TrueType to CFF is exact: a quadratic Bézier is a cubic one whose control points sit two thirds of the
way to the quadratic's (degree elevation); only the rounding of those points to whole font units (at
most half a unit) differs. CFF to TrueType approximates each cubic by quadratics (fontTools' cu2qu),
within ``max_err`` font units (unitsPerEm / 1000 here, a tenth of a percent of the em).

Hinting does not carry over: TrueType instructions mean nothing to CFF and the reverse, so the result
is unhinted (renderers' autohinters take over). Variable fonts are refused: their deltas (``gvar`` /
CFF2 blends) cannot be carried over without re-interpolating every master.
"""

from __future__ import annotations

import io
import struct
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from converters.base import ConversionError

if TYPE_CHECKING:
    from fontTools.ttLib import TTFont

# Tables that belong to TrueType outlines or their hinting, dropped when the outlines become CFF.
TRUETYPE_ONLY = ("glyf", "loca", "cvt ", "fpgm", "prep", "gasp", "LTSH", "hdmx", "VDMX", "cvar", "gvar", "DSIG",
                 "TSI0", "TSI1", "TSI2", "TSI3", "TSI5", "TSIB", "TSIC", "TSID", "TSIJ", "TSIP", "TSIS", "TSIV")
CFF_ONLY = ("CFF ", "CFF2", "VORG", "DSIG")
PS_NAME_FORBIDDEN = set("[](){}<>/% ")
EVERY = 64  # glyphs between progress reports and cancellation checks


def refuse_variable(font: TTFont, target: str) -> None:
    if "fvar" in font:
        raise ConversionError(
            "unsupported_conversion",
            f"This is a variable font; its outlines cannot be converted to {target} without losing the "
            "variations. Choose woff2, woff, or the format its outlines already have "
            f"({'ttf' if 'glyf' in font else 'otf'}).")


def ascii_text(value: Any, limit: int = 127) -> str:
    """``value`` as printable ASCII, as CFF's strings want it."""
    return "".join(c if 32 <= ord(c) < 127 else "?" for c in str(value or ""))[:limit]


def postscript_name(font: TTFont) -> str:
    name = font["name"].getDebugName(6) if "name" in font else None
    if not name and "name" in font:
        name = font["name"].getBestFullName()
    cleaned = "".join(c for c in ascii_text(name or "Untitled") if c not in PS_NAME_FORBIDDEN and c != "?")
    return cleaned[:63] or "Untitled"


def notdef_first(font: TTFont) -> TTFont:
    """``font``, or a copy of it whose first glyph is named ``.notdef``, as CFF requires.

    TrueType does not care what glyph 0 is called. Every table refers to glyphs by index once written,
    so the copy is the font written out and read back under the new names.
    """
    from fontTools.ttLib import TTFont

    order = font.getGlyphOrder()
    if order[0] == ".notdef":
        return font
    taken = set(order)
    renamed = [".notdef"]
    for name in order[1:]:
        if name == ".notdef":
            name = next(f".notdef.{n}" for n in range(1, len(order) + 1) if f".notdef.{n}" not in taken)
        renamed.append(name)
    flavor, flavor_data = font.flavor, font.flavorData
    font.flavor = None
    buf = io.BytesIO()
    font.save(buf)
    copy = TTFont(io.BytesIO(buf.getvalue()), recalcTimestamp=False)
    copy.setGlyphOrder(renamed)  # before any table is read: they all read under these names
    copy.flavor, copy.flavorData = flavor, flavor_data
    return copy


def to_cff(font: TTFont, progress: Callable[[float], None], check_cancelled: Callable[[], None]) -> TTFont:
    """A CFF-outline version of a TrueType-outline ``font``: exact curves, same glyph order, widths and cmap.

    ``font`` itself is changed, unless its first glyph needs renaming (see :func:`notdef_first`).
    """
    from fontTools.fontBuilder import FontBuilder
    from fontTools.pens.recordingPen import DecomposingRecordingPen
    from fontTools.pens.reverseContourPen import ReverseContourPen
    from fontTools.pens.t2CharStringPen import T2CharStringPen

    refuse_variable(font, "CFF (otf)")
    font = notdef_first(font)
    order = font.getGlyphOrder()
    glyph_set = font.getGlyphSet()
    hmtx = font["hmtx"]
    charstrings = {}
    for index, name in enumerate(order):
        if index % EVERY == 0:
            check_cancelled()
            progress(index / len(order))
        recording = DecomposingRecordingPen(glyph_set)  # CFF has no components: draw them in place
        glyph_set[name].draw(recording)
        pen = T2CharStringPen(width=hmtx[name][0], glyphSet=None)
        # TrueType's outer contours run clockwise, CFF's counter-clockwise
        recording.replay(ReverseContourPen(pen))
        charstrings[name] = pen.getCharString()

    head, post, names = font["head"], font["post"], font.get("name")
    info = {
        "version": ascii_text(f"{head.fontRevision:.3f}"),
        "FullName": ascii_text(names.getBestFullName() if names else ""),
        "FamilyName": ascii_text(names.getBestFamilyName() if names else ""),
        "Weight": ascii_text(names.getBestSubFamilyName() if names else ""),
        "Notice": ascii_text(names.getDebugName(7) if names else "", 255),
        "Copyright": ascii_text(names.getDebugName(0) if names else "", 255),
        "ItalicAngle": post.italicAngle,
        "UnderlinePosition": post.underlinePosition,
        "UnderlineThickness": post.underlineThickness,
        "isFixedPitch": bool(post.isFixedPitch),
    }
    info = {key: value for key, value in info.items() if value != ""}
    ps_name = postscript_name(font)
    for tag in TRUETYPE_ONLY:
        if tag in font:
            del font[tag]
    builder = FontBuilder(font=font)
    builder.setupCFF(psName=ps_name, fontInfo=info, charStringsDict=charstrings, privateDict={})
    top = font["CFF "].cff.topDictIndex[0]
    for name in order:
        bounds = top.CharStrings[name].calcBounds(top.CharStrings)
        hmtx.metrics[name] = (hmtx[name][0], round(bounds[0]) if bounds else 0)
    builder.setupMaxp()
    post.formatType = 3.0  # glyph names live in the CFF charset
    post.extraNames, post.mapping = [], {}
    progress(1.0)
    return font


def to_glyf(font: TTFont, progress: Callable[[float], None], check_cancelled: Callable[[], None]) -> TTFont:
    """Turn a CFF-outline font into a TrueType one: cubics approximated by quadratics within upem / 1000."""
    from fontTools.pens.cu2quPen import Cu2QuPen
    from fontTools.pens.ttGlyphPen import TTGlyphPen
    from fontTools.ttLib import newTable

    refuse_variable(font, "TrueType (ttf)")
    order = font.getGlyphOrder()
    glyph_set = font.getGlyphSet()
    max_err = font["head"].unitsPerEm / 1000
    glyphs = {}
    for index, name in enumerate(order):
        if index % EVERY == 0:
            check_cancelled()
            progress(index / len(order))
        pen = TTGlyphPen(None)
        # CFF's outer contours run counter-clockwise, TrueType's clockwise
        glyph_set[name].draw(Cu2QuPen(pen, max_err, reverse_direction=True))
        glyphs[name] = pen.glyph()

    for tag in CFF_ONLY:
        if tag in font:
            del font[tag]
    font["loca"] = newTable("loca")
    glyf = font["glyf"] = newTable("glyf")
    glyf.glyphOrder = order
    glyf.glyphs = glyphs
    glyf.compile(font)  # works out each glyph's bounds
    hmtx = font["hmtx"]
    for name, glyph in glyf.glyphs.items():
        hmtx.metrics[name] = (hmtx[name][0], getattr(glyph, "xMin", 0))

    maxp = font["maxp"] = newTable("maxp")
    maxp.tableVersion = 0x00010000
    maxp.numGlyphs = len(order)
    maxp.maxZones = 1
    for field in ("maxPoints", "maxContours", "maxCompositePoints", "maxCompositeContours", "maxTwilightPoints",
                  "maxStorage", "maxFunctionDefs", "maxInstructionDefs", "maxStackElements",
                  "maxSizeOfInstructions", "maxComponentElements", "maxComponentDepth"):
        setattr(maxp, field, 0)
    maxp.recalc(font)

    post = font["post"]
    post.formatType = 2.0  # keep the glyph names
    post.extraNames, post.mapping = [], {}
    post.glyphOrder = order
    try:
        post.compile(font)
    except (OverflowError, struct.error):  # too many names for format 2
        post.formatType = 3.0
    font["head"].glyphDataFormat = 0
    font.sfntVersion = "\x00\x01\x00\x00"
    progress(1.0)
    return font


"""The font tools on real fonts: fontTools' own test fonts (its sdist), EB Garamond (pysubs2's sdist),
and one built here with FontBuilder. Every input flavour x every output, read back with fontTools;
subsetting; outline conversion measured glyph by glyph; the specimen as PNG and PDF; damaged fonts."""

from __future__ import annotations

import struct
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from fontTools.pens.areaPen import AreaPen
from fontTools.pens.boundsPen import BoundsPen
from fontTools.ttLib import TTFont
from PIL import Image
from pydantic import ValidationError

from converters.base import Cancelled, ConversionError
from converters.tools.fonts.headers import MAX_FILE_BYTES, check_streams, read_header
from tests.converters.runtool import run_tool
from tests.samples_cache import sdist_files

FONTTOOLS = "4.68.0"  # the sdist whose Tests/ hold the sample fonts
PYSUBS2 = "1.8.1"  # EB Garamond, as shipped for pysubs2's tests
OUTPUTS = ["woff2", "woff", "ttf", "otf"]
FLAVOR = {"woff2": "woff2", "woff": "woff", "ttf": None, "otf": None}
REAL = {
    "ttf": "*/Tests/ttx/data/TestTTF.ttf",
    "otf": "*/Tests/ttx/data/TestOTF.otf",
    "woff": "*/Tests/ttx/data/TestWOFF.woff",  # CFF outlines inside
    "woff2": "*/Tests/ttx/data/TestWOFF2.woff2",  # TrueType outlines inside
    "libertine": "*/Tests/cffLib/data/LinLibertine_RBI.otf",  # 1,711 glyphs, CFF, GSUB/GPOS
    "lobster": "*/Tests/subset/data/Lobster.subset.otf",
    "nutso": "*/Tests/voltLib/data/Nutso.ttf",  # glyph 0 is not called .notdef
    "arabic": "*/Tests/qu2cu/data/NotoSansArabic-Regular.quadratic.subset.ttf",  # no Latin letters
    "variable_ttf": "*/Tests/ttLib/data/I.ttf",  # Roboto Flex, glyf + gvar
    "variable_otf": "*/Tests/ttLib/data/I.otf",  # CFF2 with blends
}


# --------------------------------------------------------------------------- samples


def fonttools_sample(pattern: str) -> Path:
    return sdist_files("fonttools", FONTTOOLS, pattern)[0]


def garamond() -> Path:
    return sdist_files("pysubs2", PYSUBS2, "*/tests/data/EBGaramond08-Regular.ttf")[0]


def built_font(path: Path, flavor: str | None = None) -> Path:
    """A small TrueType font made with FontBuilder: A-Z a-z 0-9 and some punctuation with quadratic
    curves, a composite (Aacute = A + acute), a ligature (f_i, GSUB liga) and a kern pair (GPOS)."""
    from fontTools.fontBuilder import FontBuilder
    from fontTools.pens.ttGlyphPen import TTGlyphPen

    chars = {c: c for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"}
    chars.update({str(d): name for d, name in zip(range(10), ["zero", "one", "two", "three", "four", "five", "six",
                                                              "seven", "eight", "nine"], strict=True)})
    chars.update({" ": "space", ".": "period", ",": "comma", "!": "exclam", "?": "question", "\u00b4": "acute",
                  "\u00c1": "Aacute"})
    order = [".notdef", *chars.values(), "f_i"]
    glyphs: dict[str, Any] = {}
    for index, name in enumerate(order):
        pen = TTGlyphPen(glyphs)  # components are looked up among the glyphs made so far
        if name == "Aacute":
            pen.addComponent("A", (1, 0, 0, 1, 0, 0))
            pen.addComponent("acute", (1, 0, 0, 1, 60, 120))
        elif name != "space":
            top = 500 + (index * 37) % 300
            pen.moveTo((50, 0))
            pen.lineTo((50, top))
            pen.qCurveTo((50 + index % 7 * 10, top + 120), (250, top + 60 + index % 5 * 12), (450, top))
            pen.lineTo((450, 0))
            pen.closePath()
            if index % 3 == 0:  # a counter, drawn the other way round
                pen.moveTo((150, 100))
                pen.qCurveTo((150, 250), (350, 250), (350, 100))
                pen.closePath()
        glyphs[name] = pen.glyph()
    builder = FontBuilder(1000, isTTF=True)
    builder.setupGlyphOrder(order)
    builder.setupCharacterMap({ord(c): name for c, name in chars.items()})
    builder.setupGlyf(glyphs)
    glyf = builder.font["glyf"]
    builder.setupHorizontalMetrics({name: (500 if name != "space" else 250,
                                           getattr(glyf[name], "xMin", 0)) for name in order})
    builder.setupHorizontalHeader(ascent=900, descent=-200)
    builder.setupNameTable({"familyName": "FileKiln Sample", "styleName": "Regular",
                            "uniqueFontIdentifier": "FileKiln Sample Regular 1.0",
                            "fullName": "FileKiln Sample Regular",
                            "psName": "FileKilnSample-Regular", "version": "Version 1.000",
                            "copyright": "Made for FileKiln's tests"})
    builder.setupOS2(sTypoAscender=900, sTypoDescender=-200, usWinAscent=900, usWinDescent=200)
    builder.setupPost()
    builder.addOpenTypeFeatures("languagesystem DFLT dflt;\nlanguagesystem latn dflt;\n"
                                "feature liga { sub f i by f_i; } liga;\nfeature kern { pos A V -80; } kern;\n")
    if flavor:
        builder.font.flavor = flavor
    builder.save(str(path))
    return path


@pytest.fixture(scope="module")
def fonts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Read-only inputs shared by the module."""
    folder = tmp_path_factory.mktemp("font-samples")
    found = {key: fonttools_sample(pattern) for key, pattern in REAL.items()}
    found["garamond"] = garamond()
    found["built"] = built_font(folder / "built.ttf")
    found["built_woff2"] = built_font(folder / "built-web.woff2", flavor="woff2")
    return found


# --------------------------------------------------------------------------- reading outputs


def opened(path: Path) -> TTFont:
    return TTFont(str(path))


def outlines(font: TTFont) -> str | None:
    return next((tag.strip() for tag in ("glyf", "CFF ", "CFF2") if tag in font), None)


def cmap_ids(font: TTFont) -> dict[int, int]:
    """Code point -> glyph index: what a renderer sees, whatever the glyphs are called."""
    index = {name: n for n, name in enumerate(font.getGlyphOrder())}
    return {cp: index[name] for cp, name in (font.getBestCmap() or {}).items()}


def name_records(font: TTFont) -> set[tuple[int, int, int, int, str]]:
    return {(r.nameID, r.platformID, r.platEncID, r.langID, r.toUnicode()) for r in font["name"].names}


def glyph_shapes(font: TTFont) -> dict[str, tuple[float, tuple[float, ...] | None]]:
    """Each glyph's absolute area and bounds, by index (names may differ between formats)."""
    glyph_set = font.getGlyphSet()
    shapes = {}
    for n, name in enumerate(font.getGlyphOrder()):
        area, bounds = AreaPen(glyph_set), BoundsPen(glyph_set)
        glyph_set[name].draw(area)
        glyph_set[name].draw(bounds)
        shapes[str(n)] = (abs(area.value), bounds.bounds)
    return shapes


def convert(source: Path, out: Path, fmt: str, params: dict[str, Any] | None = None) -> tuple[TTFont, Any]:
    run = run_tool("font-convert", [source], out, params or {}, fmt)
    assert len(run.outputs) == 1 and run.outputs[0].suffix == f".{fmt}"
    assert run.progress[-1] == 1.0 and run.progress == sorted(run.progress), run.progress
    return opened(run.outputs[0]), run


@pytest.fixture(scope="module")
def plain(fonts: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Callable[[str, str], tuple[TTFont, Any]]:
    """``plain(key, fmt)``: the sample ``key`` converted to ``fmt`` with no params, once for the module (the
    format matrix and the outline checks look at the same conversions), opened afresh for each test."""
    folder = tmp_path_factory.mktemp("plain-conversions")
    made: dict[tuple[str, str], tuple[Path, Any]] = {}

    def get(key: str, fmt: str) -> tuple[TTFont, Any]:
        if (key, fmt) not in made:
            _, run = convert(fonts[key], folder / f"{key}-{fmt}", fmt)
            made[key, fmt] = (run.outputs[0], run)
        path, run = made[key, fmt]
        return opened(path), run

    return get


def refused(code: str, action: Callable[[], object]) -> ConversionError:
    with pytest.raises(ConversionError) as info:
        action()
    assert info.value.code == code, info.value.message
    assert "Traceback" not in info.value.message and "File \"" not in info.value.message
    return info.value


# --------------------------------------------------------------------------- the format matrix


MATRIX_INPUTS = ["ttf", "otf", "woff", "woff2", "built", "built_woff2", "garamond", "libertine"]


@pytest.mark.parametrize("fmt", OUTPUTS)
@pytest.mark.parametrize("key", MATRIX_INPUTS)
def test_every_input_flavour_to_every_output(fonts: dict[str, Path], plain: Any, key: str, fmt: str) -> None:
    source = opened(fonts[key])
    out, run = plain(key, fmt)
    assert out.flavor == FLAVOR[fmt]
    expected = {"ttf": "glyf", "otf": "CFF"}.get(fmt, outlines(source))
    assert outlines(out) == expected
    assert out.sfntVersion == ("OTTO" if expected == "CFF" else "\x00\x01\x00\x00")
    assert len(out.getGlyphOrder()) == len(source.getGlyphOrder()) == out["maxp"].numGlyphs
    assert cmap_ids(out) == cmap_ids(source)
    assert name_records(out) == name_records(source)
    assert [out["hmtx"][name][0] for name in out.getGlyphOrder()] == \
        [source["hmtx"][name][0] for name in source.getGlyphOrder()]  # advance widths, glyph by glyph
    changed = outlines(source) != expected
    assert any("outlines" in note for note in run.notes) == changed


def test_truetype_to_cff_keeps_every_glyph_shape(fonts: dict[str, Path], plain: Any) -> None:
    """Quadratic to cubic is exact: areas and bounds as before, up to rounding control points to units."""
    for key in ("garamond", "built"):
        before = glyph_shapes(opened(fonts[key]))
        out, _ = plain(key, "otf")
        after = glyph_shapes(out)
        assert after.keys() == before.keys()
        for glyph, (area, bounds) in before.items():
            new_area, new_bounds = after[glyph]
            assert new_area == pytest.approx(area, rel=0.005, abs=200), (key, glyph)
            assert (new_bounds is None) == (bounds is None), (key, glyph)
            if bounds is not None and new_bounds is not None:
                assert max(abs(a - b) for a, b in zip(bounds, new_bounds, strict=True)) <= 1, (key, glyph)


def test_cff_to_truetype_stays_within_a_thousandth_of_the_em(fonts: dict[str, Path], plain: Any) -> None:
    source = opened(fonts["libertine"])
    before = glyph_shapes(source)
    out, _ = plain("libertine", "ttf")
    after = glyph_shapes(out)
    upem = source["head"].unitsPerEm
    for glyph, (area, bounds) in before.items():
        new_area, new_bounds = after[glyph]
        assert new_area == pytest.approx(area, rel=0.01, abs=upem), glyph
        if bounds is not None and new_bounds is not None:
            assert max(abs(a - b) for a, b in zip(bounds, new_bounds, strict=True)) <= 2 * upem / 1000 + 1, glyph


def test_a_composite_glyph_is_drawn_in_place_in_cff(plain: Any) -> None:
    out, _ = plain("built", "otf")
    glyph_set = out.getGlyphSet()
    pen = AreaPen(glyph_set)
    glyph_set["Aacute"].draw(pen)
    a, acute = AreaPen(glyph_set), AreaPen(glyph_set)
    glyph_set["A"].draw(a)
    glyph_set["acute"].draw(acute)
    assert abs(pen.value) == pytest.approx(abs(a.value) + abs(acute.value), rel=0.01)


def test_a_first_glyph_not_called_notdef_is_renamed_for_cff(fonts: dict[str, Path], tmp_path: Path) -> None:
    source = opened(fonts["nutso"])
    assert source.getGlyphOrder()[0] != ".notdef"
    out, _ = convert(fonts["nutso"], tmp_path, "otf")
    assert out.getGlyphOrder()[0] == ".notdef" and outlines(out) == "CFF"
    assert out.getGlyphOrder()[1:] == source.getGlyphOrder()[1:]
    assert cmap_ids(out) == cmap_ids(source)


def test_variable_fonts_change_container_but_not_outlines(fonts: dict[str, Path], tmp_path: Path) -> None:
    out, _ = convert(fonts["variable_ttf"], tmp_path / "a", "woff2")
    assert {"fvar", "gvar", "glyf"} <= set(out.keys())
    out, _ = convert(fonts["variable_otf"], tmp_path / "b", "woff")
    assert {"fvar", "CFF2"} <= set(out.keys())
    error = refused("unsupported_conversion", lambda: run_tool("font-convert", [fonts["variable_ttf"]],
                                                               tmp_path / "c", {}, "otf"))
    assert "variable" in error.message and "ttf" in error.message
    refused("unsupported_conversion", lambda: run_tool("font-convert", [fonts["variable_otf"]], tmp_path / "d", {},
                                                       "ttf"))
    assert not list((tmp_path / "c").iterdir()) and not list((tmp_path / "d").iterdir())


def test_woff2_is_smaller_than_the_ttf(fonts: dict[str, Path], plain: Any) -> None:
    ttf = fonts["garamond"].stat().st_size
    woff2 = plain("garamond", "woff2")[1].outputs[0].stat().st_size
    woff = plain("garamond", "woff")[1].outputs[0].stat().st_size
    assert woff2 < woff < ttf and woff2 < 0.5 * ttf


def test_woff2_is_the_default_output(fonts: dict[str, Path], tmp_path: Path) -> None:
    run = run_tool("font-convert", [fonts["ttf"]], tmp_path)
    assert [p.suffix for p in run.outputs] == [".woff2"] and opened(run.outputs[0]).flavor == "woff2"


# --------------------------------------------------------------------------- subsetting


def test_a_subset_keeps_exactly_the_asked_characters(fonts: dict[str, Path], tmp_path: Path) -> None:
    source = opened(fonts["built"])
    for fmt in OUTPUTS:
        out, run = convert(fonts["built"], tmp_path / fmt, fmt, {"subset": "Hello"})
        assert set(out.getBestCmap()) == {ord(c) for c in "Helo"}
        assert set(out.getGlyphOrder()) == {".notdef", "H", "e", "l", "o"}
        assert name_records(out) == name_records(source)
        assert out.flavor == FLAVOR[fmt]
        assert any("kept 4 characters in 5 glyphs" in note for note in run.notes)


def test_a_subset_of_a_real_font(fonts: dict[str, Path], tmp_path: Path) -> None:
    source = opened(fonts["garamond"])
    for fmt in ("woff2", "otf"):
        out, _ = convert(fonts["garamond"], tmp_path / fmt, fmt, {"subset": "Hello", "layoutFeatures": []})
        assert set(out.getBestCmap()) == {ord(c) for c in "Helo"}
        cmap = source.getBestCmap()
        assert set(out.getGlyphOrder()) == {".notdef", *(cmap[ord(c)] for c in "Helo")}
        assert name_records(out) == name_records(source)
        assert "GSUB" not in out or not out["GSUB"].table.FeatureList.FeatureRecord
    out, _ = convert(fonts["garamond"], tmp_path / "all", "woff2", {"subset": "Hello"})  # features kept:
    assert set(out.getBestCmap()) == {ord(c) for c in "Helo"}  # the same characters,
    assert len(out.getGlyphOrder()) >= 5  # and the alternates the features reach (small caps ...)


def test_a_ligature_comes_along_unless_its_feature_is_dropped(fonts: dict[str, Path], tmp_path: Path) -> None:
    out, _ = convert(fonts["built"], tmp_path / "all", "ttf", {"subset": "fi"})
    assert "f_i" in out.getGlyphOrder()
    assert {r.FeatureTag for r in out["GSUB"].table.FeatureList.FeatureRecord} == {"liga"}
    out, _ = convert(fonts["built"], tmp_path / "kern", "ttf", {"subset": "fiAV", "layoutFeatures": ["kern"]})
    assert "f_i" not in out.getGlyphOrder()
    assert "GSUB" not in out or not out["GSUB"].table.FeatureList.FeatureRecord
    assert {r.FeatureTag for r in out["GPOS"].table.FeatureList.FeatureRecord} == {"kern"}


def test_layout_features_alone_keep_every_glyph(fonts: dict[str, Path], tmp_path: Path) -> None:
    source = opened(fonts["built"])
    out, _ = convert(fonts["built"], tmp_path, "woff2", {"layoutFeatures": ["kern"]})
    assert out.getGlyphOrder() == source.getGlyphOrder() and cmap_ids(out) == cmap_ids(source)
    assert "GSUB" not in out or not out["GSUB"].table.FeatureList.FeatureRecord


def test_unicode_ranges_and_text_together(fonts: dict[str, Path], tmp_path: Path) -> None:
    out, _ = convert(fonts["built"], tmp_path / "a", "woff", {"unicodes": "U+0041-005A"})
    assert set(out.getBestCmap()) == set(range(0x41, 0x5B))
    out, _ = convert(fonts["built"], tmp_path / "b", "woff", {"unicodes": "u+30-39, 0021", "subset": "xyz"})
    assert set(out.getBestCmap()) == {*range(0x30, 0x3A), 0x21, *map(ord, "xyz")}


def test_characters_the_font_lacks_are_named_in_a_note(fonts: dict[str, Path], tmp_path: Path) -> None:
    out, run = convert(fonts["built"], tmp_path / "a", "woff2", {"subset": "Hé!"})
    assert set(out.getBestCmap()) == {ord("H"), ord("!")}
    assert any("U+00E9" in note for note in run.notes)
    refused("invalid_params", lambda: run_tool("font-convert", [fonts["built"]], tmp_path / "b", {"subset": "жш"}))
    assert not list((tmp_path / "b").iterdir())


@pytest.mark.parametrize("params", [
    {"unicodes": "U+110000"}, {"unicodes": "U+0050-0040"}, {"unicodes": "A-Z"}, {"unicodes": ""},
    {"layoutFeatures": ["toolong"]}, {"subset": ""}, {"subset": "x" * 10_001}, {"sizeLimit": 1},
])
def test_bad_params_are_refused(fonts: dict[str, Path], tmp_path: Path, params: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        run_tool("font-convert", [fonts["built"]], tmp_path, params)


# --------------------------------------------------------------------------- the specimen


def ink(image: Image.Image) -> float:
    """The share of pixels that are not (near) white."""
    grey = image.convert("L")
    histogram = grey.histogram()
    return sum(histogram[:200]) / (grey.width * grey.height)


def preview(source: Path, out: Path, fmt: str, params: dict[str, Any] | None = None) -> Path:
    run = run_tool("font-preview", [source], out, params or {}, fmt)
    assert len(run.outputs) == 1 and run.outputs[0].suffix == f".{fmt}"
    assert run.progress[-1] == 1.0 and run.progress == sorted(run.progress)
    return run.outputs[0]


def page_of(pdf: Path) -> tuple[Any, str, list[tuple[Any, ...]]]:
    import pymupdf

    with pymupdf.open(pdf) as doc:
        assert doc.page_count == 1
        page = doc[0]
        fonts = doc.get_page_fonts(0)
        embedded = [font for font in fonts if doc.extract_font(font[0])[3]]
        return page.rect, page.get_text(), [(*font, bool(font in embedded)) for font in fonts]


@pytest.mark.parametrize("key", ["garamond", "libertine", "woff", "woff2", "built_woff2", "arabic", "lobster"])
def test_the_specimen_as_pdf_and_png(fonts: dict[str, Path], tmp_path: Path, key: str) -> None:
    pdf = preview(fonts[key], tmp_path / "pdf", "pdf")
    rect, text, page_fonts = page_of(pdf)
    family = opened(fonts[key])["name"].getBestFamilyName()
    own = [f for f in page_fonts if family.replace(" ", "") in f[3].replace(" ", "")]
    assert own and all(f[-1] for f in own), page_fonts  # the font itself, embedded
    assert not [f for f in page_fonts if "Noto" in f[3] and "Noto" not in family or "Droid" in f[3]], \
        "a fallback font stood in for characters the font lacks"
    assert family in text or opened(fonts[key])["name"].getBestFullName() in text
    png = preview(fonts[key], tmp_path / "png", "png")
    with Image.open(png) as image:
        assert image.format == "PNG"
        assert abs(image.width - rect.width * 150 / 72) <= 1 and abs(image.height - rect.height * 150 / 72) <= 1
        assert 0.003 < ink(image) < 0.6


def test_the_specimen_shows_alphabet_digits_and_the_pangram_at_every_size(fonts: dict[str, Path],
                                                                         tmp_path: Path) -> None:
    _, text, _ = page_of(preview(fonts["garamond"], tmp_path, "pdf"))
    for line in ("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz", "0123456789", "Glyphs: 2,213",
                 "Family: EB Garamond", "Version: 0.016"):
        assert line in text, line
    assert text.replace("\n", " ").count("The quick brown fox") == 5
    for size in (12, 18, 24, 36, 48):
        assert f"{size} pt" in text


def test_a_font_without_latin_shows_its_own_characters(fonts: dict[str, Path], tmp_path: Path) -> None:
    _, text, _ = page_of(preview(fonts["arabic"], tmp_path, "pdf"))
    assert "No Latin letters" in text
    assert "\u0633" in text and "\u062a" in text  # seen and teh, the two characters it maps
    assert "quick brown" not in text


def test_custom_text_and_dpi(fonts: dict[str, Path], tmp_path: Path) -> None:
    _, text, _ = page_of(preview(fonts["built"], tmp_path / "pdf", "pdf", {"text": "Hamburgefonstiv"}))
    assert text.count("Hamburgefonstiv") == 5 and "quick brown" not in text
    small = preview(fonts["built"], tmp_path / "72", "png", {"dpi": 72})
    large = preview(fonts["built"], tmp_path / "300", "png", {"dpi": 300})
    with Image.open(small) as a, Image.open(large) as b:
        assert a.width == 595 and abs(b.width - 595 * 300 / 72) <= 1


@pytest.mark.parametrize("params", [{"dpi": 71}, {"dpi": 301}, {"text": "x" * 501}, {"text": ""}])
def test_bad_preview_params_are_refused(fonts: dict[str, Path], tmp_path: Path, params: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        run_tool("font-preview", [fonts["built"]], tmp_path, params)


# --------------------------------------------------------------------------- damaged and hostile fonts


def table_offsets(data: bytes) -> dict[str, tuple[int, int]]:
    """tag -> (offset, length) from an sfnt's table directory."""
    count = struct.unpack(">H", data[4:6])[0]
    out = {}
    for n in range(count):
        tag, _, offset, length = struct.unpack(">4sIII", data[12 + 16 * n:28 + 16 * n])
        out[tag.decode()] = (offset, length)
    return out


def patched(data: bytes, tag: str, at: int, fmt: str, value: int) -> bytes:
    """``data`` with a value written at ``at`` bytes into table ``tag``."""
    out = bytearray(data)
    struct.pack_into(fmt, out, table_offsets(data)[tag][0] + at, value)
    return bytes(out)


def sfnt_tables(path: Path) -> dict[str, bytes]:
    font = TTFont(str(path))
    return {tag: font.reader[tag] for tag in font.reader.keys()}


def woff_bytes(tables: dict[str, bytes], flavor: bytes = b"\x00\x01\x00\x00",
               bomb: tuple[str, int, int] | None = None) -> bytes:
    """A WOFF of ``tables``. ``bomb=(tag, declared, inflated)`` adds a table that declares ``declared`` bytes and
    whose zlib data inflates to ``inflated`` zeros."""
    tables = dict(tables)
    declared = dict.fromkeys(tables, 0)
    if bomb is not None:
        tables[bomb[0]] = b"\x00" * bomb[2]
        declared[bomb[0]] = bomb[1]
    tags = sorted(tables)
    start = 44 + 20 * len(tags)
    directory, body = b"", b""
    for tag in tags:
        data = tables[tag]
        length = declared[tag] or len(data)
        packed = zlib.compress(data, 9)
        if len(packed) >= length:
            packed = data
        directory += struct.pack(">4sIIII", tag.encode(), start + len(body), len(packed), length, 0)
        body += packed + b"\x00" * (-len(packed) % 4)
    sfnt_size = 12 + 16 * len(tags) + sum((declared[t] or len(d)) + (-(declared[t] or len(d)) % 4)
                                          for t, d in tables.items())
    header = struct.pack(">4s4sIHHIHHIIIII", b"wOFF", flavor, start + len(body), len(tags), 0, sfnt_size, 1, 0,
                         0, 0, 0, 0, 0)
    return header + directory + body


def base128(value: int) -> bytes:
    out = [value & 0x7F]
    value >>= 7
    while value:
        out.append(0x80 | (value & 0x7F))
        value >>= 7
    return bytes(reversed(out))


def woff2_bytes(tables: dict[str, bytes], flavor: bytes = b"\x00\x01\x00\x00", extra: int = 0,
                sfnt_size: int | None = None) -> bytes:
    """A WOFF2 of ``tables``, none transformed; ``extra`` zero bytes more in the Brotli stream than the
    tables declare; ``sfnt_size`` to lie about the size of the font once unwrapped."""
    import brotli
    from fontTools.ttLib.woff2 import woff2KnownTags

    tags = sorted(tables, key=lambda t: (t == "loca", t))  # glyf before loca
    directory, stream = b"", b""
    for tag in tags:
        known = woff2KnownTags.index(tag) if tag in woff2KnownTags else 63
        flags = known | (0xC0 if tag in ("glyf", "loca") else 0)  # version 3 for glyf / loca: not transformed
        directory += bytes([flags]) + (tag.encode() if known == 63 else b"") + base128(len(tables[tag]))
        stream += tables[tag]
    packed = brotli.compress(stream + b"\x00" * extra, quality=1)
    real_size = 12 + 16 * len(tags) + sum(len(d) + (-len(d) % 4) for d in tables.values())
    length = 48 + len(directory) + len(packed)
    header = struct.pack(">4s4sIHHIIHHIIIII", b"wOF2", flavor, length, len(tags), 0,
                         real_size if sfnt_size is None else sfnt_size, len(packed), 1, 0, 0, 0, 0, 0, 0)
    return header + directory + packed


def test_the_hand_made_wrappers_are_valid_fonts(fonts: dict[str, Path], tmp_path: Path) -> None:
    """The builders the hostile fonts below come from make fonts fontTools and the tools read."""
    tables = sfnt_tables(fonts["ttf"])
    for name, data in (("plain.woff", woff_bytes(tables)), ("plain.woff2", woff2_bytes(tables))):
        (tmp_path / name).write_bytes(data)
        out, _ = convert(tmp_path / name, tmp_path / f"out-{name}", "ttf")
        assert cmap_ids(out) == cmap_ids(opened(fonts["ttf"]))


def hostile(tmp_path: Path, name: str, data: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def check_file(path: Path) -> None:
    with open(path, "rb") as f:
        header = read_header(f, path.stat().st_size)
        check_streams(f, header, lambda: None)


def test_a_woff2_claiming_4_gb_is_refused_from_its_header(fonts: dict[str, Path], tmp_path: Path) -> None:
    path = hostile(tmp_path, "huge.woff2", woff2_bytes(sfnt_tables(fonts["ttf"]), sfnt_size=0xFFFFFFFF))
    with open(path, "rb") as f:
        error = refused("input_too_large", lambda: read_header(f, path.stat().st_size))
    assert "4,096 MB" in error.message
    refused("input_too_large", lambda: run_tool("font-convert", [path], tmp_path / "out"))
    assert not list((tmp_path / "out").iterdir())


def test_compression_bombs_are_stopped_past_their_declared_size(fonts: dict[str, Path], tmp_path: Path) -> None:
    tables = sfnt_tables(fonts["ttf"])
    brotli_bomb = hostile(tmp_path, "bomb.woff2", woff2_bytes(tables, extra=64 * 1024**2))
    zlib_bomb = hostile(tmp_path, "bomb.woff", woff_bytes(tables, bomb=("zzzz", 256 * 1024, 64 * 1024**2)))
    for path in (brotli_bomb, zlib_bomb):
        assert path.stat().st_size < 200_000
        error = refused("input_too_large", lambda p=path: check_file(p))  # type: ignore[misc]
        assert "decompression bomb" in error.message
        for tool, fmt in (("font-convert", "ttf"), ("font-preview", "png")):
            refused("input_too_large", lambda p=path, t=tool, f=fmt: run_tool(  # type: ignore[misc]
                t, [p], tmp_path / f"out-{p.name}-{t}", {}, f))
            assert not list((tmp_path / f"out-{path.name}-{tool}").iterdir())


def test_damaged_fonts_fail_with_damaged_input(fonts: dict[str, Path], tmp_path: Path) -> None:
    good = fonts["ttf"].read_bytes()
    glyf_at, glyf_length = table_offsets(garamond().read_bytes())["glyf"]
    scrambled = bytearray(garamond().read_bytes())
    scrambled[glyf_at:glyf_at + glyf_length] = bytes((n * 151 + 7) % 256 for n in range(glyf_length))
    cases = {
        "truncated.ttf": good[: len(good) // 2],
        "outside.ttf": _table_moved(good, "cmap", 10**6),
        "numglyphs.ttf": patched(good, "maxp", 4, ">H", 65535),
        "loca.ttf": patched(good, "head", 50, ">h", 7),
        "scrambled-glyf.ttf": bytes(scrambled),
        "numglyphs.woff": woff_bytes({**sfnt_tables(fonts["ttf"]),
                                      "maxp": patched(good, "maxp", 4, ">H", 65535)[
                                          slice(*_span(good, "maxp"))]}),
        "numglyphs.woff2": woff2_bytes({**sfnt_tables(fonts["ttf"]),
                                        "maxp": patched(good, "maxp", 4, ">H", 65535)[slice(*_span(good, "maxp"))]}),
        "random.woff2": b"wOF2" + bytes((n * 7919 + 13) % 256 for n in range(3000)),
    }
    for name, data in cases.items():
        path = hostile(tmp_path, name, data)
        for tool, fmt in (("font-convert", "otf"), ("font-convert", "woff2"), ("font-preview", "png")):
            out = tmp_path / f"out-{name}-{tool}-{fmt}"
            error = refused("damaged_input" if name != "random.woff2" else error_code_of(path),
                            lambda p=path, t=tool, f=fmt, o=out: run_tool(t, [p], o, {}, f))  # type: ignore[misc]
            if name.startswith("numglyphs"):
                assert "65,535 glyphs" in error.message, error.message
            assert not list(out.iterdir()), name


def error_code_of(path: Path) -> str:
    """What random bytes behind a WOFF2 signature are refused as: their header's numbers decide."""
    try:
        check_file(path)
    except ConversionError as exc:
        assert exc.code in ("damaged_input", "input_too_large")
        return exc.code
    raise AssertionError("random bytes passed the WOFF2 header checks")


def _span(data: bytes, tag: str) -> tuple[int, int]:
    offset, length = table_offsets(data)[tag]
    return offset, offset + length


def _table_moved(data: bytes, tag: str, offset: int) -> bytes:
    """``data`` with ``tag``'s directory entry pointing at ``offset``, far past the end of the file."""
    out = bytearray(data)
    count = struct.unpack(">H", data[4:6])[0]
    for n in range(count):
        if data[12 + 16 * n:16 + 16 * n] == tag.encode():
            struct.pack_into(">I", out, 12 + 16 * n + 8, offset)
    return bytes(out)


def test_a_font_pymupdf_cannot_load_fails_the_preview(fonts: dict[str, Path], tmp_path: Path) -> None:
    path = hostile(tmp_path, "upem0.ttf", patched(fonts["ttf"].read_bytes(), "head", 18, ">H", 0))
    error = refused("damaged_input", lambda: run_tool("font-preview", [path], tmp_path / "out", {}, "png"))
    assert "PyMuPDF cannot load" in error.message
    assert not list((tmp_path / "out").iterdir())


def test_files_over_the_limit_are_refused(tmp_path: Path, fonts: dict[str, Path]) -> None:
    path = tmp_path / "big.ttf"
    with open(path, "wb") as f:
        f.write(fonts["ttf"].read_bytes())
        f.truncate(MAX_FILE_BYTES + 1)  # sparse: nothing written past the real font
    refused("input_too_large", lambda: run_tool("font-convert", [path], tmp_path / "out"))


def test_cancelling_stops_without_an_output(fonts: dict[str, Path], tmp_path: Path) -> None:
    calls = iter(range(1000))
    with pytest.raises(Cancelled):  # let the loading through, then cancel part way through the glyphs
        run_tool("font-convert", [fonts["libertine"]], tmp_path, {}, "ttf", cancelled=lambda: next(calls) > 3)
    assert not [p for p in tmp_path.iterdir()]


def test_the_written_font_is_read_back_before_it_is_handed_out(fonts: dict[str, Path], tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    from converters.tools.fonts import convert as module

    monkeypatch.setattr(module, "save_font", lambda *args: b"\x00\x01\x00\x00 not a font")
    refused("engine_failed", lambda: run_tool("font-convert", [fonts["ttf"]], tmp_path, {}, "woff2"))
    assert not list(tmp_path.iterdir())


def test_woff_metadata_goes_along_to_woff2_and_is_noted_when_dropped(fonts: dict[str, Path],
                                                                     tmp_path: Path) -> None:
    from fontTools.ttLib.sfnt import WOFFFlavorData

    font = TTFont(str(fonts["built"]))
    font.flavor, font.flavorData = "woff", WOFFFlavorData()
    font.flavorData.metaData = b'<?xml version="1.0"?><metadata version="1.0"><vendor name="FileKiln"/></metadata>'
    path = tmp_path / "meta.woff"
    font.save(str(path))
    out, run = convert(path, tmp_path / "woff2", "woff2")
    assert out.flavorData.metaData == font.flavorData.metaData and not run.notes
    out, run = convert(path, tmp_path / "ttf", "ttf")
    assert out.flavorData is None and any("metadata" in note for note in run.notes)


def test_without_brotli_only_woff2_fails(fonts: dict[str, Path], tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    from converters.base import Engine
    from converters.tools.fonts import headers

    monkeypatch.setattr(headers, "BROTLI", Engine(name="Brotli", module="brotli_is_not_installed_here"))
    refused("engine_missing", lambda: run_tool("font-convert", [fonts["ttf"]], tmp_path / "a", {}, "woff2"))
    refused("engine_missing", lambda: run_tool("font-convert", [fonts["woff2"]], tmp_path / "b", {}, "ttf"))
    out, _ = convert(fonts["woff"], tmp_path / "c", "ttf")
    assert out.flavor is None

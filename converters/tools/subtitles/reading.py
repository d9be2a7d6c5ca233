"""Reading subtitle files for both subtitle tools: limits, text encodings, and pysubs2 with its gaps filled.

Everything a subtitle file holds is read here into a ``pysubs2.SSAFile`` (SubStation's model: events with
start and end in milliseconds and text with ASS override tags, plus styles). Before pysubs2 sees a file:

* its size and a cheap count of its events are checked (``input_too_large``), so a file of a million
  tiny cues is refused before it is parsed;
* its bytes become text: UTF-8 (with or without BOM), UTF-16/32 with a BOM, else a guess (see
  :func:`decode_text`), or the encoding the user names;
* WebVTT loses what pysubs2 would take for cue text (NOTE, STYLE and REGION blocks, cue identifiers,
  inline timestamps), and its character references are resolved after parsing;
* TTML is parsed with FileKiln's entity-refusing XML reader, its time expressions (ticks, frames, ``dur``)
  are turned into ones pysubs2 reads, and nested ``div``\\ s are flattened to absolute times;
* MicroDVD's ``{1}{1}23.976`` frame-rate declaration is taken from the file unless ``fps`` is given.

After parsing, times are shifted and clamped to 0 .. 99:59:59.999. pysubs2 is imported inside functions.
"""

from __future__ import annotations

import codecs
import html
import math
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic import Field, field_validator

from converters.base import CamelParams, ConversionError, Engine, InputFile

if TYPE_CHECKING:
    from xml.etree.ElementTree import Element

    from pysubs2 import SSAFile

PYSUBS2 = Engine(
    name="pysubs2",
    module="pysubs2",
    distribution="pysubs2",
    install_hint="Install it with `pip install pysubs2`.",
)

SUBTITLE_FORMATS = ("srt", "vtt", "ass", "ssa", "sub", "ttml")
LABELS = {"srt": "SubRip (SRT)", "vtt": "WebVTT", "ass": "Advanced SubStation (ASS)", "ssa": "SubStation (SSA)",
          "sub": "MicroDVD", "ttml": "TTML"}
PYSUBS2_FORMATS = {"srt": "srt", "vtt": "vtt", "ass": "ass", "ssa": "ssa", "sub": "microdvd", "ttml": "ttml"}

MAX_SUBTITLE_BYTES = 20 * 1000**2  # 20 MB: a feature film's SRT is ~100 KB, an ASS with embedded fonts a few MB
MAX_EVENTS = 200_000  # a three-hour film has ~2,000 cues; karaoke ASS files a few tens of thousands
MAX_TIME_MS = 100 * 3600 * 1000 - 1  # 99:59:59.999, the largest time SRT can write
DEFAULT_FPS = 23.976

# The code pages legacy subtitle files come in; cp1252 (Western) is by far the most common (see guess_encoding).
LEGACY_ENCODINGS = ("cp1252", "cp1250", "cp1251", "cp1253", "cp1254", "cp1255", "cp1256", "cp1257", "cp1258",
                    "cp874", "koi8_r", "koi8_u", "gb18030", "big5", "shift_jis", "euc_jp", "euc_kr")
FALLBACK_ENCODING = "cp1252"

_BOMS = (  # longest first: UTF-32-LE's BOM starts with UTF-16-LE's
    (codecs.BOM_UTF32_LE, "utf-32"), (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"), (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16"),
)
_XML_DECLARATION = re.compile(r"\A\s*<\?xml[^>]*\?>")
_XML_ENCODING = re.compile(r"""\A<\?xml[^>]*?\bencoding\s*=\s*["']([A-Za-z0-9._-]+)["']""")
_MICRODVD_FPS = re.compile(r"^[ \t]*\{ *1 *\} *\{ *1 *\} *(\d+(?:[.,]\d+)?)[ \t]*$", re.MULTILINE)
_TTML_P = re.compile(rb"<(?:[A-Za-z_][\w.-]*:)?p[\s>/]")
_VTT_INLINE_TIME = re.compile(r"<\d+(?::\d+)*(?:\.\d+)?>")
_VTT_BLOCK_KEYWORDS = re.compile(r"\A(?:NOTE|STYLE|REGION)(?:[ \t]|$)")


def valid_encoding(value: str) -> str:
    """``auto`` or the name of a Python text codec that can carry subtitle text; returns the canonical name."""
    if value.strip().lower() == "auto":
        return "auto"
    try:
        info = codecs.lookup(value.strip())
    except LookupError:
        raise ValueError(f"unknown text encoding {value!r}") from None
    probe = "12 00:00:01,000 --> abc\n"
    try:
        usable = getattr(info, "_is_text_encoding", True) and probe.encode(info.name).decode(info.name) == probe
    except (UnicodeError, LookupError, TypeError, ValueError):
        usable = False
    if not usable:
        raise ValueError(f"{value!r} is not a text encoding subtitles can be written in")
    return info.name


class SubtitleReadParams(CamelParams):
    """How a subtitle file is read: what both subtitle tools share."""

    encoding: str = Field(
        default="auto", min_length=1, max_length=40,
        description="Text encoding of the subtitle file: auto (UTF-8/UTF-16 by BOM, else a guess such as "
                    "cp1252 or cp1251), or a codec name (cp1252, iso-8859-2, cp1251, big5 ...).",
    )
    fps: float = Field(
        default=DEFAULT_FPS, gt=0, le=240,
        description="Frame rate of MicroDVD (.sub) files, whose times are frame numbers; used only for them. "
                    "Reading: a rate the file declares ({1}{1}25) is used unless this is given.",
    )
    shift: float = Field(
        default=0.0, ge=-360000, le=360000,
        description="Move every subtitle by this many seconds (negative: earlier). Cues that end before 0 "
                    "are dropped.",
    )

    @field_validator("encoding")
    @classmethod
    def _known_encoding(cls, value: str) -> str:
        return valid_encoding(value)


@dataclass
class Loaded:
    """A parsed subtitle file and what reading it decided."""

    subs: SSAFile
    fmt: str
    encoding: str  # the codec the text was decoded with
    guessed: bool  # the encoding was guessed, not known from a BOM, UTF-8 validity or the user
    fps: float  # the frame rate used for MicroDVD times (the input's, for a MicroDVD input)
    notes: list[str] = field(default_factory=list)


# --------------------------------------------------------------------------- limits


def check_limits(source: InputFile) -> None:
    """Refuse (``input_too_large``) a subtitle file over the size limit or with too many events.

    Cheap enough for job creation: one read and a few byte counts, no parsing.
    """
    size = source.path.stat().st_size
    if size > MAX_SUBTITLE_BYTES:
        raise ConversionError("input_too_large", f"{source.name} is {size / 1e6:.1f} MB; subtitle files are "
                                                 f"limited to {MAX_SUBTITLE_BYTES / 1e6:.0f} MB.")
    count = estimate_events(source.path.read_bytes(), source.format)
    if count > MAX_EVENTS:
        raise ConversionError("input_too_large", f"{source.name} has about {count} subtitles; the limit is "
                                                 f"{MAX_EVENTS}.")


def estimate_events(data: bytes, fmt: str) -> int:
    """An upper estimate of the events in a subtitle file, from markers every format writes per event."""
    for bom, name in _BOMS:
        if data.startswith(bom) and name != "utf-8-sig":
            data = data.decode(name, errors="replace").encode("utf-8", errors="replace")
            break
    if fmt in ("srt", "vtt"):
        return data.count(b"-->")
    if fmt in ("ass", "ssa"):
        lowered = data.lower()
        return lowered.count(b"dialogue:") + lowered.count(b"comment:")
    if fmt == "ttml":
        return len(_TTML_P.findall(data))
    return max(data.count(b"\n"), data.count(b"\r")) + 1  # MicroDVD: one event per line (LF, CRLF or CR)


# --------------------------------------------------------------------------- encodings


def decode_text(data: bytes, encoding: str) -> tuple[str, str, bool]:
    """The file's text, the codec used and whether it was a guess.

    ``encoding`` ``"auto"``: a BOM decides (UTF-8, UTF-16, UTF-32); else text that is valid UTF-8 is
    UTF-8; else a guess among the legacy code pages (:func:`guess_encoding`), decoded as Latin-1 if even
    that fails. A named encoding that does not fit the bytes is ``invalid_params``.
    A named encoding that does not fit the bytes is ``invalid_params``.
    """
    if encoding != "auto":
        try:
            text = data.decode(encoding)
        except (UnicodeError, ValueError) as exc:
            where = f" (byte {exc.start})" if isinstance(exc, UnicodeDecodeError) else ""
            raise ConversionError("invalid_params", f"The file is not valid {encoding} text{where}; choose "
                                                    "another encoding, or auto.") from None
        return text.removeprefix("\ufeff"), encoding, False
    for bom, name in _BOMS:
        if data.startswith(bom):
            try:
                return data.decode(name).removeprefix("\ufeff"), name, False
            except UnicodeDecodeError as exc:
                raise ConversionError("damaged_input", f"The file starts with a {name.upper()} byte order mark "
                                                       f"but is not {name.upper()} text (byte {exc.start}).") from None
    try:
        return data.decode("utf-8"), "utf-8", False
    except UnicodeDecodeError:
        pass
    name = guess_encoding(data)
    try:
        return data.decode(name), name, True
    except UnicodeDecodeError:
        return data.decode("latin-1"), "latin-1", True


def _xml_decodes_itself(data: bytes) -> bool:
    """Whether an XML parser can decode ``data`` on its own: a BOM, an encoding declaration, or UTF-8."""
    if any(data.startswith(bom) for bom, _ in _BOMS) or _XML_ENCODING.match(data[:200].decode("latin-1")):
        return True
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def guess_encoding(data: bytes) -> str:
    """The likeliest legacy encoding of ``data`` (text that is not UTF-8).

    ``charset_normalizer`` ranks the candidates; on subtitle-sized Latin-script text it often cannot tell
    the Windows Latin code pages apart (French cp1252 comes out as cp1257, Portuguese as cp1250), so a
    plausible cp1252 reading (see :func:`plausible_western`) wins over another Latin code page whenever
    cp1252 was among its candidates. Cyrillic, Greek, Hebrew, Arabic, Thai and CJK guesses stand.
    """
    try:
        western: str | None = data.decode(FALLBACK_ENCODING)
    except UnicodeDecodeError:
        western = None
    plausible = western is not None and plausible_western(western)
    try:
        from charset_normalizer import from_bytes
    except ImportError:
        return FALLBACK_ENCODING
    matches = list(from_bytes(data, cp_isolation=list(LEGACY_ENCODINGS)))
    if not matches:
        return FALLBACK_ENCODING
    best = min(matches, key=lambda m: (m.chaos, -m.coherence))
    best_name = str(codecs.lookup(best.encoding).name)
    if plausible and (best_name in _LATIN_CODEPAGES or FALLBACK_ENCODING in best.could_be_from_charset) and any(
            FALLBACK_ENCODING in (m.encoding, *m.could_be_from_charset) for m in matches):
        return FALLBACK_ENCODING
    return best_name


_LATIN_CODEPAGES = frozenset({"cp1250", "cp1252", "cp1254", "cp1257", "cp1258"})
# Letters a cp1252 reading shows for other code pages' common letters: Turkish ı İ ş Ş ğ Ğ (cp1254), and
# Cyrillic or Greek read as cp1252. Icelandic is the price: it is rarely in a legacy subtitle file.
_NOT_WESTERN = "ýÝþÞðÐ"
_CP1252_HIGH = bytes(range(0x80, 0x100)).decode("cp1252", errors="ignore")
_LETTERS = "A-Za-z" + re.escape("".join(ch for ch in _CP1252_HIGH if ch.isalpha()))
_SYMBOLS = re.escape("".join(ch for ch in _CP1252_HIGH if not ch.isalpha() and ch not in "’‘·–\xa0"))
# a letter, a non-ASCII character that is no letter (nor an apostrophe, middle dot or dash), a letter
_SYMBOL_IN_WORD = re.compile(f"[{_LETTERS}][{_SYMBOLS}][{_LETTERS}]")


def plausible_western(text: str) -> bool:
    """Whether ``text`` (a cp1252 reading) looks like Western European text.

    Not when it has letters of :data:`_NOT_WESTERN`, or symbols inside words (Polish ż ł ą read as
    cp1252 give ``Za¿ó³`` ``gêœl¹``), or ``ø`` beside ``í``/``ì``/``ù``/``è``/``ò`` (Czech ř ě ů č ň).
    """
    if any(ch in text for ch in _NOT_WESTERN):
        return False
    if ("ø" in text or "Ø" in text) and any(ch in text for ch in "íìùèò"):
        return False
    return _SYMBOL_IN_WORD.search(text) is None


# --------------------------------------------------------------------------- format fixes before pysubs2


def clean_vtt(text: str) -> str:
    """WebVTT without what pysubs2 would read as cue text: NOTE/STYLE/REGION blocks, cue identifiers, and the
    inline ``<00:00:01.000>`` timestamps of karaoke-style cues (two on a line look like a timing line)."""
    out: list[str] = []
    lines = text.split("\n")
    skipping = False
    for index, line in enumerate(lines):
        starts_block = index == 0 or not lines[index - 1].strip()
        if starts_block and _VTT_BLOCK_KEYWORDS.match(line) and "-->" not in line:
            skipping = True
        if not line.strip():
            skipping = False
            out.append(line)
            continue
        if skipping:
            continue
        next_is_timing = index + 1 < len(lines) and "-->" in lines[index + 1]
        if starts_block and next_is_timing and "-->" not in line:
            continue  # a cue identifier
        out.append(line if "-->" in line else _VTT_INLINE_TIME.sub("", line))
    return "\n".join(out)


_SRT_COLON_MS = re.compile(r"\b(\d{1,2}:\d{2}:\d{2}):(\d{3})\b")


def drop_broken_cues(text: str, fmt: str) -> tuple[str, int]:
    """SRT or WebVTT without the cues whose timing line cannot be read, and how many went.

    pysubs2 takes a line it cannot read as a timing line for text of the cue before, so a file with one
    bad timestamp (``00:00:11:890``) would show that line and the next cue inside the previous one. SRT's
    common slip, a colon before the milliseconds, is repaired; any other unreadable timing line loses its
    cue (the line and the text under it; a cue number above it is removed by pysubs2).
    """
    from pysubs2.formats.subrip import SubripFormat
    from pysubs2.formats.webvtt import WebVTTFormat

    pattern = WebVTTFormat.TIMESTAMP if fmt == "vtt" else SubripFormat.TIMESTAMP
    out: list[str] = []
    dropped = 0
    skipping = False
    for line in text.split("\n"):
        if "-->" in line:
            if fmt == "srt":
                line = _SRT_COLON_MS.sub(r"\1,\2", line)
            skipping = len(pattern.findall(line)) != 2
            dropped += skipping
        elif not line.strip():
            skipping = False
        if not skipping:
            out.append(line)
    return "\n".join(out), dropped


def _ms(seconds: float, expr: str) -> int:
    if not math.isfinite(seconds):
        raise ConversionError("damaged_input", f"The TTML time {expr[:40]!r} is out of any range.")
    return round(seconds * 1000)


def _clock(expr: str, frame_rate: float, sub_frames: float, tick_rate: float) -> int:
    """A TTML time expression in milliseconds (clock time with frames, or offset time in h/m/s/ms/f/t)."""
    expr = expr.strip()
    m = re.fullmatch(r"(\d+(?:\.\d+)?)(h|m|s|ms|f|t)", expr)
    if m:
        value, unit = float(m.group(1)), m.group(2)
        seconds = {"h": value * 3600, "m": value * 60, "s": value, "ms": value / 1000,
                   "f": value / frame_rate, "t": value / tick_rate}[unit]
        return _ms(seconds, expr)
    # clock time; hours and minutes may be left out ("19.764"), as Apple's lyrics TTML does and pysubs2 allows
    m = re.fullmatch(r"(?:(?:(\d+):)?(\d{1,2}):)?(\d{1,2}(?:\.\d+)?)(?::(\d+)(?:\.(\d+))?)?", expr)
    if m and (m.group(4) is None or m.group(2) is not None):
        seconds = int(m.group(1) or 0) * 3600 + int(m.group(2) or 0) * 60 + float(m.group(3))
        if m.group(4):
            seconds += (int(m.group(4)) + (int(m.group(5)) / sub_frames if m.group(5) else 0)) / frame_rate
        return _ms(seconds, expr)
    raise ConversionError("damaged_input", f"The TTML time expression {expr[:40]!r} is not one FileKiln reads.")


TT_NS = "http://www.w3.org/ns/ttml"
_OLD_TT_NS = ("http://www.w3.org/2006/10/ttaf1", "http://www.w3.org/2006/04/ttaf1", "http://www.w3.org/2006/02/ttaf1")
_TTP_NS = ("http://www.w3.org/ns/ttml#parameter", "http://www.w3.org/2006/10/ttaf1#parameter",
           "http://www.w3.org/2006/04/ttaf1#parameter")


def _ttp(root: Element, name: str) -> str | None:
    for ns in _TTP_NS:
        value = root.get(f"{{{ns}}}{name}")
        if value is not None:
            return value
    return None


def clean_ttml(data: bytes) -> tuple[str, int]:
    """TTML (or DFXP) rewritten for pysubs2's reader; returns it and the paragraphs skipped for having no end.

    Parsed with :mod:`converters.inputs.safexml` (entity declarations refused, ``unsafe_input``). The old
    DFXP namespaces become TTML's; every ``p`` under ``body``, however deeply nested in ``div``\\ s, gets
    absolute ``begin`` and ``end`` in milliseconds (offsets of the ancestors added, ``dur`` turned into an
    end, frames and ticks converted with the document's ``ttp:frameRate`` and ``ttp:tickRate``) and is moved
    into one ``div``. Styling is left to pysubs2, which keeps none of it.
    """
    from xml.etree import ElementTree

    from converters.inputs import safexml

    try:
        root = safexml.fromstring(data)
    except ElementTree.ParseError as exc:
        raise ConversionError("damaged_input", f"The TTML file is not well-formed XML: {exc}.") from None
    for element in root.iter():
        for old in _OLD_TT_NS:
            if element.tag.startswith(f"{{{old}}}"):
                element.tag = f"{{{TT_NS}}}" + element.tag[len(old) + 2:]
    if root.tag != f"{{{TT_NS}}}tt":
        raise ConversionError("damaged_input", "The file is XML but not TTML (its root element is not <tt>).")
    if any(element.get("timeContainer") == "seq" for element in root.iter()):
        raise ConversionError("unsupported_format", 'This TTML file times its paragraphs one after another '
                                                    '(timeContainer="seq"), which FileKiln does not read.')
    multiplier = (_ttp(root, "frameRateMultiplier") or "1 1").split()
    try:
        frame_rate = float(_ttp(root, "frameRate") or 30) * float(multiplier[0]) / float(multiplier[1])
        sub_frames = float(_ttp(root, "subFrameRate") or 1)
        tick_rate = float(_ttp(root, "tickRate") or (frame_rate * sub_frames if _ttp(root, "frameRate") else 1))
    except (ValueError, IndexError, ZeroDivisionError):
        raise ConversionError("damaged_input", "The TTML file's frame or tick rate is not a number.") from None
    if not all(0 < rate < 1e9 for rate in (frame_rate, sub_frames, tick_rate)):
        raise ConversionError("damaged_input", "The TTML file's frame or tick rate is not positive.")

    def ms(expr: str) -> int:
        return _clock(expr, frame_rate, sub_frames, tick_rate)

    body = root.find(f"{{{TT_NS}}}body")
    paragraphs: list[Element] = []
    skipped = 0

    def walk(element: Element, offset: int, inherited_end: int | None) -> None:
        nonlocal skipped
        for child in list(element):
            if child.tag not in (f"{{{TT_NS}}}div", f"{{{TT_NS}}}p"):
                continue  # metadata, animation: nothing that is shown
            begin = offset + ms(child.get("begin", "0s"))
            end = offset + ms(child.attrib["end"]) if "end" in child.attrib else None
            if "dur" in child.attrib:
                by_dur = begin + ms(child.attrib["dur"])
                end = by_dur if end is None else min(end, by_dur)
            if end is None:
                end = inherited_end
            if child.tag == f"{{{TT_NS}}}div":
                walk(child, begin, end)
            elif child.tag == f"{{{TT_NS}}}p":
                if end is None:
                    skipped += 1
                    continue
                child.attrib.pop("dur", None)
                child.attrib.pop("timeContainer", None)
                child.set("begin", f"{begin}ms")
                child.set("end", f"{end}ms")
                paragraphs.append(child)

    if body is not None:
        body_begin = ms(body.get("begin", "0s"))
        body_end = ms(body.attrib["end"]) if "end" in body.attrib else None
        walk(body, body_begin, body_end)
        for child in list(body):
            body.remove(child)
        for name in ("begin", "end", "dur", "timeContainer"):
            body.attrib.pop(name, None)
        div = ElementTree.SubElement(body, f"{{{TT_NS}}}div")
        div.extend(paragraphs)
    return ElementTree.tostring(root, encoding="unicode"), skipped


def microdvd_fps(text: str, params: SubtitleReadParams) -> tuple[str, float, str | None]:
    """The text without its ``{1}{1}fps`` declaration, the frame rate to use, and a note when they differ."""
    declared = _MICRODVD_FPS.search(text[:4096])
    if declared is None or text[: declared.start()].strip():
        return text, params.fps, None
    rest = text[: declared.start()] + text[declared.end():]
    rate = float(declared.group(1).replace(",", "."))
    if "fps" in params.model_fields_set or not 0 < rate <= 240:
        note = None if rate == params.fps else f"the file declares {rate:g} fps; {params.fps:g} fps was used"
        return rest, params.fps, note
    return rest, rate, None


# --------------------------------------------------------------------------- loading


def _reason(exc: BaseException) -> str:
    """An exception in a few words, without tracebacks (the text was parsed from memory: there are no paths)."""
    first = (str(exc).strip().splitlines() or [""])[0][:200]
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__


def load_subtitles(source: InputFile, params: SubtitleReadParams, check_cancelled: Any = None) -> Loaded:
    """Read, fix up, parse, shift and clamp one subtitle file (see the module's description)."""
    import pysubs2

    check_limits(source)
    data = source.path.read_bytes()
    fmt = source.format
    notes: list[str] = []
    skipped = 0
    if fmt == "ttml":
        encoding, guessed = "xml", False  # the XML reader decodes by the file's BOM or declaration
        if params.encoding != "auto" or not _xml_decodes_itself(data):
            decoded, encoding, guessed = decode_text(data, params.encoding)
            data = _XML_DECLARATION.sub("", decoded.lstrip("\ufeff"), count=1).encode("utf-8")
        text, skipped = clean_ttml(data)
    else:
        text, encoding, guessed = decode_text(data, params.encoding)
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    fps = params.fps
    if fmt == "vtt":
        text = clean_vtt(text)
    if fmt in ("srt", "vtt"):
        text, broken = drop_broken_cues(text, fmt)
        if broken:
            notes.append(f"{broken} cue(s) with an unreadable timing line were left out")
    elif fmt == "sub":
        text, fps, note = microdvd_fps(text, params)
        if note:
            notes.append(note)
    if check_cancelled is not None:
        check_cancelled()
    try:
        subs = pysubs2.SSAFile.from_string(text, format_=PYSUBS2_FORMATS[fmt], fps=fps)
    except NotImplementedError as exc:
        raise ConversionError("unsupported_format", f"This {LABELS[fmt]} file uses a feature FileKiln cannot "
                                                    f"read ({_reason(exc)}).") from None
    except Exception as exc:  # noqa: BLE001 - any parser failure on user data is a damaged file
        raise ConversionError("damaged_input", f"The file could not be read as {LABELS[fmt]} "
                                               f"({_reason(exc)}).") from None
    if len(subs.events) > MAX_EVENTS:
        raise ConversionError("input_too_large", f"The file has {len(subs.events)} subtitles; the limit is "
                                                 f"{MAX_EVENTS}.")
    if skipped:
        notes.append(f"{skipped} TTML paragraph(s) without an end time were skipped")
    if fmt == "vtt":
        for event in subs.events:
            event.text = html.unescape(event.text)
    notes += settle_times(subs, params.shift, check_cancelled)
    if not any(not event.is_comment for event in subs.events):
        raise ConversionError("no_text", f"The {LABELS[fmt]} file has no subtitles in it.")
    if guessed:
        notes.append(f"the file is not UTF-8; read as {encoding} (a guess: set encoding if the text looks wrong)")
    return Loaded(subs=subs, fmt=fmt, encoding=encoding, guessed=guessed, fps=fps, notes=notes)


def settle_times(subs: SSAFile, shift: float, check_cancelled: Any = None) -> list[str]:
    """Shift every event, drop those that end before 0, clamp to 0 .. 99:59:59.999, and fix ends before starts.

    Returns notes on what was changed.
    """
    notes = []
    delta = round(shift * 1000)
    kept = []
    dropped = clamped = reversed_ = 0
    for index, event in enumerate(subs.events):
        if check_cancelled is not None and index % 10_000 == 0:
            check_cancelled()
        start, end = event.start + delta, event.end + delta
        if end < start:
            reversed_ += 1
            end = start
        if delta and end <= 0:
            dropped += 1
            continue
        if start < 0 or end > MAX_TIME_MS or start > MAX_TIME_MS:
            clamped += 1
        event.start = min(max(start, 0), MAX_TIME_MS)
        event.end = min(max(end, 0), MAX_TIME_MS)
        kept.append(event)
    subs.events = kept
    if dropped:
        notes.append(f"{dropped} subtitle(s) ended before 0 after the shift and were dropped")
    if clamped:
        notes.append(f"{clamped} subtitle time(s) outside 0 .. 99:59:59.999 were clamped")
    if reversed_:
        notes.append(f"{reversed_} subtitle(s) ended before they started; their end was set to their start")
    return notes

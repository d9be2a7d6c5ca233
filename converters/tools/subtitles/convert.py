"""``subtitle-convert``: SRT, WebVTT, ASS/SSA, MicroDVD and TTML into each other, re-timed and in UTF-8.

Reading is :mod:`converters.tools.subtitles.reading`. Writing: ASS, SSA, MicroDVD and TTML by pysubs2;
SRT and WebVTT by FileKiln on pysubs2's tag parser, because pysubs2's SubRip writer drops bold and
writes WebVTT without escaping ``&`` and ``<``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from pydantic import Field

from converters.base import Context, InputFile, Tool, ToolEnv, atomic_output
from converters.tools.subtitles.reading import (
    PYSUBS2,
    SUBTITLE_FORMATS,
    SubtitleReadParams,
    check_limits,
    load_subtitles,
)

if TYPE_CHECKING:
    from pysubs2 import SSAFile

OUTPUT_FORMATS = ("srt", "vtt", "ass", "ssa", "sub", "ttml")
SUBSTATION_MAX_MS = 10 * 3600 * 1000 - 10  # H:MM:SS.cc has one digit for the hours


class SubtitleConvertParams(SubtitleReadParams):
    """Parameters of ``subtitle-convert``."""

    keep_styling: bool = Field(
        default=True,
        description="Keep basic styling: bold, italic, underline (and strikeout in SRT) as tags in SRT and "
                    "WebVTT, whole italic lines in MicroDVD, ASS override tags in ASS/SSA/TTML. Off: plain text.",
    )


def _timestamp(ms: int, separator: str) -> str:
    hours, rest = divmod(ms, 3_600_000)
    minutes, rest = divmod(rest, 60_000)
    seconds, millis = divmod(rest, 1000)
    return f"{hours:02d}:{minutes:02d}:{seconds:02d}{separator}{millis:03d}"


def _escape_vtt(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def write_srt_like(subs: SSAFile, vtt: bool, styled: bool) -> str:
    """SRT or WebVTT text: one cue per visible event (comments and ASS drawings left out).

    Styling from ASS styles and override tags comes out as ``<b>``, ``<i>``, ``<u>`` (and ``<s>`` in
    SRT; WebVTT has none). Line breaks stay; empty lines inside a cue are removed (they would end it).
    """
    from pysubs2 import SSAStyle
    from pysubs2.formats.substation import parse_tags

    events = [event for event in subs.events if event.is_text]
    if vtt:
        events.sort(key=lambda event: event.start)  # WebVTT requires cues in start order
    out = ["WEBVTT", ""] if vtt else []
    tags = (("bold", "b"), ("italic", "i"), ("underline", "u")) + (() if vtt else (("strikeout", "s"),))
    for number, event in enumerate(events, start=1):
        style = subs.styles.get(event.style, SSAStyle.DEFAULT_STYLE)
        body = []
        for fragment, fragment_style in parse_tags(event.text, style, subs.styles):
            piece = fragment.replace(r"\h", " ").replace(r"\n", "\n").replace(r"\N", "\n")
            piece = _escape_vtt(piece) if vtt else piece.replace("-->", "->")
            if styled and piece.strip():
                for attribute, tag in tags:
                    if getattr(fragment_style, attribute):
                        piece = f"<{tag}>{piece}</{tag}>"
            body.append(piece)
        lines = [line.strip() for line in "".join(body).split("\n")]
        text = "\n".join(line for line in lines if line)
        separator = "." if vtt else ","
        if not vtt:
            out.append(str(number))
        out.append(f"{_timestamp(event.start, separator)} --> {_timestamp(event.end, separator)}")
        out.append(text)
        out.append("")
    return "\n".join(out) + ("\n" if out else "")


def plain(subs: SSAFile) -> None:
    """Remove override tags from every event and drop ASS drawings (their text is drawing commands)."""
    subs.events = [event for event in subs.events if event.is_comment or not event.is_drawing]
    for event in subs.events:
        event.plaintext = event.plaintext


def clamp(subs: SSAFile, limit: int) -> int:
    """Clamp every time to ``limit`` ms; returns how many events had a time past it."""
    past = 0
    for event in subs.events:
        if event.end > limit or event.start > limit:
            past += 1
            event.start, event.end = min(event.start, limit), min(event.end, limit)
    return past


def render(subs: SSAFile, fmt: str, params: SubtitleConvertParams, fps: float) -> str:
    """The subtitle file in format ``fmt`` as text."""
    if fmt in ("srt", "vtt"):
        return write_srt_like(subs, vtt=fmt == "vtt", styled=params.keep_styling)
    if not params.keep_styling:
        plain(subs)
    if fmt == "sub":
        # pysubs2 writes its frame-rate line as {0}{0}, which VLC (and pysubs2) read only as {1}{1}
        body = subs.to_string("microdvd", fps=fps, apply_styles=params.keep_styling, write_fps_declaration=False)
        return f"{{1}}{{1}}{fps:g}\n{body}"
    if fmt == "ttml":
        # pysubs2's TTML is ASCII with character references and no XML declaration (FileKiln's sniffing,
        # like many tools, looks for one): UTF-8 text instead, declared.
        body = re.sub(r"&#(\d+);", lambda m: chr(int(m.group(1))) if int(m.group(1)) >= 0xA0 else m.group(0),
                      subs.to_string("ttml"))
        return f'<?xml version="1.0" encoding="UTF-8"?>\n{body}'
    return subs.to_string(fmt)


class SubtitleConvertTool(Tool):
    """``subtitle-convert``: one subtitle format into another, with encoding repair and a time shift."""

    id = "subtitle-convert"
    category = "subtitles"
    title = "Convert subtitles"
    description = ("Convert subtitles between SRT, WebVTT, ASS/SSA, MicroDVD (.sub) and TTML; fix the text "
                   "encoding (output is always UTF-8) and shift all times.")
    accepts = SUBTITLE_FORMATS
    produces = OUTPUT_FORMATS
    params = SubtitleConvertParams
    engines = (PYSUBS2,)
    timeout_seconds = 300.0

    def precheck(self, inputs: Sequence[InputFile], params: Any, env: ToolEnv | None = None) -> None:
        for source in inputs:
            check_limits(source)

    def convert(self, ctx: Context, source: InputFile, progress: Callable[[float], None]) -> None:
        params: SubtitleConvertParams = ctx.params
        fmt = ctx.output_format
        loaded = load_subtitles(source, params, ctx.check_cancelled)
        progress(0.6)
        ctx.check_cancelled()
        # MicroDVD out keeps a MicroDVD input's own rate (its frame numbers stay), unless fps is given.
        fps = params.fps if "fps" in params.model_fields_set or loaded.fmt != "sub" else loaded.fps
        if fmt in ("ass", "ssa") and (past := clamp(loaded.subs, SUBSTATION_MAX_MS)):
            ctx.notes.append(f"{past} subtitle(s) run past 9:59:59.99, the latest time {fmt} can write: clamped")
        text = render(loaded.subs, fmt, params, fps)
        ctx.check_cancelled()
        final = ctx.output_path(source.name, fmt)
        with atomic_output(final) as temp:
            temp.write_bytes(re.sub(r"\r\n?", "\n", text).encode("utf-8"))
        ctx.notes.extend(dict.fromkeys(loaded.notes))
        ctx.notes.extend(styling_notes(loaded.fmt, fmt, params.keep_styling))
        progress(1.0)


def styling_notes(source: str, target: str, keep: bool) -> list[str]:
    """What styling the conversion could not carry, in words."""
    notes = []
    if source == "ttml" and target != "ttml":
        notes.append("TTML styling and positions are not read: text, line breaks and times only")
    if keep and source in ("ass", "ssa"):
        kept = {"srt": "bold, italic, underline and strikeout", "vtt": "bold, italic and underline",
                "sub": "whole italic lines", "ttml": "bold, italic, underline, strikeout, font and colour"}
        if target in kept:
            notes.append(f"{target} keeps {kept[target]} only: ASS positions, effects and other styling are lost")
    return notes

"""``video-add-subtitles``: a subtitle file into a video as a soft (selectable) track, without re-encoding.

The video's streams are copied packet for packet (a remux) into MKV, MP4 or WebM; the subtitle file is read
with :mod:`converters.tools.subtitles.reading` and encoded by FFmpeg's own subtitle encoders through PyAV
(``avcodec_encode_subtitle``): each event goes in as an ASS dialogue line and comes out in the container's
text format -- ``ass`` (ASS/SSA input) or ``subrip`` in MKV, ``mov_text`` in MP4, ``webvtt`` in WebM --
exactly as ``ffmpeg -c:s <codec>`` would write it. The subtitle packets are muxed in time order among the
video's, so the muxer never holds more than its usual interleaving window.

MP4 text tracks cannot show two samples at once, so for ``mov_text`` overlapping events are cut into
consecutive pieces that show every event on screen at that time (up to :data:`MAX_STACKED`).
"""

from __future__ import annotations

import contextlib
import heapq
import re
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, Any, cast

from pydantic import Field, field_validator

from converters.base import Context, ConversionError, InputFile, Tool, ToolEnv, atomic_output, safe_stem
from converters.engines.media.container import (
    PYAV,
    Window,
    engine_errors,
    is_cover_art,
    muxer_options,
    open_input,
    output_container,
    source_tags,
    trim_window,
)
from converters.engines.media.pipeline import Copier, PacketGate, Ticker, packets
from converters.inputs.sniff import sniff_bytes
from converters.tools.subtitles.reading import (
    PYSUBS2,
    SUBTITLE_FORMATS,
    SubtitleReadParams,
    check_limits,
    load_subtitles,
)

if TYPE_CHECKING:
    from av.container import OutputContainer
    from av.stream import Stream
    from av.subtitles.stream import SubtitleStream
    from pysubs2 import SSAFile

VIDEO_INPUTS = ("mp4", "mov", "m4v", "mkv", "webm")
MUXERS = {"mkv": "matroska", "mp4": "mp4", "webm": "webm"}
MAX_STACKED = 8  # events shown at once in an MP4 text track; more is not a subtitle, it is a wall
MAX_CUE_CHARS = 10_000  # FFmpeg's encoders get 1 MB per packet; no readable subtitle comes near this
MS = Fraction(1, 1000)
# Stream tags that describe the old file rather than the track.
_TECHNICAL_STREAM_TAGS = re.compile(r"^(duration|handler_name|vendor_id|encoder|number_of_.*|_statistics_.*|bps.*)$",
                                    re.IGNORECASE)
FONT_MIMETYPES = {"ttf": "application/x-truetype-font", "otf": "application/vnd.ms-opentype"}


class VideoAddSubtitlesParams(SubtitleReadParams):
    """Parameters of ``video-add-subtitles``."""

    language: str = Field(
        default="und", pattern=r"^[A-Za-z]{3}$",
        description="Language of the subtitle track: an ISO 639-2 code (eng, fre, ger, spa, jpn ...); und = "
                    "undetermined.",
    )
    title: str | None = Field(
        default=None, max_length=200, description="Track title players show in their subtitle menu (optional).",
    )
    default: bool = Field(
        default=False, description="Mark the track as default, so players show it without being asked.",
    )

    @field_validator("language")
    @classmethod
    def _lower(cls, value: str) -> str:
        return value.lower()

    @field_validator("title")
    @classmethod
    def _printable(cls, value: str | None) -> str | None:
        if value is None:
            return None
        cleaned = "".join(ch for ch in value if ch.isprintable()).strip()
        return cleaned or None


def subtitle_codec(output: str, source_format: str) -> str:
    """The codec the subtitle track is written in, for an output container and a subtitle input format."""
    if output == "mp4":
        return "mov_text"
    if output == "webm":
        return "webvtt"
    return "ass" if source_format in ("ass", "ssa") else "subrip"


def check_order(tool_id: str, inputs: Sequence[InputFile]) -> None:
    """Refuse (``invalid_params``) anything but a video followed by one subtitle file."""
    if len(inputs) != 2 or inputs[0].format not in VIDEO_INPUTS or inputs[1].format not in SUBTITLE_FORMATS:
        given = ", ".join(f"{source.name} ({source.format})" for source in inputs) or "nothing"
        raise ConversionError("invalid_params", f"{tool_id} takes two files: the video first ("
                                                f"{', '.join(VIDEO_INPUTS)}), then the subtitle file ("
                                                f"{', '.join(SUBTITLE_FORMATS)}); given: {given}.")


# --------------------------------------------------------------------------- the subtitle track's content


@dataclass(frozen=True)
class Cue:
    """One subtitle packet to encode: times in ms and the ASS dialogue fields FFmpeg's encoders take."""

    start: int
    end: int
    layer: int
    style: str
    name: str
    margins: tuple[int, int, int]
    effect: str
    text: str

    def dialogue(self, read_order: int) -> bytes:
        """``ReadOrder,Layer,Style,Name,MarginL,MarginR,MarginV,Effect,Text``, FFmpeg's ASS packet layout."""
        def field(value: str) -> str:
            return value.replace(",", ";").replace("\n", " ")

        left, right, vertical = self.margins
        text = self.text.replace("\r", "").replace("\n", r"\N")
        return (f"{read_order},{self.layer},{field(self.style)},{field(self.name)},{left},{right},{vertical},"
                f"{field(self.effect)},{text}").encode()


def cues_of(subs: SSAFile, codec: str) -> tuple[list[Cue], int, int]:
    """The events to write, in start order; how many empty or zero-length ones were left out; how many had
    their text cut to :data:`MAX_CUE_CHARS`.

    ``ass`` takes drawings too; the text codecs only visible text.
    """
    cues: list[Cue] = []
    skipped = cut = 0
    for event in subs.events:
        if event.is_comment or (codec != "ass" and event.is_drawing):
            continue
        if event.end <= event.start or (codec != "ass" and not event.plaintext.strip()):
            skipped += 1
            continue
        text = event.text
        if len(text) > MAX_CUE_CHARS:
            cut += 1
            text = text[:MAX_CUE_CHARS]
        cues.append(Cue(event.start, event.end, int(event.layer), event.style, event.name,
                        (int(event.marginl), int(event.marginr), int(event.marginv)), event.effect, text))
    cues.sort(key=lambda cue: cue.start)
    return cues, skipped, cut


def flatten(cues: list[Cue]) -> tuple[list[Cue], int]:
    """Non-overlapping cues for an MP4 text track: between any two event boundaries, one cue showing every
    event on screen then (in start order, joined by line breaks; at most :data:`MAX_STACKED`).

    Returns the cues and the number of moments where more events overlapped than were shown. Events become
    active in start order; ended ones are dropped lazily from a heap ordered by start, so the work is
    O(n log n) however the events overlap.
    """
    times = sorted({cue.start for cue in cues} | {cue.end for cue in cues})
    heap: list[tuple[int, int, Cue]] = []
    out: list[Cue] = []
    crowded = 0
    following = 0
    for left, right in zip(times, times[1:], strict=False):
        while following < len(cues) and cues[following].start <= left:
            heapq.heappush(heap, (cues[following].start, following, cues[following]))
            following += 1
        shown: list[tuple[int, int, Cue]] = []
        while heap and len(shown) <= MAX_STACKED:
            item = heapq.heappop(heap)
            if item[2].end > left:
                shown.append(item)  # an ended event is dropped for good: time only moves on
        for item in shown:
            heapq.heappush(heap, item)
        if len(shown) > MAX_STACKED:
            crowded += 1
            shown = shown[:MAX_STACKED]
        if not shown:
            continue
        first = shown[0][2]
        text = r"\N".join(item[2].text for item in shown)
        if out and out[-1].end == left and out[-1].text == text and out[-1].style == first.style:
            previous = out.pop()
            out.append(Cue(previous.start, right, first.layer, first.style, first.name, first.margins,
                           first.effect, text))
        else:
            out.append(Cue(left, right, first.layer, first.style, first.name, first.margins, first.effect, text))
    return out, crowded


def ass_header(subs: SSAFile, source_format: str) -> bytes:
    """The ASS script header (info, styles, the events' format line) FFmpeg's encoders read styles from.

    Embedded fonts and pictures stay out (fonts become MKV attachments, see :func:`embedded_fonts`). For a
    source without styles of its own the default style gets FFmpeg's default size (16), so that the SRT and
    WebVTT encoders do not write a ``<font size>`` tag around every line.
    """
    import pysubs2

    head = pysubs2.SSAFile()
    head.info = dict(subs.info)
    head.styles = {name: style.copy() for name, style in subs.styles.items()}
    if source_format not in ("ass", "ssa"):
        for style in head.styles.values():
            style.fontsize = 16
    return head.to_string("ass").encode("utf-8")


def decode_ssa_attachment(lines: Sequence[str]) -> bytes:
    """The bytes of a ``[Fonts]``/``[Graphics]`` entry: SubStation's uuencoding (6 bits per character, plus 33;
    a last group of 2 or 3 characters carries 1 or 2 bytes). ``ValueError`` for characters outside it."""
    chars = "".join(line.strip() for line in lines)
    values = [ord(ch) - 33 for ch in chars]
    if any(not 0 <= value < 64 for value in values):
        raise ValueError("not SubStation-encoded data")
    out = bytearray()
    whole = len(values) - len(values) % 4
    for at in range(0, whole, 4):
        a, b, c, d = values[at:at + 4]
        out += bytes(((a << 2) | (b >> 4), ((b & 15) << 4) | (c >> 2), ((c & 3) << 6) | d))
    rest = values[whole:]
    if len(rest) == 1:
        raise ValueError("truncated SubStation-encoded data")
    if len(rest) >= 2:
        out.append((rest[0] << 2) | (rest[1] >> 4))
    if len(rest) == 3:
        out.append(((rest[1] & 15) << 4) | (rest[2] >> 2))
    return bytes(out)


def embedded_fonts(subs: SSAFile) -> tuple[list[tuple[str, str, bytes]], int]:
    """The fonts of an ASS file's ``[Fonts]`` section as (file name, MIME type, data), and how many entries
    were not fonts (bad encoding, or data that is no TrueType/OpenType font) and were left out."""
    fonts = []
    bad = 0
    for name, lines in sorted(subs.fonts_opaque.items()):
        try:
            data = decode_ssa_attachment(lines)
        except ValueError:
            bad += 1
            continue
        kind = sniff_bytes(data[:4096])
        if kind not in FONT_MIMETYPES:
            bad += 1
            continue
        fonts.append((f"{safe_stem(name)}.{kind}", FONT_MIMETYPES[kind], data))
    return fonts, bad


# --------------------------------------------------------------------------- muxing


def codec_name(stream: Stream) -> str:
    try:
        return str(stream.codec.canonical_name)
    except Exception:  # noqa: BLE001 - a stream whose codec FFmpeg does not know
        return "unknown"


def copy_stream_details(source: Stream, target: Stream, default: bool | None = None) -> None:
    """Carry a stream's language, title and flags over (PyAV's template copies only the codec parameters)."""
    import av

    for key, value in source.metadata.items():
        if not _TECHNICAL_STREAM_TAGS.match(key):
            target.metadata[key] = value
    disposition = source.disposition
    if default is False:
        disposition &= ~av.stream.Disposition.default
    target.disposition = disposition


class SubtitleWriter:
    """Encodes cues into the output's subtitle stream as the copied streams' time passes."""

    def __init__(self, gate: PacketGate, stream: SubtitleStream, cues: list[Cue]) -> None:
        self._gate = gate
        self._stream = stream
        self._cues = cues
        self._next = 0
        self.written = 0

    def until(self, ms: float | None) -> None:
        """Mux every cue that starts at or before ``ms`` (all of them when ``None``)."""
        from av.subtitles.subtitle import SubtitleSet

        codec = self._stream.codec_context
        while self._next < len(self._cues) and (ms is None or self._cues[self._next].start <= ms):
            cue = self._cues[self._next]
            duration = cue.end - cue.start
            packet = codec.encode_subtitle(SubtitleSet.create(cue.dialogue(self._next), 0, duration, 0))
            packet.pts = packet.dts = cue.start
            packet.duration = duration
            packet.time_base = MS
            packet.stream = self._stream
            self._gate.mux([packet])
            self._next += 1
            self.written += 1


def add_subtitle_stream(out: OutputContainer, codec: str, header: bytes, params: VideoAddSubtitlesParams
                        ) -> SubtitleStream:
    import av

    stream = cast("SubtitleStream", out.add_stream(codec))
    stream.codec_context.time_base = MS
    stream.codec_context.subtitle_header = header
    stream.metadata["language"] = params.language
    if params.title:
        stream.metadata["title"] = params.title
    stream.disposition = av.stream.Disposition.default if params.default else av.stream.Disposition(0)
    return stream


def add_subtitles(ctx: Context, video: InputFile, subtitle: InputFile, params: VideoAddSubtitlesParams,
                  output: str) -> None:
    loaded = load_subtitles(subtitle, params, ctx.check_cancelled)
    notes = list(loaded.notes)
    codec = subtitle_codec(output, loaded.fmt)
    cues, skipped, cut = cues_of(loaded.subs, codec)
    if skipped:
        notes.append(f"{skipped} empty or zero-length subtitle(s) left out")
    if cut:
        notes.append(f"{cut} subtitle(s) longer than {MAX_CUE_CHARS} characters were cut short")
    if codec == "mov_text":
        cues, crowded = flatten(cues)
        if crowded:
            notes.append(f"more than {MAX_STACKED} subtitles overlapped at {crowded} moment(s); MP4 showed the "
                         f"first {MAX_STACKED}")
    if not cues:
        raise ConversionError("no_text", "The subtitle file has no subtitles with text and a duration.")
    fonts, bad_fonts = embedded_fonts(loaded.subs) if loaded.fmt in ("ass", "ssa") else ([], 0)
    if bad_fonts:
        notes.append(f"{bad_fonts} embedded font(s) in the ASS file were not fonts and were left out")
    if fonts and output != "mkv":
        notes.append(f"the ASS file's {len(fonts)} embedded font(s) were left out: only MKV carries fonts")
        fonts = []
    if loaded.fmt in ("ass", "ssa") and codec != "ass":
        notes.append(f"{codec} keeps bold, italic, underline and colours only: ASS positions and effects are lost")
    header = ass_header(loaded.subs, loaded.fmt)
    ctx.check_cancelled()

    final = ctx.output_path(video.name, output)
    with contextlib.closing(open_input(video.path)) as container:
        window = trim_window(container, None, None)
        with atomic_output(final, require_content=True) as temp, \
                output_container(temp, MUXERS[output], muxer_options(MUXERS[output])) as out:
            out.metadata.update(source_tags(container))
            gate = PacketGate(out)
            jobs, main, dropped = plan_streams(container, out, gate, window, params, output)
            for name, mimetype, data in fonts + attachments_of(container, output, {f[0] for f in fonts}):
                out.add_attachment(name, mimetype, data)
            writer = SubtitleWriter(gate, add_subtitle_stream(out, codec, header, params), cues)
            out.start_encoding()
            counts = dict.fromkeys(jobs, 0)
            errors: list[str] = []
            ticker = Ticker(ctx, ctx.progress, window)
            for packet in packets(container, [source for source, _ in jobs.values()], errors):
                index = packet.stream.index
                stamp = packet.pts if packet.pts is not None else packet.dts
                t = float(stamp * packet.time_base) if stamp is not None and packet.time_base else None
                if t is not None:
                    writer.until((t - window.start) * 1000)
                counts[index] += jobs[index][1].packet(packet)
                ticker(t)
            writer.until(None)
            if not counts[main]:
                detail = f": {errors[0]}" if errors else ""
                raise ConversionError("damaged_input", f"No video could be read from {video.name}{detail}.")
            if errors:
                notes.append(f"the video could not be read to its end ({errors[0]}); what was read was copied")
    if window.length is not None:
        late = sum(1 for cue in cues if cue.start > window.length * 1000)
        if late:
            notes.append(f"{late} subtitle(s) start after the video ends")
    notes += dropped
    ctx.notes.extend(dict.fromkeys(notes))


def plan_streams(container: Any, out: OutputContainer, gate: PacketGate, window: Window,
                 params: VideoAddSubtitlesParams, output: str) -> tuple[dict[int, tuple[Any, Copier]], int, list[str]]:
    """Output streams for the input's video, audio and subtitle streams; refuses what the container cannot
    hold without re-encoding (``unsupported_conversion``). Returns (input stream, copier) by input index,
    the main video's index, and notes on what was left out."""
    supported = out.supported_codecs
    jobs: dict[int, tuple[Any, Copier]] = {}
    notes: list[str] = []
    main: int | None = None
    left_out: list[str] = []
    for stream in container.streams:
        kind = stream.type
        if kind == "video" and is_cover_art(stream):
            left_out.append("cover art")
            continue
        if kind not in ("video", "audio", "subtitle"):
            if kind != "attachment":
                left_out.append(f"a {kind} stream")
            elif output != "mkv":
                left_out.append("attachments (fonts)")
            continue
        name = codec_name(stream)
        if name not in supported:
            if kind == "subtitle":
                left_out.append(f"the existing {name} subtitle track ({output.upper()} cannot hold it)")
                continue
            suggestion = "MKV" if output != "mkv" else "another container"
            raise ConversionError("unsupported_conversion", f"{output.upper()} cannot hold the video's {name} "
                                                            f"{kind} without re-encoding it; choose {suggestion}, "
                                                            "or convert the video first (video-convert).")
        target = out.add_stream_from_template(stream)
        copy_stream_details(stream, target, default=False if kind == "subtitle" and params.default else None)
        jobs[stream.index] = (stream, Copier(gate, stream, target, window))
        if kind == "video" and main is None:
            main = stream.index
    if main is None:
        raise ConversionError("no_video_stream", "The first file has no video stream to add subtitles to.")
    if left_out:
        notes.append("not carried over: " + ", ".join(dict.fromkeys(left_out)))
    return jobs, main, notes


def attachments_of(container: Any, output: str, taken: set[str]) -> list[tuple[str, str, bytes]]:
    """The input's own attachments (fonts of an MKV's ASS tracks), for an MKV output."""
    if output != "mkv":
        return []
    found = []
    for stream in container.streams:
        if stream.type == "attachment" and stream.name and stream.name not in taken:
            found.append((str(stream.name), str(stream.mimetype or "application/octet-stream"), bytes(stream.data)))
            taken.add(stream.name)
    return found


class VideoAddSubtitlesTool(Tool):
    """``video-add-subtitles``: a subtitle file into a video as a soft track; the video is copied, not
    re-encoded."""

    id = "video-add-subtitles"
    category = "video"
    title = "Add subtitles to video"
    description = ("Put a subtitle file (SRT, WebVTT, ASS/SSA, MicroDVD, TTML) into a video as a selectable "
                   "track, without re-encoding: give the video first, then the subtitles. MKV keeps ASS styling.")
    accepts = (*VIDEO_INPUTS, *SUBTITLE_FORMATS)
    produces = ("mkv", "mp4", "webm")
    params = VideoAddSubtitlesParams
    engines = (PYAV, PYSUBS2)
    merges_inputs = True
    max_inputs = 2
    timeout_seconds = 3600.0

    def precheck(self, inputs: Sequence[InputFile], params: Any, env: ToolEnv | None = None) -> None:
        check_order(self.id, inputs)
        check_limits(inputs[1])

    def run(self, ctx: Context) -> None:
        check_order(self.id, ctx.inputs)
        video, subtitle = ctx.inputs
        with engine_errors():
            add_subtitles(ctx, video, subtitle, ctx.params, ctx.output_format)
        ctx.progress(1.0)

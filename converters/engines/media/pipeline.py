"""The decode -> filter -> encode loop shared by the PyAV tools.

One demux pass feeds each chosen input stream to a job: a ``Copier`` (packets
unchanged, a remux) or a ``Transcoder`` (decode, then an encoder-shaped sink that
runs an FFmpeg filter graph and encodes). ``run_streams`` drives it with progress
and cancel checks on every packet. The filter helpers here describe graphs as
plain ``(name, args)`` lists so each tool states its processing in one place.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, Any, Protocol

from converters.base import Context
from converters.engines.media.container import Window, require_content, seek_to

if TYPE_CHECKING:
    from av.container import InputContainer, OutputContainer
    from av.filter import Graph
    from av.filter.context import FilterContext
    from av.frame import Frame
    from av.packet import Packet
    from av.stream import Stream

PROGRESS_INTERVAL = 0.25  # seconds of wall time between progress reports

Filters = list[tuple[str, str]]  # (filter name, arguments) in graph order


class Ticker:
    """Reports progress from media timestamps and checks for cancel.

    Progress goes out at most every ``PROGRESS_INTERVAL`` seconds of wall time (so
    at least every second on long files); cancel is checked on every call. It follows
    what was read, or (``follow_output``) what an encoder has written.
    """

    def __init__(self, ctx: Context, progress: Callable[[float], None], window: Window) -> None:
        self._ctx = ctx
        self._progress = progress
        self._window = window
        self._last = 0.0
        self._following = False
        self._written = window.start  # how far the output goes, on the input's timeline

    def follow_output(self) -> None:
        """Take progress from :meth:`written`, not from the reading.

        A video encoder with lookahead (x264, x265, SVT-AV1) takes in seconds of frames before it
        writes one: the read position races ahead (80 % within the first fifth of a short
        x264 job, measured), then the encoder's flush runs on without a report.
        """
        self._following = True

    def __call__(self, t: float | None) -> None:
        """Input read up to ``t`` (seconds, the input's timeline)."""
        self._ctx.check_cancelled()
        self._report(self._written if self._following else t)  # following: while the encoder fills up, 0

    def written(self, t: float) -> None:
        """Output written up to ``t`` (seconds from the output's start)."""
        self._ctx.check_cancelled()
        self._written = self._window.start + t
        self._report(self._written)

    def _report(self, t: float | None) -> None:
        now = time.monotonic()
        if t is not None and now - self._last >= PROGRESS_INTERVAL:
            self._last = now
            self._progress(self._window.fraction(t))


class Chain:
    """A linear FFmpeg filter graph: one buffer source, some filters, one sink."""

    def __init__(self, graph: Graph, source: FilterContext, sink: FilterContext) -> None:
        self._graph = graph  # the contexts do not keep their graph alive; freeing it early crashes FFmpeg
        self._source = source
        self._sink = sink
        self._closed = False

    def push(self, frame: Frame | None) -> list[Any]:
        """Feed a frame (``None`` at the end) and return every frame the graph has ready."""
        import av

        if not self._closed:
            try:
                self._source.push(frame)
            except av.error.EOFError:
                self._closed = True  # a trim filter has seen its end: later frames are not wanted
        out: list[Any] = []
        while True:
            try:
                out.append(self._sink.pull())
            except (BlockingIOError, av.error.EOFError):
                return out


def build_chain(source_args: dict[str, str], audio: bool, filters: Filters) -> Chain:
    """Build ``(a)buffer -> filters... -> (a)buffersink`` from plain descriptions."""
    import av

    graph = av.filter.Graph()
    source = graph.add("abuffer" if audio else "buffer", **source_args)
    nodes = [source] + [graph.add(name, args) for name, args in filters]
    sink = graph.add("abuffersink" if audio else "buffersink")
    graph.link_nodes(*nodes, sink).configure()
    return Chain(graph, source, sink)


def audio_source_args(frame: Any) -> dict[str, str]:
    """``abuffer`` arguments describing decoded audio ``frame``."""
    return {
        "sample_rate": str(frame.sample_rate),
        "sample_fmt": frame.format.name,
        "channel_layout": frame.layout.name,
        "time_base": str(frame.time_base),
    }


def video_source_args(frame: Any, sample_aspect: Fraction | None = None) -> dict[str, str]:
    """``buffer`` arguments describing decoded video ``frame`` (frames do not carry their pixel aspect)."""
    return {
        "video_size": f"{frame.width}x{frame.height}",
        "pix_fmt": frame.format.name,
        "time_base": str(frame.time_base),
        "pixel_aspect": str(sample_aspect) if sample_aspect else "1/1",
    }


def trim_filters(window: Window, audio: bool, restart: bool = False) -> Filters:
    """Cut to the window (sample-accurate for audio) and move its start to time zero.

    Streams of one output share the same fixed shift, which keeps them in sync; a
    lone stream may ``restart`` at its own first timestamp instead, so an audio file
    whose first packet comes late does not begin with a gap.
    """
    prefix = "a" if audio else ""
    filters: Filters = []
    if window.trimmed:
        bounds = f"start={window.start:.6f}" + (f":end={window.end:.6f}" if window.end is not None else "")
        filters.append((f"{prefix}trim", bounds))
    shift = "PTS-STARTPTS" if restart else f"PTS-{window.start:.6f}/TB"
    filters.append((f"{prefix}setpts", shift))
    return filters


def rotation_filters(rotation: float) -> Filters:
    """Filters that apply a display-matrix rotation, as FFmpeg's own tools do by default."""
    theta = round(-rotation) % 360
    if theta == 90:
        return [("transpose", "clock")]
    if theta == 180:
        return [("hflip", ""), ("vflip", "")]
    if theta == 270:
        return [("transpose", "cclock")]
    return []


def even(value: float) -> int:
    """Round to the nearest even number of pixels (4:2:0 video needs even sizes)."""
    return max(2, round(value / 2) * 2)


def fit_size(src_w: float, src_h: float, width: int | None, height: int | None) -> tuple[int, int]:
    """The size for a requested width and/or height, keeping the aspect ratio (fit inside when both)."""
    if width and height:
        scale = min(width / src_w, height / src_h)
        return even(src_w * scale), even(src_h * scale)
    if width:
        return even(width), even(src_h * width / src_w)
    if height:
        return even(src_w * height / src_h), even(height)
    return even(src_w), even(src_h)


@dataclass(frozen=True)
class Geometry:
    """A decoded picture's upright shape: the rotation to apply, then its size and pixel aspect."""

    rotate: Filters
    width: int
    height: int
    sar: Fraction

    @classmethod
    def of(cls, frame: Any, sample_aspect: Fraction | None) -> Geometry:
        rotate = rotation_filters(frame.rotation)
        sar = Fraction(sample_aspect) if sample_aspect else Fraction(1)
        if len(rotate) == 1:  # a quarter turn swaps the sides and the pixel aspect
            return cls(rotate, frame.height, frame.width, 1 / sar)
        return cls(rotate, frame.width, frame.height, sar)

    def resize(self, width: int | None, height: int | None, flags: str = "bicubic") -> tuple[
        Filters, tuple[int, int], Fraction
    ]:
        """Filters, output size and output pixel aspect for a requested size.

        A requested size is in displayed pixels and comes out with square pixels;
        without one, the size stays (rounded to even) and so does the pixel aspect.
        """
        if width or height:
            size = fit_size(float(self.width * self.sar), self.height, width, height)
            return [("scale", f"{size[0]}:{size[1]}:flags={flags}"), ("setsar", "1")], size, Fraction(1)
        size = even(self.width), even(self.height)
        filters = [("scale", f"{size[0]}:{size[1]}:flags={flags}")] if size != (self.width, self.height) else []
        return filters, size, self.sar


def decode(stream: Stream, packet: Packet | None, errors: list[str]) -> list[Any]:
    """Decode one packet (``None`` flushes); a packet the decoder rejects is skipped, as FFmpeg's CLI does."""
    import av

    try:
        return list(stream.decode(packet))  # type: ignore[attr-defined]
    except av.error.EOFError:
        return []  # already flushed
    except av.error.FFmpegError as exc:
        errors.append(str(exc))
        return []


def packets(container: InputContainer, streams: list[Any], errors: list[str]) -> Iterator[Packet]:
    """Demux ``streams``; a read error ends the input (as FFmpeg's CLI treats it) and is noted."""
    import av

    iterator = container.demux(streams)
    while True:
        try:
            packet = next(iterator)
        except StopIteration:
            return
        except av.error.FFmpegError as exc:
            errors.append(str(exc))
            return
        yield packet


class PacketGate:
    """Holds encoded packets until every output stream is configured.

    The muxer writes its header on the first packet, so a stream whose encoder is
    set up from its first decoded frame (size, rotation) must be ready before then.
    """

    def __init__(self, out: OutputContainer, waiting: int = 0) -> None:
        self._out = out
        self._waiting = waiting
        self._held: list[Packet] = []
        self._followed: tuple[Stream, Ticker] | None = None

    def follow(self, stream: Stream, ticker: Ticker) -> None:
        """Tell ``ticker`` how far output ``stream`` has been written (see :meth:`Ticker.follow_output`)."""
        ticker.follow_output()
        self._followed = (stream, ticker)

    def mux(self, packets: Iterable[Packet]) -> None:
        if self._waiting:
            self._held.extend(packets)
            return
        for packet in packets:
            self._out.mux_one(packet)
            if self._followed is not None and packet.stream is self._followed[0] and packet.pts is not None:
                self._followed[1].written(float(packet.pts * packet.time_base))

    def ready(self) -> None:
        """One more stream is configured; when all are, release what was held."""
        self._waiting -= 1
        if not self._waiting:
            held, self._held = self._held, []
            self.mux(held)


class Encoder(Protocol):
    """Takes decoded frames of one input stream and writes them to one output stream."""

    def push(self, frame: Any) -> int:
        """Encode a frame; returns how many frames went to the encoder (after filtering)."""
        ...

    def flush(self) -> int:
        """Drain filters and encoder at the end."""
        ...


class StreamJob(Protocol):
    def packet(self, packet: Packet) -> int: ...

    def flush(self) -> int: ...


class Copier:
    """Copies one stream's packets unchanged (a remux), shifted so the window starts at zero."""

    def __init__(self, gate: PacketGate, source: Stream, target: Stream, window: Window) -> None:
        self._gate = gate
        self._target = target
        self._shift = round(window.start / source.time_base) if source.time_base else 0

    def packet(self, packet: Packet) -> int:
        if packet.size == 0:
            return 0  # the empty packets that flush decoders
        # Matroska leaves the first DTS of B-frame video unset; the muxer derives it, so it stays unset.
        if packet.pts is not None:
            packet.pts -= self._shift
        if packet.dts is not None:
            packet.dts -= self._shift
        packet.stream = self._target
        self._gate.mux([packet])
        return 1

    def flush(self) -> int:
        return 0


class Transcoder:
    """Decodes one stream's packets and hands the frames to an encoder."""

    def __init__(self, stream: Stream, encoder: Encoder, errors: list[str]) -> None:
        self._stream = stream
        self._encoder = encoder
        self._errors = errors
        self._step = 0  # a packet's duration, in the stream's time base
        self._next = 0

    def packet(self, packet: Packet) -> int:
        if packet.duration:
            self._step = int(packet.duration)
        return sum(self._encoder.push(self._stamped(frame)) for frame in decode(self._stream, packet, self._errors))

    def flush(self) -> int:
        # Reading may have stopped early (past the trim end): drain the decoder too.
        count = sum(self._encoder.push(self._stamped(frame)) for frame in decode(self._stream, None, self._errors))
        return count + self._encoder.flush()

    def _stamped(self, frame: Any) -> Any:
        """Give a frame without a timestamp the one that follows its predecessor.

        Elementary streams (raw H.264, HEVC) carry no timestamps at all: their frames come out of the
        decoder in presentation order, a packet's duration apart. Decoders that cut one packet into
        several frames (Monkey's Audio) stamp only the first: the next starts where the last one's
        samples end.
        """
        samples = int(getattr(frame, "samples", 0) or 0)
        time_base = frame.time_base or self._stream.time_base
        step = round(samples / frame.sample_rate / time_base) if samples and time_base else self._step
        if frame.pts is None and step:
            frame.pts = self._next
            frame.time_base = time_base
        if frame.pts is not None:
            self._next = frame.pts + step
        return frame


def run_streams(
    ctx: Context,
    container: InputContainer,
    jobs: dict[Any, StreamJob],
    window: Window,
    progress: Callable[[float], None] | Ticker,
    errors: list[str],
) -> dict[int, int]:
    """Demux once, feeding each stream's packets to its job; returns output frames or packets per stream index.

    Reading stops two seconds past the trim end (enough for any decoder's reordering
    delay); progress and cancel are checked on every packet. ``errors`` collects what
    the demuxer and decoders rejected. The first stream in ``jobs`` is the main one:
    when it produced nothing the job fails (``empty_media`` or ``damaged_input``); a
    secondary stream (a silent soundtrack) may come out empty. ``progress`` is a callback,
    or a :class:`Ticker` already set up (one that follows an encoder's output).
    """
    ticker = progress if isinstance(progress, Ticker) else Ticker(ctx, progress, window)
    by_index = {stream.index: job for stream, job in jobs.items()}
    counts = dict.fromkeys(by_index, 0)
    seek_to(container, window)
    for packet in packets(container, list(jobs), errors):
        index = packet.stream.index
        stamp = packet.pts if packet.pts is not None else packet.dts
        t = float(stamp * packet.time_base) if stamp is not None and packet.time_base else None
        if window.end is not None and t is not None and t > window.end + 2.0:
            break
        counts[index] += by_index[index].packet(packet)
        ticker(t)
    for stream, job in jobs.items():
        counts[stream.index] += job.flush()
    main = next(iter(jobs)).index
    require_content(counts[main], errors)
    return counts

"""Audio conversion on PyAV: the ``audio-convert`` tool and the audio pipeline ``video-to-audio`` shares.

One pass decodes the input, cuts it to the trim window in a filter graph
(sample-accurate), optionally applies a loudness gain measured in a first pass,
and encodes. When nothing asks for a change and the input already has the
output's codec, packets are copied instead (lossless and fast).

MP3 files are encoded by LAME through :mod:`converters.engines.media.lame` (the system's
libmp3lame, else the ``lameenc`` wheel; the LAME built into the ``av`` wheel needs
up to four times the CPU for the same frames) and muxed by FFmpeg, which writes
the ID3 tags and the LAME header.
"""

from __future__ import annotations

import contextlib
import struct
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from pydantic import Field, model_validator

from converters.base import Context, ConversionError, InputFile, Params, Tool, atomic_output, scaled
from converters.engines.media.container import (
    MEDIA_FORMATS,
    PYAV,
    Window,
    audio_stream,
    carry_chapters,
    end_after_start,
    engine_errors,
    muxer_options,
    open_input,
    output_container,
    source_tags,
    trim_window,
)
from converters.engines.media.pipeline import (
    Chain,
    Copier,
    Encoder,
    Filters,
    PacketGate,
    StreamJob,
    Transcoder,
    audio_source_args,
    build_chain,
    run_streams,
    trim_filters,
)
from converters.tools.media.loudness import measure_gain

if TYPE_CHECKING:
    from av.audio.stream import AudioStream
    from av.container import OutputContainer
    from av.packet import Packet


LAYOUTS = {1: "mono", 2: "stereo", 3: "3.0", 4: "quad", 5: "5.0", 6: "5.1", 7: "6.1", 8: "7.1"}


@dataclass(frozen=True)
class AudioTarget:
    """How one output format is written: encoder, muxer and the limits that apply."""

    codec: str
    muxer: str
    default_kbps: int | None  # None: lossless, a bitrate does not apply
    max_kbps: int = 0
    max_channels: int = 8


AUDIO_TARGETS: dict[str, AudioTarget] = {
    "mp3": AudioTarget("libmp3lame", "mp3", 192, max_kbps=320, max_channels=2),
    "m4a": AudioTarget("aac", "ipod", 192, max_kbps=512),
    "opus": AudioTarget("libopus", "opus", 128, max_kbps=512),
    # The wheel has no Vorbis encoder worth using; Ogg files carry Opus, which every Ogg player reads.
    "ogg": AudioTarget("libopus", "ogg", 128, max_kbps=512),
    "flac": AudioTarget("flac", "flac", None),
    "wav": AudioTarget("pcm_s16le", "wav", None),
}


class AudioParams(Params):
    """Parameters of ``audio-convert`` and ``video-to-audio``."""

    bitrate: int | None = Field(
        default=None, ge=8, le=512, description="Bitrate in kbps (lossy outputs). Default: 192 (MP3, M4A), 128 (Opus).",
        json_schema_extra={"x-unit": "kbps", "examples": [64, 96, 128, 160, 192, 256, 320], "x-suggested": 128},
    )
    sample_rate: int | None = Field(
        default=None, alias="sampleRate", ge=8000, le=192000, description="Sample rate in Hz. Default: the input's.",
        json_schema_extra={"x-unit": "Hz", "examples": [22050, 44100, 48000, 96000], "x-suggested": 44100},
    )
    channels: int | None = Field(
        default=None, ge=1, le=8, description="Channels (1 = mono, 2 = stereo). Default: the input's."
    )
    start: float | None = Field(default=None, ge=0, description="Trim: start time in seconds.")
    end: float | None = Field(default=None, gt=0, description="Trim: end time in seconds.")
    normalize: bool = Field(
        default=False, description="Normalize loudness to -16 LUFS (two passes; true peaks kept below -1 dBTP)."
    )

    _end_after_start = model_validator(mode="after")(end_after_start)


@dataclass(frozen=True)
class AudioSettings:
    """The resolved encoder settings for one conversion."""

    codec: str
    rate: int
    layout: str
    sample_format: str | None
    bit_rate: int | None  # bits per second


def resolve_settings(target: AudioTarget, stream: AudioStream, params: AudioParams) -> AudioSettings:
    """Combine the output format, the input stream and the user's params; refuse impossible requests."""
    import av

    codec_name = target.codec
    source_format = stream.codec_context.format
    source_lossless = bool(stream.codec.lossless)
    if codec_name == "pcm_s16le" and source_lossless and source_format.bytes > 2:
        codec_name = "pcm_s24le"  # keep the depth of 24-bit masters
    codec = av.Codec(codec_name, "w")

    rate = params.sample_rate or stream.codec_context.sample_rate
    supported_rates = codec.audio_rates
    if supported_rates and rate not in supported_rates:
        if params.sample_rate:
            rates = ", ".join(str(r) for r in sorted(supported_rates))
            raise ConversionError("invalid_params", f"{codec.name} cannot encode {rate} Hz; it supports {rates}.")
        rate = min(supported_rates, key=lambda r: (abs(r - rate), -r))

    channels = params.channels or min(stream.codec_context.channels or 2, target.max_channels)
    if channels > target.max_channels:
        raise ConversionError("invalid_params", f"{codec.name} encodes at most {target.max_channels} channels.")

    bit_rate = None
    if target.default_kbps is not None:
        kbps = params.bitrate or target.default_kbps
        if kbps > target.max_kbps:
            raise ConversionError("invalid_params", f"{codec.name} supports at most {target.max_kbps} kbps.")
        bit_rate = kbps * 1000

    return AudioSettings(
        codec=codec_name,
        rate=rate,
        layout=LAYOUTS[channels],
        sample_format=_sample_format(codec.audio_formats, source_format),
        bit_rate=bit_rate,
    )


def _sample_format(supported: Any, source: Any) -> str | None:
    """The source's sample format if the encoder takes it (planar or packed), else the encoder's first."""
    if not supported:
        return None
    names = [f.name for f in supported]
    for candidate in (source.name, source.planar.name, source.packed.name):
        if candidate in names:
            return str(candidate)
    return str(names[0])


def convert_audio(
    ctx: Context, source: InputFile, progress: Callable[[float], None], params: AudioParams, fmt: str
) -> Path:
    """Convert the main audio stream of ``source`` to ``fmt``; returns the output path."""
    target = AUDIO_TARGETS[fmt]
    final = ctx.output_path(source.name, fmt)
    with contextlib.closing(open_input(source.path)) as container:
        stream = audio_stream(container)
        window = trim_window(container, params.start, params.end)
        settings = resolve_settings(target, stream, params)
        if target.default_kbps is None and params.bitrate is not None:
            ctx.notes.append(f"bitrate ignored: {fmt} is lossless")
        gain = None
        if params.normalize:
            # The measuring pass reads its own copy of the file; this one stays at its start.
            gain = measure_gain(ctx, source.path, window, scaled(progress, 0.0, 0.4))
            progress = scaled(progress, 0.4, 0.6)
        copy = gain is None and _can_copy(stream, settings, params, window)
        errors: list[str] = []
        with atomic_output(final) as temp, output_container(temp, target.muxer, muxer_options(target.muxer)) as out:
            out.metadata.update(source_tags(container))
            carry_chapters(container, out, window)
            gate = PacketGate(out)
            job: StreamJob
            if copy:
                # A lone audio stream keeps its own timestamps: there is nothing to stay in sync with.
                unshifted = Window(start=0.0, end=None, length=window.length, trimmed=False)
                job = Copier(gate, stream, out.add_stream_from_template(stream), unshifted)
            else:
                encoder: Encoder
                if settings.codec == "libmp3lame":
                    encoder = LameEncoder(gate, out, settings, window, gain,
                                          choice=str(ctx.env.settings.get("mp3_encoder") or "auto"))
                else:
                    encoder = AudioEncoder(gate, out, settings, window, gain)
                job = Transcoder(stream, encoder, errors)
            run_streams(ctx, container, {stream: job}, window, progress, errors)
    if copy:
        ctx.notes.append("audio copied without re-encoding (already in the requested codec)")
    progress(1.0)
    return final


def _can_copy(stream: AudioStream, settings: AudioSettings, params: AudioParams, window: Window) -> bool:
    import av

    return (
        params.bitrate is None
        and not window.trimmed
        and settings.rate == stream.codec_context.sample_rate
        and settings.layout == LAYOUTS.get(stream.codec_context.channels)
        and av.Codec(settings.codec, "w").canonical_name == stream.codec.canonical_name
    )


class AudioEncoder:
    """Encodes decoded audio frames into a new output stream, through trim and gain filters built on the first frame.

    ``alone`` says the stream is the output's only one, so it may start at its own
    first sample; beside video it keeps the shared shift that holds A/V sync.
    """

    def __init__(
        self,
        gate: PacketGate,
        out: OutputContainer,
        settings: AudioSettings,
        window: Window,
        gain_db: float | None = None,
        alone: bool = True,
    ) -> None:
        self._gate = gate
        self._stream = cast("AudioStream", out.add_stream(settings.codec, rate=settings.rate))
        self._stream.layout = settings.layout
        if settings.sample_format:
            self._stream.format = settings.sample_format
        if settings.bit_rate:
            self._stream.bit_rate = settings.bit_rate
        self._settings = settings
        self._window = window
        self._gain_db = gain_db
        self._alone = alone
        self._chain: Chain | None = None

    def push(self, frame: Any) -> int:
        if self._chain is None:
            filters = trim_filters(self._window, audio=True, restart=self._alone)
            if self._gain_db:
                filters.append(("volume", f"{self._gain_db:.2f}dB"))
            self._chain = build_chain(audio_source_args(frame), True, filters + self._output_filters())
        return self._encode(self._chain.push(frame))

    def _output_filters(self) -> Filters:
        return []  # the encoder converts rate, layout and sample format itself

    def flush(self) -> int:
        count = self._encode(self._chain.push(None)) if self._chain is not None else 0
        self._gate.mux(self._stream.encode(None))
        return count

    def _encode(self, frames: list[Any]) -> int:
        for frame in frames:
            self._gate.mux(self._stream.encode(frame))
        return len(frames)


DECODER_DELAY = 529  # samples an MP3 decoder adds at the start, on top of the encoder's delay
LAME_CHUNK_BYTES = 256 * 1024  # PCM handed to LAME per call: fewer, larger calls


class LameEncoder(AudioEncoder):
    """MP3 through LAME (:mod:`converters.engines.media.lame`) from interleaved 16-bit PCM at the output rate
    and layout.

    When the decoded frames already are that PCM and nothing is trimmed or turned up,
    they go to LAME as they are; otherwise the filter graph converts them. LAME's byte
    stream is split into one packet per MP3 frame by FFmpeg's parser and muxed into the
    stream ``AudioEncoder`` created, so the container is written as before. The first
    and last packets say how many samples are padding (FFmpeg's ``skip_samples`` side
    data), which the muxer records in the LAME header: players then give back exactly
    the input's samples, no more.
    """

    def __init__(
        self,
        gate: PacketGate,
        out: OutputContainer,
        settings: AudioSettings,
        window: Window,
        gain_db: float | None = None,
        alone: bool = True,
        choice: str = "auto",
    ) -> None:
        import av

        from converters.engines.media.lame import open_encoder

        super().__init__(gate, out, settings, window, gain_db, alone)
        self._channels = 1 if settings.layout == "mono" else 2
        self._lame = open_encoder(settings.rate, self._channels, (settings.bit_rate or 192_000) // 1000, choice)
        self._skip = self._lame.delay + DECODER_DELAY
        self._parser = av.CodecContext.create("mp3", "r")
        self._time_base = Fraction(1, settings.rate)
        self._frame_samples = 1152 if settings.rate >= 32000 else 576  # MPEG-1 or MPEG-2/2.5 layer III
        self._direct: bool | None = None  # decided on the first frame
        self._start: int | None = None  # pts of the first sample, in 1/rate
        self._pending = bytearray()  # PCM not yet given to LAME
        self._samples = 0  # samples given to LAME
        self._produced = 0  # samples in the MP3 frames so far
        self._last: Packet | None = None

    def push(self, frame: Any) -> int:
        if self._direct is None:
            s = self._settings
            self._direct = (
                self._alone and not self._window.trimmed and not self._gain_db
                and frame.format.name == "s16" and frame.sample_rate == s.rate and frame.layout.name == s.layout
            )
        if self._direct:
            return self._encode([frame])
        return super().push(frame)

    def _output_filters(self) -> Filters:
        s = self._settings
        return [("aformat", f"sample_fmts=s16:sample_rates={s.rate}:channel_layouts={s.layout}")]

    def flush(self) -> int:
        count = self._encode(self._chain.push(None)) if self._chain is not None else 0
        if not self._samples:
            return count  # nothing to encode; the pipeline reports empty media
        if self._pending:
            self._feed(self._lame.encode(bytes(self._pending)))
        self._feed(self._lame.flush(), final=True)
        if self._last is not None:
            padding = max(0, self._produced - self._skip - self._samples)
            self._last.set_sidedata(_skip_samples(0, padding))
            self._gate.mux([self._last])
        return count

    def _encode(self, frames: list[Any]) -> int:
        for frame in frames:
            if self._start is None:
                self._start = 0 if self._direct or frame.pts is None else round(
                    frame.pts * frame.time_base / self._time_base)
            self._samples += frame.samples
            self._pending += memoryview(frame.planes[0])[: frame.samples * self._channels * 2]
            if len(self._pending) >= LAME_CHUNK_BYTES:
                self._feed(self._lame.encode(bytes(self._pending)))
                self._pending.clear()
        return len(frames)

    def _feed(self, data: bytes, final: bool = False) -> None:
        """Cut LAME's output into frames and mux them, always holding back the newest (it may be the last)."""
        packets = self._parser.parse(data) if data else []
        if final:
            packets += self._parser.parse(None)
        for packet in packets:
            packet.pts = packet.dts = (self._start or 0) + self._produced - self._skip
            packet.duration = self._frame_samples
            packet.time_base = self._time_base
            packet.stream = self._stream
            if self._produced == 0:
                packet.set_sidedata(_skip_samples(self._skip, 0))
            self._produced += self._frame_samples
            if self._last is not None:
                self._gate.mux([self._last])
            self._last = packet


def _skip_samples(start: int, end: int) -> Any:
    """FFmpeg's ``skip_samples`` packet side data: samples to drop at the start and at the end."""
    from av.packet import PacketSideData, packet_sidedata_type_from_literal

    # The constructor (type, size) is PyAV's public Cython signature; its stubs only declare the factory methods.
    data = PacketSideData(packet_sidedata_type_from_literal("skip_samples"), 10)  # type: ignore[call-arg]
    data.update(struct.pack("<IIBB", start, end, 0, 0))
    return data


class AudioConvertTool(Tool):
    """``audio-convert``: any audio (or the audio of a video) to MP3, M4A, Opus, Ogg, FLAC or WAV."""

    id = "audio-convert"
    category = "audio"
    title = "Convert audio"
    description = "Convert audio between MP3, M4A (AAC), Opus, Ogg, FLAC and WAV; change bitrate, rate, channels; trim."
    accepts = MEDIA_FORMATS
    produces = ("mp3", "m4a", "opus", "ogg", "flac", "wav")
    params = AudioParams
    engines = (PYAV,)
    timeout_seconds = 3600.0

    def convert(self, ctx: Context, source: InputFile, progress: Callable[[float], None]) -> None:
        with engine_errors():
            convert_audio(ctx, source, progress, ctx.params, ctx.output_format)



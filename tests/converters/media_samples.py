"""Fixture builders for the audio and video tests: tones, colour bars and clips with both, made with PyAV.

Everything is generated at test time and kept short and small so the tests stay fast.
Also here: ``probe``, the independent read-back used to check outputs.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import av
import numpy as np

# format id -> (muxer, audio encoder, sample rate, encoder options)
AUDIO_WRITERS: dict[str, tuple[str, str, int, dict[str, str]]] = {
    "wav": ("wav", "pcm_s16le", 44100, {}),
    "flac": ("flac", "flac", 44100, {}),
    "mp3": ("mp3", "libmp3lame", 44100, {}),
    "ogg": ("ogg", "vorbis", 44100, {"strict": "experimental"}),
    "opus": ("opus", "libopus", 48000, {}),
    "m4a": ("ipod", "aac", 44100, {}),
    "aac": ("adts", "aac", 44100, {}),
    "aiff": ("aiff", "pcm_s16be", 44100, {}),
    "wma": ("asf", "wmav2", 44100, {}),
    "webm": ("webm", "libopus", 48000, {}),
    "amr": ("amr", "libopencore_amrnb", 8000, {}),  # mono only
    "ac3": ("ac3", "ac3", 48000, {}),
    "eac3": ("eac3", "eac3", 48000, {}),
    "wv": ("wv", "wavpack", 44100, {}),
    "caf": ("caf", "alac", 44100, {}),
}

# format id -> (muxer, video encoder, audio encoder, audio rate, muxer options)
CLIP_WRITERS: dict[str, tuple[str, str, str, int, dict[str, str]]] = {
    "mp4": ("mp4", "libx264", "aac", 44100, {}),
    "mov": ("mov", "libx264", "aac", 48000, {}),
    "mkv": ("matroska", "mpeg4", "libmp3lame", 44100, {}),
    "webm": ("webm", "libvpx-vp9", "libopus", 48000, {}),
    "avi": ("avi", "mpeg4", "libmp3lame", 44100, {}),
    "mpeg": ("mpeg", "mpeg2video", "mp2", 44100, {}),
    "flv": ("flv", "flv", "libmp3lame", 44100, {}),
    "wmv": ("asf", "wmv2", "wmav2", 44100, {}),
    "3gp": ("3gp", "libx264", "aac", 44100, {}),
    "m4v": ("mp4", "libx264", "aac", 44100, {"brand": "M4V "}),
    "ts": ("mpegts", "libx264", "aac", 44100, {}),
    "m2ts": ("mpegts", "libx264", "aac", 44100, {"mpegts_m2ts_mode": "1"}),
    "mxf": ("mxf", "mpeg2video", "pcm_s16le", 48000, {}),
    "dv": ("dv", "dvvideo", "pcm_s16le", 48000, {}),  # 720x576 at 25 fps (PAL) only
    "h264": ("h264", "libx264", "", 0, {}),  # elementary streams: video only
    "hevc": ("hevc", "libx265", "", 0, {}),
}

BARS = np.array(
    [[235, 235, 235], [235, 235, 16], [16, 235, 235], [16, 235, 16], [235, 16, 235], [235, 16, 16], [16, 16, 235]],
    dtype=np.uint8,
)


def music(seconds: float, rate: int, channels: int, amplitude: float = 0.3, seed: int = 1) -> np.ndarray:
    """A chord with a little noise: busy enough that encoders spend their bitrate. Shape (channels, samples)."""
    t = np.arange(int(seconds * rate)) / rate
    chord = sum(np.sin(2 * np.pi * f * t) for f in (220.0, 277.2, 329.6, 440.0)) / 4
    noise = np.random.default_rng(seed).normal(0, 0.15, size=(channels, t.size))
    return (amplitude * (chord[None, :] + noise)).astype(np.float32)


def _encode_audio(out: av.container.OutputContainer, stream: av.AudioStream, samples: np.ndarray, rate: int) -> None:
    layout = "mono" if samples.shape[0] == 1 else "stereo"
    chunk = 1024
    for offset in range(0, samples.shape[1], chunk):
        data = np.ascontiguousarray(samples[:, offset : offset + chunk])
        frame = av.AudioFrame.from_ndarray(data, format="fltp", layout=layout)
        frame.rate = rate
        frame.pts = offset
        frame.time_base = Fraction(1, rate)
        out.mux(stream.encode(frame))
    out.mux(stream.encode(None))


def write_audio(
    path: Path,
    fmt: str,
    seconds: float = 2.0,
    channels: int = 2,
    amplitude: float = 0.3,
    rate: int | None = None,
    click: bool = False,
) -> Path:
    """Write ``seconds`` of :func:`music` as a real ``fmt`` file; ``click`` adds one loud, short burst."""
    muxer, codec, default_rate, options = AUDIO_WRITERS[fmt]
    rate = rate or default_rate
    samples = music(seconds, rate, channels, amplitude)
    if click:
        # A smooth 1 kHz burst: its true peak (between samples) is its sample peak, 0.99.
        burst = np.arange(int(0.02 * rate))
        middle = samples.shape[1] // 2
        wave = np.sin(2 * np.pi * 1000 * burst / rate) * np.hanning(burst.size)
        samples[:, middle : middle + burst.size] = 0.99 * wave
    with av.open(str(path), "w", format=muxer) as out:
        stream = out.add_stream(codec, rate=rate, options=dict(options))
        stream.layout = "mono" if channels == 1 else "stereo"
        if codec in ("wmav2", "aac", "libmp3lame", "libopus", "vorbis", "ac3", "eac3"):
            stream.bit_rate = 128_000
        if codec == "libopencore_amrnb":
            stream.bit_rate = 12_200
        _encode_audio(out, stream, samples, rate)
    return path


def bars_frame(index: int, width: int, height: int, white: bool = False) -> np.ndarray:
    """Colour bars that slide one bar per frame (so encoders see motion); all white when ``white``."""
    if white:
        return np.full((height, width, 3), 255, dtype=np.uint8)
    columns = ((np.arange(width) * 7) // width + index) % 7
    return np.ascontiguousarray(np.broadcast_to(BARS[columns][None, :, :], (height, width, 3)))


def write_clip(
    path: Path,
    fmt: str,
    seconds: float = 2.0,
    size: tuple[int, int] = (160, 120),
    fps: int = 15,
    audio: bool = True,
    video: bool = True,
    flash_at: float | None = None,
    rotation: int = 0,
    vcodec: str | None = None,
    sar: Fraction | None = None,
) -> Path:
    """Write a clip of colour bars and a tone; with ``flash_at``, one white frame and a beep at that time only.

    ``rotation`` stores a display matrix, as phones do for portrait video; ``sar`` makes the pixels
    non-square (anamorphic video); ``vcodec`` overrides the encoder.
    """
    muxer, default_vcodec, acodec, rate, mux_options = CLIP_WRITERS[fmt]
    vcodec = vcodec or default_vcodec
    width, height = size
    with av.open(str(path), "w", format=muxer, container_options=dict(mux_options)) as out:
        vstream = None
        if video:
            vstream = out.add_stream(vcodec, rate=fps)
            vstream.width, vstream.height, vstream.pix_fmt = width, height, "yuv420p"
            if vcodec == "libvpx-vp9":
                vstream.codec_context.options = {"deadline": "realtime", "cpu-used": "8"}
            if rotation:
                vstream.set_display_rotation(rotation)
            if sar:
                vstream.codec_context.sample_aspect_ratio = sar
        astream = None
        if audio and acodec:
            astream = out.add_stream(acodec, rate=rate)
            astream.layout = "stereo"
            if not acodec.startswith("pcm_"):
                astream.bit_rate = 128_000
        if vstream is not None:
            flash_index = round(flash_at * fps) if flash_at is not None else -1
            for i in range(int(seconds * fps)):
                frame = av.VideoFrame.from_ndarray(bars_frame(i, width, height, i == flash_index), format="rgb24")
                frame.pts = i
                frame.time_base = Fraction(1, fps)
                out.mux(vstream.encode(frame))
            out.mux(vstream.encode(None))
        if astream is not None:
            samples = music(seconds, rate, 2)
            if flash_at is not None:
                samples = np.zeros_like(samples)
                begin = int(flash_at * rate)
                t = np.arange(int(0.1 * rate)) / rate
                samples[:, begin : begin + t.size] = 0.8 * np.sin(2 * np.pi * 1000 * t)
            _encode_audio(out, astream, samples, rate)
    return path


@dataclass
class StreamInfo:
    kind: str  # "audio" or "video"
    codec: str
    duration: float
    bitrate: float  # bits per second, from the packets' sizes over the stream's span
    width: int = 0
    height: int = 0
    rate: int = 0
    channels: int = 0


@dataclass
class MediaInfo:
    format: str
    duration: float
    streams: list[StreamInfo]

    def of(self, kind: str) -> StreamInfo:
        return next(s for s in self.streams if s.kind == kind)

    def count(self, kind: str) -> int:
        return sum(1 for s in self.streams if s.kind == kind)


def probe(path: Path) -> MediaInfo:
    """Read a file back with PyAV: codecs, durations, real bitrates (packet bytes over time), sizes."""
    with av.open(str(path)) as container:
        sizes = {s.index: 0 for s in container.streams}
        spans: dict[int, tuple[float, float]] = {}
        for packet in container.demux():
            if packet.size == 0 or packet.pts is None:
                continue
            index = packet.stream.index
            sizes[index] += packet.size
            begin = float(packet.pts * packet.time_base)
            end = begin + float((packet.duration or 0) * packet.time_base)
            low, high = spans.get(index, (begin, end))
            spans[index] = (min(low, begin), max(high, end))
        streams = []
        for s in container.streams:
            if s.type not in ("audio", "video"):
                continue  # data streams such as a timecode track
            low, high = spans.get(s.index, (0.0, 0.0))
            length = high - max(low, 0.0)
            info = StreamInfo(
                kind=s.type,
                codec=s.codec.canonical_name,
                duration=length,
                bitrate=sizes[s.index] * 8 / length if length > 0 else 0.0,
            )
            if s.type == "video":
                info.width, info.height = s.codec_context.width, s.codec_context.height
            if s.type == "audio":
                info.rate, info.channels = s.codec_context.sample_rate, s.codec_context.channels
            streams.append(info)
        return MediaInfo(format=container.format.name, duration=(container.duration or 0) / 1_000_000, streams=streams)


def write_empty_wav(path: Path) -> Path:
    """A WAV header that announces no samples at all."""
    with av.open(str(path), "w", format="wav") as out:
        stream = out.add_stream("pcm_s16le", rate=44100)
        stream.layout = "stereo"
        out.start_encoding()
    return path


def write_truncated(source: Path, path: Path, keep: float = 0.5) -> Path:
    """The first ``keep`` part of ``source``'s bytes (an MP4 cut short loses its index)."""
    data = source.read_bytes()
    path.write_bytes(data[: int(len(data) * keep)])
    return path


def write_playlists(folder: Path, canary: Path | str) -> dict[str, Path]:
    """Playlists that point FFmpeg at ``canary`` (a path, or a URL such as ``file:///...`` or ``http://...``):
    HLS and ffconcat, under their own names and under media names."""
    hls = f"#EXTM3U\n#EXT-X-TARGETDURATION:10\n#EXTINF:10.0,\n{canary}\n#EXT-X-ENDLIST\n"
    concat = f"ffconcat version 1.0\nfile '{canary}'\n"
    files = {
        "m3u8": folder / "list.m3u8",
        "ffconcat": folder / "list.ffconcat",
        "avi": folder / "movie.avi",
        "mkv": folder / "movie.mkv",
    }
    files["m3u8"].write_text(hls)
    files["ffconcat"].write_text(concat)
    files["avi"].write_text(hls)
    files["mkv"].write_text(concat)
    return files


def flash_and_beep(path: Path) -> tuple[float, float]:
    """When the white frame shows and when the beep starts, in the file's own timeline (seconds)."""
    flash = beep = -1.0
    with av.open(str(path)) as container:
        for frame in container.decode(video=0):
            if frame.to_ndarray(format="gray").mean() > 200:
                flash = float(frame.time)
                break
        container.seek(0)
        for frame in container.decode(audio=0):
            first = first_channel(frame)
            loud = np.nonzero(np.abs(first) > 0.3)[0]
            if loud.size:
                beep = float(frame.time) + int(loud[0]) / frame.sample_rate
                break
    return flash, beep


def first_channel(frame: av.AudioFrame) -> np.ndarray:
    """The first channel of an audio frame as floats in -1..1, whatever the sample format."""
    data = frame.to_ndarray()
    channel = data[0] if frame.format.is_planar else data[0][:: frame.layout.nb_channels]
    if channel.dtype.kind == "i":
        return channel.astype(np.float64) / np.iinfo(channel.dtype).max
    return channel.astype(np.float64)


def peak(path: Path) -> float:
    """The largest absolute sample value (0..1) in the first audio stream."""
    with av.open(str(path)) as container:
        return max(float(np.abs(first_channel(frame)).max()) for frame in container.decode(audio=0))


def loudness(path: Path) -> float:
    """Integrated loudness (LUFS) measured by FFmpeg's EBU R128 meter."""
    with av.open(str(path)) as container:
        stream = container.streams.audio[0]
        graph = av.filter.Graph()
        source = graph.add_abuffer(template=stream)
        meter = graph.add("ebur128", "metadata=1")
        sink = graph.add("abuffersink")
        graph.link_nodes(source, meter, sink).configure()
        value = -70.0

        def drain() -> None:
            nonlocal value
            while True:
                try:
                    out = sink.pull()
                except (BlockingIOError, av.error.EOFError):
                    return
                if "lavfi.r128.I" in out.metadata:
                    value = float(out.metadata["lavfi.r128.I"])

        for frame in container.decode(stream):
            source.push(frame)
            drain()
        source.push(None)
        drain()
        return value


def mean_brightness(path: Path) -> float:
    """Average grey level (0-255) of a picture file."""
    from PIL import Image, ImageStat

    with Image.open(path) as image:
        return float(ImageStat.Stat(image.convert("L")).mean[0])


def write_audiobook(path: Path, parts: int = 3, seconds_each: float = 2.0) -> Path:
    """An M4B-style AAC file in an MP4 (ipod) container with one chapter per part, "Part 1" ...; the
    chapters are written by FFmpeg's own muxer."""
    wav = write_audio(path.with_suffix(".wav"), "wav", seconds=parts * seconds_each)
    ms = round(seconds_each * 1000)
    with av.open(str(wav)) as source, av.open(str(path), "w", format="ipod") as out:
        stream = out.add_stream("aac", rate=44100)
        out.set_chapters([{"id": i, "start": i * ms, "end": (i + 1) * ms, "time_base": Fraction(1, 1000),
                           "metadata": {"title": f"Part {i + 1}"}} for i in range(parts)])
        for frame in source.decode(audio=0):
            frame.pts = None
            for packet in stream.encode(frame):
                out.mux(packet)
        for packet in stream.encode(None):
            out.mux(packet)
    return path


def chapters(path: Path) -> list[tuple[float, float, str | None]]:
    """(start, end, title) of each chapter of a media file, in seconds, as FFmpeg reads them back."""
    with av.open(str(path)) as container:
        return [(round(float(c["start"] * c["time_base"]), 2), round(float(c["end"] * c["time_base"]), 2),
                 c["metadata"].get("title")) for c in container.chapters() if c["time_base"] is not None]

"""MP3 encoding with LAME: the system's ``libmp3lame`` when there is one, else the ``lameenc`` wheel.

Both are LAME 3.100 driven with the settings FFmpeg uses (CBR, joint stereo for two
channels, quality 3). They differ in speed only: a distribution's build (the one its
``ffmpeg`` uses) needs about 0.7 times the CPU of the ``lameenc`` wheel's, which in turn
needs a third of the LAME inside the ``av`` wheel. The setting ``mp3_encoder`` picks:
``auto`` (system, then wheel), ``system`` or ``lameenc``.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import sys
from pathlib import Path
from typing import Any, Protocol

from converters.base import ConversionError

JOINT_STEREO, MONO = 1, 3  # LAME's MPEG_mode
LAME_QUALITY = 3  # LAME's own default, which FFmpeg keeps
ENCODER_DELAY = 576  # lame_get_encoder_delay() for these settings; the lameenc wheel does not expose it


class Mp3Encoder(Protocol):
    """Interleaved signed 16-bit PCM in, MP3 frames out (no Xing/LAME header: the muxer writes it)."""

    name: str
    delay: int

    def encode(self, pcm: bytes) -> bytes: ...

    def flush(self) -> bytes: ...


class SystemLame:
    """``libmp3lame`` through ctypes: the library the distribution's ``ffmpeg`` links."""

    name = "libmp3lame (system)"

    def __init__(self, lib: Any, rate: int, channels: int, kbps: int) -> None:
        self._lib = lib
        self._channels = channels
        self._gfp = lib.lame_init()
        if not self._gfp:
            raise ConversionError("engine_error", "LAME could not start.")
        for setter, value in (
            (lib.lame_set_in_samplerate, rate),
            (lib.lame_set_out_samplerate, rate),
            (lib.lame_set_num_channels, channels),
            (lib.lame_set_mode, MONO if channels == 1 else JOINT_STEREO),
            (lib.lame_set_brate, kbps),
            (lib.lame_set_quality, LAME_QUALITY),
            (lib.lame_set_bWriteVbrTag, 0),
        ):
            setter(self._gfp, value)
        if lib.lame_init_params(self._gfp) < 0:
            lib.lame_close(self._gfp)
            raise ConversionError("invalid_params", f"LAME cannot encode {channels} channels at {rate} Hz, {kbps}k.")
        self.delay = int(lib.lame_get_encoder_delay(self._gfp))
        self._buffer = ctypes.create_string_buffer(7200)

    def encode(self, pcm: bytes) -> bytes:
        samples = len(pcm) // (2 * self._channels)
        size = samples * 5 // 4 + 7200  # LAME's worst case for one call
        if len(self._buffer) < size:
            self._buffer = ctypes.create_string_buffer(size)
        if self._channels == 1:
            written = self._lib.lame_encode_buffer(self._gfp, pcm, None, samples, self._buffer, size)
        else:
            written = self._lib.lame_encode_buffer_interleaved(self._gfp, pcm, samples, self._buffer, size)
        return self._result(written)

    def flush(self) -> bytes:
        written = self._lib.lame_encode_flush(self._gfp, self._buffer, len(self._buffer))
        data = self._result(written)
        self._lib.lame_close(self._gfp)
        self._gfp = None
        return data

    def _result(self, written: int) -> bytes:
        if written < 0:
            raise ConversionError("engine_error", f"LAME failed to encode (error {written}).")
        return ctypes.string_at(self._buffer, written)

    def __del__(self) -> None:
        if getattr(self, "_gfp", None):
            self._lib.lame_close(self._gfp)


class WheelLame:
    """The ``lameenc`` wheel: LAME statically linked, on every platform the installer targets."""

    name = "lameenc"
    delay = ENCODER_DELAY

    def __init__(self, rate: int, channels: int, kbps: int) -> None:
        import lameenc

        self._lame = lameenc.Encoder()
        self._lame.set_in_sample_rate(rate)
        self._lame.set_out_sample_rate(rate)
        self._lame.set_channels(channels)
        self._lame.set_bit_rate(kbps)
        self._lame.set_quality(LAME_QUALITY)

    def encode(self, pcm: bytes) -> bytes:
        return bytes(self._lame.encode(pcm))

    def flush(self) -> bytes:
        return bytes(self._lame.flush())  # lameenc refuses to flush before any input: callers flush only after


def open_encoder(rate: int, channels: int, kbps: int, choice: str = "auto") -> Mp3Encoder:
    """An MP3 encoder for ``choice`` (setting ``mp3_encoder``): ``system``, ``lameenc``, else ``auto``."""
    lib = system_library() if choice != "lameenc" else None
    if lib is not None:
        return SystemLame(lib, rate, channels, kbps)
    if choice == "system":
        raise ConversionError("engine_missing", "mp3_encoder is 'system' but no libmp3lame was found.")
    return WheelLame(rate, channels, kbps)


@functools.cache
def system_library() -> Any:
    """The system's (or the bundle's) libmp3lame with its prototypes declared, or None."""
    for candidate in _candidates():
        try:
            lib = ctypes.CDLL(candidate)
            _declare(lib)
        except (OSError, AttributeError):
            continue
        return lib
    return None


def _candidates() -> list[str]:
    names = {"linux": ["libmp3lame.so.0"], "darwin": ["libmp3lame.0.dylib", "libmp3lame.dylib"]}.get(
        sys.platform, ["libmp3lame.dll", "mp3lame.dll"]
    )
    bundle = getattr(sys, "_MEIPASS", None)  # a frozen app carries the build machine's copy
    found = [str(Path(bundle) / name) for name in names if (Path(bundle) / name).exists()] if bundle else []
    system = ctypes.util.find_library("mp3lame")
    return found + ([system] if system else [])


def _declare(lib: Any) -> None:
    gfp, c_int, buf = ctypes.c_void_p, ctypes.c_int, ctypes.c_char_p
    lib.lame_init.restype = gfp
    lib.lame_init.argtypes = []
    for setter in ("in_samplerate", "out_samplerate", "num_channels", "mode", "brate", "quality", "bWriteVbrTag"):
        function = getattr(lib, f"lame_set_{setter}")
        function.argtypes, function.restype = [gfp, c_int], c_int
    for name in ("lame_init_params", "lame_close", "lame_get_encoder_delay"):
        function = getattr(lib, name)
        function.argtypes, function.restype = [gfp], c_int
    lib.lame_encode_buffer.argtypes = [gfp, buf, buf, c_int, buf, c_int]
    lib.lame_encode_buffer.restype = c_int
    lib.lame_encode_buffer_interleaved.argtypes = [gfp, buf, c_int, buf, c_int]
    lib.lame_encode_buffer_interleaved.restype = c_int
    lib.lame_encode_flush.argtypes = [gfp, buf, c_int]
    lib.lame_encode_flush.restype = c_int

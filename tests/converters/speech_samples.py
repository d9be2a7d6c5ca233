"""Sample media for the transcription tests: speech from espeak-ng, wrapped with PyAV."""

from __future__ import annotations

import shutil
import subprocess
from fractions import Fraction
from pathlib import Path

import av
import numpy as np

SENTENCE = "The weather is nice today, and the children are playing football in the garden."


def espeak_available() -> bool:
    return shutil.which("espeak-ng") is not None


def spoken_wav(path: Path, text: str = SENTENCE, rate: int = 140) -> Path:
    """``text`` spoken by espeak-ng into a 22 kHz mono WAV."""
    # no timeout of its own: pytest-timeout ends a hung test, and a slow machine is not a failure
    subprocess.run(["espeak-ng", "-s", str(rate), "-w", str(path), text], check=True)
    return path


def _samples(wav: Path) -> tuple[np.ndarray, int]:
    with av.open(str(wav)) as container:
        stream = container.streams.audio[0]
        rate = stream.rate
        frames = [f.to_ndarray().reshape(-1) for f in container.decode(stream)]
    return np.concatenate(frames).astype(np.int16), rate


def repeated_wav(path: Path, wav: Path, times: int) -> Path:
    """``wav`` played ``times`` times in a row with a second of silence between, as one WAV."""
    samples, rate = _samples(wav)
    gap = np.zeros(rate, dtype=np.int16)
    joined = np.concatenate([np.concatenate([samples, gap]) for _ in range(times)])
    _write_audio(path, joined, rate)
    return path


def _write_audio(path: Path, samples: np.ndarray, rate: int) -> None:
    with av.open(str(path), "w", format="wav") as out:
        stream = out.add_stream("pcm_s16le", rate=rate, layout="mono")
        for start in range(0, len(samples), rate):
            block = samples[start : start + rate].reshape(1, -1)
            frame = av.AudioFrame.from_ndarray(block, format="s16", layout="mono")
            frame.rate = rate
            for packet in stream.encode(frame):
                out.mux(packet)
        for packet in stream.encode(None):
            out.mux(packet)


def video_with_speech(path: Path, wav: Path | None, size: int = 64, fps: int = 10) -> Path:
    """An MP4 with a small grey H.264 picture and, when ``wav`` is given, its speech as AAC."""
    samples, rate = _samples(wav) if wav is not None else (np.zeros(3 * 16000, dtype=np.int16), 16000)
    seconds = len(samples) / rate
    with av.open(str(path), "w", format="mp4") as out:
        video = out.add_stream("libx264", rate=fps)
        video.width = video.height = size
        video.pix_fmt = "yuv420p"
        audio = out.add_stream("aac", rate=rate, layout="mono") if wav is not None else None
        picture = np.full((size, size, 3), 128, dtype=np.uint8)
        for n in range(int(seconds * fps) + 1):
            frame = av.VideoFrame.from_ndarray(picture, format="rgb24")
            frame.pts, frame.time_base = n, Fraction(1, fps)
            for packet in video.encode(frame):
                out.mux(packet)
        for packet in video.encode(None):
            out.mux(packet)
        if audio is not None:
            floats = (samples.astype(np.float32) / 32768.0).reshape(1, -1)
            step = 1024
            for start in range(0, floats.shape[1], step):
                frame = av.AudioFrame.from_ndarray(
                    np.ascontiguousarray(floats[:, start : start + step]), format="fltp", layout="mono"
                )
                frame.rate, frame.pts = rate, start
                for packet in audio.encode(frame):
                    out.mux(packet)
            for packet in audio.encode(None):
                out.mux(packet)
    return path

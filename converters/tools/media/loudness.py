"""Loudness normalization: measure a file's integrated loudness (EBU R128), give the gain to the target."""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from converters.base import Context
from converters.engines.media.container import (
    Window,
    audio_stream,
    open_input,
)
from converters.engines.media.pipeline import (
    Chain,
    Transcoder,
    audio_source_args,
    build_chain,
    run_streams,
    trim_filters,
)

if TYPE_CHECKING:
    pass


TARGET_LUFS = -16.0  # the usual loudness for podcasts and streaming


PEAK_CEILING_DB = -1.0  # true-peak headroom kept when normalizing, so lossy encoding does not clip


class LoudnessMeter:
    """An encoder-shaped sink that measures EBU R128 loudness with FFmpeg's ``ebur128`` filter."""

    def __init__(self, window: Window) -> None:
        self._window = window
        self._chain: Chain | None = None
        self.measured: dict[str, str] = {}

    def push(self, frame: Any) -> int:
        if self._chain is None:
            filters = [*trim_filters(self._window, audio=True), ("ebur128", "peak=true:metadata=1")]
            self._chain = build_chain(audio_source_args(frame), True, filters)
        return self._keep(self._chain.push(frame))

    def flush(self) -> int:
        return self._keep(self._chain.push(None)) if self._chain is not None else 0

    def _keep(self, frames: list[Any]) -> int:
        for frame in frames:
            if "lavfi.r128.I" in frame.metadata:
                self.measured = dict(frame.metadata)  # the values are running totals: the last one wins
        return len(frames)


def measure_gain(ctx: Context, path: Path, window: Window, progress: Callable[[float], None]) -> float:
    """First pass of ``normalize``: the gain (dB) that brings integrated loudness to ``TARGET_LUFS``.

    The gain is linear (the dynamics are kept); it is lowered when it would push true
    peaks above ``PEAK_CEILING_DB``, and the job notes say so.
    """
    with contextlib.closing(open_input(path)) as container:
        stream = audio_stream(container)
        meter = LoudnessMeter(window)
        errors: list[str] = []
        run_streams(ctx, container, {stream: Transcoder(stream, meter, errors)}, window, progress, errors)
    loudness = float(meter.measured.get("lavfi.r128.I", "-70"))
    if loudness <= -70.0:
        ctx.notes.append("not normalized: the audio is silent")
        return 0.0
    gain = TARGET_LUFS - loudness
    peak = float(meter.measured.get("lavfi.r128.true_peak", "0"))
    if peak > 0:
        headroom = PEAK_CEILING_DB - 20 * math.log10(peak)
        if gain > headroom:
            ctx.notes.append(
                f"normalized to {loudness + headroom:.1f} LUFS, not {TARGET_LUFS:g}: peaks would have clipped"
            )
            gain = headroom
    ctx.notes.append(f"loudness {loudness:.1f} LUFS, gain {gain:+.1f} dB")
    return gain


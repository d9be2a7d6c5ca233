"""Benchmark the PyAV media tools against the ``ffmpeg`` command line with the same encoder settings.

Run: ``.venv/bin/python bench/bench_media.py [--quick] [--repeat N]``

Cases (one run measures both sides, so the ratios are fair on a busy machine):

* a 60 s 1080p30 clip (H.264 + AAC, generated) -> MP4, H.264 CRF 23 preset medium, audio copied;
* the same clip -> WebM, VP9 CRF 31 (b:v 0, deadline good, cpu-used 4, row-mt), Opus 96 kbps;
* a 10-minute WAV -> MP3, 192 kbps CBR.

``--quick`` uses a 10 s clip and a 2-minute WAV. Prints wall-time and CPU-time ratios (tool / CLI;
below 1 is faster) and the output-size ratio for each case. Needs ``ffmpeg`` on PATH
(Debian: ``apt-get install ffmpeg``); it is the baseline, the tools never use it.
"""

from __future__ import annotations

import argparse
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from converters.base import Context, InputFile, ToolEnv  # noqa: E402
from converters.catalogue import load_catalogue  # noqa: E402


@dataclass
class Case:
    name: str
    tool: str
    source: Path
    output_format: str
    params: dict[str, Any]
    cli_args: list[str]  # everything between "-i SOURCE" and the output path
    settings: dict[str, Any] = field(default_factory=dict)  # the tool's settings (ToolEnv.settings)


def make_clip(path: Path, seconds: int) -> None:
    """A 1080p30 test pattern with moving content and grain, plus a tone, as H.264 + AAC."""
    subprocess.run(
        ["ffmpeg", "-v", "error", "-y",
         "-f", "lavfi", "-i", f"testsrc2=size=1920x1080:rate=30:duration={seconds},noise=alls=6:allf=t",
         "-f", "lavfi", "-i", f"sine=frequency=440:sample_rate=48000:duration={seconds}",
         "-c:v", "libx264", "-preset", "veryfast", "-crf", "18", "-pix_fmt", "yuv420p",
         "-c:a", "aac", "-b:a", "128k", "-ac", "2", str(path)],
        check=True, timeout=1800,
    )


def make_wav(path: Path, seconds: int) -> None:
    """Stereo 44.1 kHz 16-bit: a tone over pink noise, so the MP3 encoder has real work."""
    subprocess.run(
        ["ffmpeg", "-v", "error", "-y",
         "-f", "lavfi", "-i", f"anoisesrc=color=pink:amplitude=0.2:sample_rate=44100:duration={seconds}",
         "-f", "lavfi", "-i", f"sine=frequency=440:sample_rate=44100:duration={seconds}",
         "-filter_complex", "[0][1]amix=inputs=2,pan=stereo|c0=c0|c1=c0", "-c:a", "pcm_s16le", str(path)],
        check=True, timeout=600,
    )


def run_tool(case: Case, out_dir: Path) -> Path:
    tool = load_catalogue().get(case.tool)
    assert tool is not None
    out_dir.mkdir(parents=True, exist_ok=True)
    ctx = Context(
        inputs=[InputFile(case.source, case.source.suffix.lstrip("."), case.source.name)],
        params=tool.params.model_validate(case.params),
        output_format=case.output_format,
        out_dir=out_dir,
        env=ToolEnv(settings=case.settings),
    )
    tool.run(ctx)
    return next(p for p in out_dir.iterdir() if p.is_file())


def run_cli(case: Case, out_dir: Path) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / f"cli.{case.output_format}"
    subprocess.run(["ffmpeg", "-v", "error", "-y", "-i", str(case.source), *case.cli_args, str(target)],
                   check=True, timeout=7200)
    return target


def cpu_seconds() -> float:
    """User + system CPU of this process and its finished children (the CLI runs as a child)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def timed(fn: Any, *args: Any) -> tuple[float, float, Path]:
    """Wall seconds, CPU seconds (all threads) and the output of ``fn(*args)``."""
    began, cpu = time.perf_counter(), cpu_seconds()
    out = fn(*args)
    return time.perf_counter() - began, cpu_seconds() - cpu, out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="10 s clip and 2-minute WAV instead of 60 s and 10 min")
    parser.add_argument("--repeat", type=int, default=1, help="runs per side; the fastest counts")
    parser.add_argument("--only", choices=("h264", "vp9", "mp3"), help="run one case")
    parser.add_argument("--mp3-encoder", default="auto", choices=("auto", "system", "lameenc"),
                        help="the tool's MP3 encoder (setting mp3_encoder): system libmp3lame or the lameenc wheel")
    args = parser.parse_args()
    if shutil.which("ffmpeg") is None:
        print("ffmpeg is not on PATH; install it (apt-get install ffmpeg) to get the baseline", file=sys.stderr)
        return 2

    import av

    clip_seconds, wav_seconds = (10, 120) if args.quick else (60, 600)
    cli_version = subprocess.run(["ffmpeg", "-version"], capture_output=True, text=True).stdout.splitlines()[0]
    print(f"mode: {'quick' if args.quick else 'full'} ({clip_seconds} s 1080p clip, {wav_seconds // 60} min WAV), "
          f"repeat {args.repeat}")
    print(f"tools: PyAV {av.__version__}, libavcodec {'.'.join(map(str, av.library_versions['libavcodec']))}")
    print(f"baseline: {cli_version}")

    load_catalogue()  # import every tool module now, so no case pays for it
    with tempfile.TemporaryDirectory(prefix="bench-media-") as tmp:
        work = Path(tmp)
        clip, wav = work / "clip.mp4", work / "tone.wav"
        print("generating inputs ...", flush=True)
        if args.only != "mp3":
            make_clip(clip, clip_seconds)
        make_wav(wav, wav_seconds)
        cases = [
            Case("1080p -> H.264 CRF 23 (MP4)", "video-convert", clip, "mp4",
                 {"videoCodec": "h264", "crf": 23, "preset": "medium"},
                 ["-map", "0:v", "-map", "0:a", "-c:v", "libx264", "-crf", "23", "-preset", "medium",
                  "-pix_fmt", "yuv420p", "-c:a", "copy", "-movflags", "+faststart"]),
            Case("1080p -> VP9 CRF 31 (WebM)", "video-convert", clip, "webm",
                 {"videoCodec": "vp9", "crf": 31, "preset": "medium"},
                 ["-map", "0:v", "-map", "0:a", "-c:v", "libvpx-vp9", "-crf", "31", "-b:v", "0",
                  "-deadline", "good", "-cpu-used", "4", "-row-mt", "1", "-pix_fmt", "yuv420p",
                  "-c:a", "libopus", "-b:a", "96k"]),
            Case(f"{wav_seconds // 60} min WAV -> MP3 192k", "audio-convert", wav, "mp3", {"bitrate": 192},
                 ["-c:a", "libmp3lame", "-b:a", "192k"], {"mp3_encoder": args.mp3_encoder}),
        ]
        if args.only:
            cases = [case for case in cases if args.only in case.name.lower().replace(".", "")]
        print(f"\n{'case':30} {'tool s':>8} {'cli s':>8} {'wall x':>7} {'tool cpu':>9} {'cli cpu':>8} {'cpu x':>6}"
              f" {'size x':>7}")
        worst = 0.0
        for index, case in enumerate(cases):
            best: dict[str, tuple[float, float]] = {}
            outputs: dict[str, Path] = {}
            for attempt in range(args.repeat):
                # Alternate which side goes first so that neither always gets the warmer cache.
                order = [("tool", run_tool), ("cli", run_cli)]
                if attempt % 2:
                    order.reverse()
                for side, fn in order:
                    wall, cpu, out = timed(fn, case, work / f"out-{index}-{side}-{attempt}")
                    previous = best.get(side, (float("inf"), float("inf")))
                    best[side] = (min(previous[0], wall), min(previous[1], cpu))
                    outputs[side] = out
            (tool_wall, tool_cpu), (cli_wall, cli_cpu) = best["tool"], best["cli"]
            size = outputs["tool"].stat().st_size / outputs["cli"].stat().st_size
            worst = max(worst, tool_wall / cli_wall)
            print(f"{case.name:30} {tool_wall:8.2f} {cli_wall:8.2f} {tool_wall / cli_wall:7.3f} {tool_cpu:9.2f}"
                  f" {cli_cpu:8.2f} {tool_cpu / cli_cpu:6.3f} {size:7.3f}", flush=True)
        print(f"\nworst wall-time ratio {worst:.3f} (goal: <= 1.05 at size ratio ~1.0). On a shared machine wall time"
              " is noisy; the CPU-time ratio shows the work done.")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

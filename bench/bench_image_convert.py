"""image-convert vs calling Pillow directly: PNG photos (4000x3000) to JPEG and to WebP.

Run: .venv/bin/python bench/bench_image_convert.py [--count 100] [--size 4000x3000]

Both sides convert the same files in the same run, one after the other, at the
same quality (85, the tool's default). The baseline is the plain Pillow call a
script would write (open, convert to RGB, save); the tool side is the whole tool
as a job's child process runs it (sniffing, params validation, EXIF handling,
atomic write). Prints seconds per image and the overhead ratio tool / direct.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from PIL import Image, ImageDraw  # noqa: E402

from tests.converters.runtool import run_tool  # noqa: E402

QUALITY = 85


def photo(size: tuple[int, int], seed: int) -> Image.Image:
    """Photo-like content: gradients, sensor noise and a few shapes; different for every seed."""
    width, height = size
    red = Image.linear_gradient("L").resize(size).rotate(seed * 37 % 360)
    green = Image.radial_gradient("L").resize(size)
    blue = Image.effect_noise(size, 40 + seed % 30)
    image = Image.blend(Image.merge("RGB", (red, green, blue)), Image.effect_noise(size, 20).convert("RGB"), 0.2)
    draw = ImageDraw.Draw(image)
    for k in range(6):
        x, y = (seed * 131 + k * 577) % width, (seed * 71 + k * 353) % height
        draw.ellipse((x, y, x + width // 6, y + height // 6), fill=((seed * 40 + k * 30) % 256, 90, 160))
    return image


def direct(source: Path, target: Path, fmt: str) -> None:
    with Image.open(source) as image:
        image.convert("RGB").save(target, "JPEG" if fmt == "jpg" else "WEBP", quality=QUALITY)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=100)
    parser.add_argument("--size", default="4000x3000")
    args = parser.parse_args()
    size = tuple(int(v) for v in args.size.split("x"))
    work = Path(tempfile.mkdtemp(prefix="bench-image-convert-"))
    try:
        print(f"making {args.count} photo-like PNGs of {size[0]}x{size[1]} ...", flush=True)
        sources = []
        for seed in range(args.count):
            path = work / f"photo{seed:03d}.png"
            photo(size, seed).save(path, "PNG", compress_level=1)
            sources.append(path)
        print(f"{'target':6} {'direct s/img':>12} {'tool s/img':>11} {'overhead':>9}")
        for fmt in ("jpg", "webp"):
            direct_times, tool_times = [], []
            for index, source in enumerate(sources):
                # Alternate which side goes first so neither always gets the warmer cache.
                sides = [("direct", direct_times), ("tool", tool_times)]
                for side, times in sides if index % 2 == 0 else sides[::-1]:
                    out = work / f"out-{side}"
                    shutil.rmtree(out, ignore_errors=True)
                    out.mkdir()
                    started = time.perf_counter()
                    if side == "direct":
                        direct(source, out / f"{source.stem}.{fmt}", fmt)
                    else:
                        run_tool("image-convert", [source], out, {"quality": QUALITY}, output_format=fmt)
                    times.append(time.perf_counter() - started)
            d, t = statistics.fmean(direct_times), statistics.fmean(tool_times)
            print(f"{fmt:6} {d:12.3f} {t:11.3f} {t / d:9.2f}x", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

"""pdf-compress vs Ghostscript's /ebook preset on the same image-heavy PDFs, in one run.

Run: .venv/bin/python bench/bench_pdf_compress.py [--repeat 2]
Needs Ghostscript (`apt-get install ghostscript`) for the baseline only.

For each generated PDF and each level this prints the output size relative to
Ghostscript's (`gs -sDEVICE=pdfwrite -dPDFSETTINGS=/ebook`) and how many times
faster the tool is (Ghostscript's wall time / the tool's). Times are the best of
``--repeat`` interleaved runs, each side measured the same way; the CPU-time
ratio is printed too, as it is steadier than wall time on a shared machine.
Goal: ``recommended`` no bigger than /ebook and at least 2x faster.
"""

from __future__ import annotations

import argparse
import io
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import pymupdf  # noqa: E402
from PIL import Image, ImageDraw  # noqa: E402

from tests.converters.runtool import run_tool  # noqa: E402

LEVELS = ("low", "recommended", "extreme")


def photo(size: tuple[int, int], seed: int) -> Image.Image:
    width, height = size
    red = Image.linear_gradient("L").resize(size).rotate(seed * 37 % 360)
    green = Image.radial_gradient("L").resize(size)
    blue = Image.effect_noise(size, 30 + seed % 30)
    image = Image.blend(Image.merge("RGB", (red, green, blue)), Image.effect_noise(size, 20).convert("RGB"), 0.2)
    draw = ImageDraw.Draw(image)
    for k in range(5):
        x, y = (seed * 131 + k * 577) % width, (seed * 71 + k * 353) % height
        draw.ellipse((x, y, x + width // 5, y + height // 5), fill=((seed * 40 + k * 30) % 256, 90, 160))
    return image


def scanned_photos(path: Path) -> None:
    """8 pages, each a 300-dpi JPEG photo (q92) filling most of an A4 page, with a caption."""
    doc = pymupdf.open()
    for n in range(8):
        page = doc.new_page()
        buffer = io.BytesIO()
        photo((2300, 2900), n).save(buffer, "JPEG", quality=92)
        page.insert_image(pymupdf.Rect(40, 60, 555, 710), stream=buffer.getvalue())
        page.insert_text((40, 740), f"Photo {n + 1}: caption text that must stay selectable.", fontsize=12)
    doc.save(path, garbage=3, deflate=True)


def report_with_figures(path: Path) -> None:
    """12 pages of text, each with two lossless (Flate) photos of 1600x1200 shown at ~250 dpi."""
    doc = pymupdf.open()
    for n in range(12):
        page = doc.new_page()
        for k, top in enumerate((90, 420)):
            buffer = io.BytesIO()
            photo((1600, 1200), 100 + 2 * n + k).save(buffer, "PNG", compress_level=6)
            page.insert_image(pymupdf.Rect(100, top, 495, top + 296), stream=buffer.getvalue())
        body = f"Section {n + 1}. " + "Body text of the report goes on. " * 40
        page.insert_textbox(pymupdf.Rect(60, 730, 535, 820), body, fontsize=8)
    doc.save(path, garbage=3, deflate=True)


def brochure(path: Path) -> None:
    """4 pages mixing a JPEG photo, a PNG photo with transparency and text."""
    doc = pymupdf.open()
    for n in range(4):
        page = doc.new_page()
        buffer = io.BytesIO()
        photo((3000, 2000), 200 + n).save(buffer, "JPEG", quality=95)
        page.insert_image(pymupdf.Rect(40, 40, 555, 383), stream=buffer.getvalue())
        overlay = photo((1200, 900), 300 + n).convert("RGBA")
        overlay.putalpha(Image.linear_gradient("L").resize((1200, 900)))
        buffer = io.BytesIO()
        overlay.save(buffer, "PNG")
        page.insert_image(pymupdf.Rect(300, 420, 555, 611), stream=buffer.getvalue())
        page.insert_text((40, 440), f"Brochure page {n + 1}", fontsize=28)
    doc.save(path, garbage=3, deflate=True)


def timed(action: Callable[[], Path]) -> tuple[float, float, Path]:
    """Wall seconds, CPU seconds (this process and its children) and the output of ``action``."""
    def cpu() -> float:
        own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime

    wall, used = time.perf_counter(), cpu()
    output = action()
    return time.perf_counter() - wall, cpu() - used, output


def ghostscript(source: Path, target: Path) -> Path:
    command = ["gs", "-q", "-dNOPAUSE", "-dBATCH", "-dSAFER", "-sDEVICE=pdfwrite", "-dPDFSETTINGS=/ebook",
               f"-sOutputFile={target}", str(source)]
    subprocess.run(command, check=True, timeout=600)
    return target


def tool(source: Path, out_dir: Path, level: str) -> Path:
    shutil.rmtree(out_dir, ignore_errors=True)
    [output] = run_tool("pdf-compress", [source], out_dir, {"level": level}).outputs
    return output


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    if shutil.which("gs") is None:
        sys.exit("Ghostscript is needed for the baseline: apt-get install ghostscript")
    work = Path(tempfile.mkdtemp(prefix="bench-pdf-compress-"))
    try:
        samples = {"scanned-photos": scanned_photos, "report-figures": report_with_figures, "brochure": brochure}
        print(
            f"{'document':15} {'input':>7} {'gs /ebook':>15} {'level':12} {'tool':>15} "
            f"{'size vs gs':>10} {'speed-up wall':>13} {'speed-up cpu':>12}"
        )
        for name, make in samples.items():
            source = work / f"{name}.pdf"
            make(source)
            # Interleaved repetitions, best of each: the machine is shared, so load drifts over a run.
            best: dict[str, tuple[float, float, int]] = {}
            for _ in range(args.repeat):
                runs = {"gs": lambda s=source: ghostscript(s, work / "gs.pdf")}
                for level in LEVELS:
                    runs[level] = lambda s=source, o=work / f"out-{level}", lv=level: tool(s, o, lv)
                for key, action in runs.items():
                    wall, cpu, output = timed(action)
                    old = best.get(key, (float("inf"), float("inf"), 0))
                    best[key] = (min(old[0], wall), min(old[1], cpu), output.stat().st_size)
            gs_wall, gs_cpu, gs_size = best["gs"]
            for level in LEVELS:
                wall, cpu, size = best[level]
                print(
                    f"{name:15} {source.stat().st_size / 1e6:6.1f}M "
                    f"{gs_size / 1e6:6.2f}M {gs_wall:6.2f}s  {level:12} "
                    f"{size / 1e6:6.2f}M {wall:6.2f}s {size / gs_size:10.2f} "
                    f"{gs_wall / wall:12.1f}x {gs_cpu / cpu:11.1f}x",
                    flush=True,
                )
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

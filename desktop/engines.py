"""What the Engines panel lists: the engines the service reports, and the optional ones it does not (yet).

The service's ``health()`` covers every engine a catalogue tool declares. The issue also
names engines and models that no tool declares in this build (Calibre, Tesseract
languages, Whisper and ONNX models, an LLM); for those the panel shows what it can
see without touching an engine: files in the models folder, programs on PATH, settings.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class EngineRow:
    name: str
    version: str
    status: str  # "available" | "missing" | "not in this build" | free text
    available: bool
    used_by: str = ""
    note: str = ""


OPTIONAL = (
    ("LibreOffice", "office formats in document tools", ("soffice", "libreoffice")),
    ("Calibre", "mobi, azw3 and fb2 in ebook-convert", ("ebook-convert",)),
)


def engine_rows(health: Mapping[str, Any], used_by: Mapping[str, list[str]], models_dir: Path,
                settings: Mapping[str, Any], which: Callable[[str], str | None] = shutil.which) -> list[EngineRow]:
    rows = []
    for name, info in sorted(health.get("engines", {}).items(), key=lambda kv: kv[0].casefold()):
        available = bool(info.get("available"))
        rows.append(EngineRow(name, str(info.get("version") or "—"), "available" if available else "missing",
                              available, ", ".join(used_by.get(name, []))))
    reported = {r.name.casefold() for r in rows}
    for name, purpose, programs in OPTIONAL:
        if name.casefold() in reported:
            continue
        configured = settings.get(f"{name.lower()}_path")
        found = str(configured) if configured else next((p for p in (which(x) for x in programs) if p), None)
        rows.append(EngineRow(name, "—", "found on this computer" if found else "not installed", bool(found),
                              purpose, found or "Install it to enable these; FileKiln finds it on PATH."))
    rows.extend(model_rows(models_dir, settings))
    for module, error in sorted(health.get("brokenModules", {}).items()):
        rows.append(EngineRow(f"Tools in {module.rsplit('.', 1)[-1]}", "—", "could not be loaded", False,
                              "", str(error)))
    return rows


def _files(folder: Path, patterns: Iterable[str]) -> list[Path]:
    found: list[Path] = []
    if folder.is_dir():
        for pattern in patterns:
            found.extend(sorted(folder.glob(pattern)))
    return found


def tessdata_dirs(models_dir: Path) -> list[Path]:
    dirs = [models_dir / "tessdata", Path(sys.prefix) / "share" / "tessdata"]
    if os.environ.get("TESSDATA_PREFIX"):
        dirs.insert(0, Path(os.environ["TESSDATA_PREFIX"]))
    return dirs


def model_rows(models_dir: Path, settings: Mapping[str, Any]) -> list[EngineRow]:
    languages = sorted({p.stem for d in tessdata_dirs(models_dir) for p in _files(d, ["*.traineddata"])})
    whisper = [p.name for p in _files(models_dir / "whisper", ["*"]) if p.is_dir()]
    onnx = [p.name for p in _files(models_dir / "background", ["*.onnx"])]
    gguf = [p.name for p in _files(models_dir / "llm", ["*.gguf"])]
    provider = str(settings.get("llm_provider") or "none")
    llm_status = {"none": "off", "openai": f"server {settings.get('llm_base_url') or '(no address set)'}",
                  "llama-cpp": f"file {settings.get('llm_model_path') or '(none chosen)'}"}.get(provider, provider)

    def row(name: str, items: list[str], purpose: str, folder: str) -> EngineRow:
        return EngineRow(name, ", ".join(items[:6]) + ("…" if len(items) > 6 else "") or "—",
                         f"{len(items)} installed" if items else "none installed", bool(items), purpose,
                         f"Put them in {models_dir / folder}")

    return [
        row("Tesseract languages", languages, "OCR", "tessdata"),
        row("Whisper models", whisper, "transcription", "whisper"),
        row("ONNX models", onnx, "AI background removal", "background"),
        EngineRow("LLM", ", ".join(gguf) or "—", llm_status, provider != "none", "AI summaries and translation",
                  f"Choose the language model in Settings; GGUF files go in {models_dir / 'llm'}"),
    ]

"""What the Engines panel lists: the engines the service reports, and the optional ones it does not (yet).

The service's ``health()`` covers every engine a catalogue tool declares; programs no tool
declares (LibreOffice, Calibre) are looked for on PATH. Models are what the tools themselves
say they will use (``Service.models_in_use``): found in the models folder, in an installed
package (tiny.en, u2netp, tessdata) or through Settings (a language model).
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
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


def engine_rows(health: Mapping[str, Any], used_by: Mapping[str, list[str]], models: Iterable[Mapping[str, Any]],
                settings: Mapping[str, Any], which: Callable[[str], str | None] = shutil.which) -> list[EngineRow]:
    """Engines by name with the tools (by title) that use them, then each model the tools will
    actually use (``Service.models_in_use``: found in the models folder or in an installed package)."""
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
    rows.extend(model_rows(models))
    for module, error in sorted(health.get("brokenModules", {}).items()):
        rows.append(EngineRow(f"Tools in {module.rsplit('.', 1)[-1]}", "—", "could not be loaded", False,
                              "", str(error)))
    return rows


def model_rows(models: Iterable[Mapping[str, Any]]) -> list[EngineRow]:
    """A row per model in use: "Whisper model", "tiny.en", where it is read from and how it got there."""
    rows = []
    for model in models:
        where = model.get("where")
        source = model.get("source") or ""
        note = f"{where} ({source})" if where and source else (where or source or MISSING_HINT.get(model["kind"], ""))
        kind = model["kind"]
        rows.append(EngineRow(kind[:1].upper() + kind[1:], model["name"], "in use" if where else "not installed",
                              bool(where), ", ".join(model.get("tools", [])), note))
    return rows


MISSING_HINT = {
    "Whisper model": "Download one in the Models list below, or put a model folder in models/whisper.",
    "background model": "Download u2netp in the Models list below, or put u2netp.onnx in models/background.",
    "OCR language": "Download a language in the Models list below, or put .traineddata files in models/tessdata.",
    "language model": "Choose a language model in Settings.",
}

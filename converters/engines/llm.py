"""Language-model providers for the AI text tools, chosen in the user's settings.

``llm_provider = "llama-cpp"``
    Embedded llama.cpp (``llama-cpp-python``) running a GGUF file: ``llm_model_path``
    (absolute, or a file name inside ``models/llm``).
``llm_provider = "openai"``
    Any OpenAI-compatible ``/chat/completions`` endpoint -- Ollama
    (``http://127.0.0.1:11434/v1``), LM Studio, a llama.cpp server: ``llm_base_url``,
    ``llm_model`` and, when the server wants one, ``llm_api_key``.

Both: ``llm_context_tokens`` (default 4096) is the context the prompts are sized for,
``llm_max_output_tokens`` caps every answer, ``llm_timeout_seconds`` bounds a request.
Replies are streamed, and every call checks for cancel while the engine works.
"""

from __future__ import annotations

import json
import math
import os
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from converters.base import ConversionError, ModelUse, ToolEnv
from converters.engines.modelfiles import in_background

DEFAULT_CONTEXT = 4096
PROVIDERS = ("llama-cpp", "openai")
# What people read: the Settings page by name, in plain words. The settings keys above are for
# settings.toml and the API; they are in the docs, not in these messages.
WHERE = "Settings → Language model"
HOW_TO_ENABLE = (
    f"Choose one in {WHERE}: a model file on this computer (a .gguf file, run inside FileKiln), "
    "or a server such as Ollama or LM Studio."
)

Message = dict[str, str]


@dataclass(frozen=True)
class Completion:
    text: str
    prompt_tokens: int
    completion_tokens: int


class ChatProvider(Protocol):
    """What the AI text tools need from a language model."""

    name: str
    context_tokens: int
    max_output_tokens: int | None

    def count_tokens(self, text: str) -> int: ...

    def chat(self, messages: list[Message], max_tokens: int, cancelled: Callable[[], bool]) -> Completion: ...


def _int_setting(settings: Mapping[str, Any], key: str, default: int | None) -> int | None:
    value = settings.get(key, default)
    try:
        return int(value) if value is not None else None
    except (TypeError, ValueError):
        return default


def gguf_path(env: ToolEnv | None) -> Path | None:
    """``llm_model_path`` as a path: absolute, or relative to ``models/llm``."""
    value = (env.settings if env else {}).get("llm_model_path")
    if not value:
        return None
    path = Path(str(value)).expanduser()
    if not path.is_absolute() and env is not None and env.models_dir is not None:
        path = Path(env.models_dir) / "llm" / path
    return path


def provider_problem(env: ToolEnv | None) -> str | None:
    """Why no language model can be used with these settings, and how to fix it; ``None`` when one can."""
    settings = env.settings if env else {}
    provider = str(settings.get("llm_provider") or "").strip().lower()
    if not provider:
        return "No language model is chosen for the AI tools. " + HOW_TO_ENABLE
    if provider == "llama-cpp":
        import importlib.util

        if importlib.util.find_spec("llama_cpp") is None:
            return ("Running a model file needs llama.cpp for Python, which is not installed "
                    f"(pip install llama-cpp-python). Or choose a server in {WHERE}.")
        path = gguf_path(env)
        if path is None:
            return f"No model file is chosen: pick a .gguf file in {WHERE}."
        if not path.is_file():
            return f"The model file {path} is not there any more: pick it again in {WHERE}."
        return None
    if provider == "openai":
        url = str(settings.get("llm_base_url") or "")
        if not url.startswith(("http://", "https://")):
            return (f"The language model server's address is missing: give it in {WHERE} "
                    "(for Ollama: http://127.0.0.1:11434/v1).")
        if not settings.get("llm_model"):
            return (f"The model name is missing: give the name the server knows in {WHERE} "
                    "(for example llama3.2 with Ollama).")
        return None
    return f"FileKiln does not know the language model choice {provider!r}. " + HOW_TO_ENABLE


def model_in_use(env: ToolEnv | None) -> ModelUse:
    """The language model the settings choose, and where it is (None when it cannot be used)."""
    settings = env.settings if env else {}
    provider = str(settings.get("llm_provider") or "").strip().lower()
    usable = provider_problem(env) is None
    if provider == "llama-cpp":
        path = gguf_path(env)
        return ModelUse("language model", path.name if path else "(none chosen)",
                        str(path) if usable and path else None, "embedded (llama.cpp), chosen in Settings")
    if provider == "openai":
        return ModelUse("language model", str(settings.get("llm_model") or "(none chosen)"),
                        str(settings.get("llm_base_url")) if usable else None, "a server chosen in Settings")
    return ModelUse("language model", "(none chosen)", None, "choose one in Settings")


def open_provider(env: ToolEnv | None) -> ChatProvider:
    """The provider the settings choose, ready to use; ``llm_unavailable`` when there is none."""
    problem = provider_problem(env)
    if problem is not None:
        raise ConversionError("llm_unavailable", problem)
    assert env is not None
    settings = env.settings
    context = _int_setting(settings, "llm_context_tokens", DEFAULT_CONTEXT) or DEFAULT_CONTEXT
    cap = _int_setting(settings, "llm_max_output_tokens", None)
    timeout = float(settings.get("llm_timeout_seconds") or 600)
    if str(settings["llm_provider"]).strip().lower() == "llama-cpp":
        path = gguf_path(env)
        assert path is not None
        return LlamaCppProvider(path, context, cap, _int_setting(settings, "llm_threads", None))
    key = settings.get("llm_api_key")
    return OpenAIProvider(
        str(settings["llm_base_url"]), str(settings["llm_model"]), str(key) if key else None, context, cap, timeout
    )


class LlamaCppProvider:
    """A GGUF model run in this process by llama.cpp."""

    name = "llama-cpp"

    def __init__(self, path: Path, context_tokens: int, max_output_tokens: int | None, threads: int | None) -> None:
        from llama_cpp import Llama

        # Half the logical CPUs, for decoding and for reading the prompt alike: llama.cpp's threads
        # spin while they wait, and more of them than physical cores is many times slower, not faster.
        threads = threads or max(1, (os.cpu_count() or 2) // 2)
        try:
            self._llm = Llama(
                model_path=str(path), n_ctx=context_tokens, n_threads=threads, n_threads_batch=threads, verbose=False
            )
        except (ValueError, RuntimeError, OSError) as exc:
            raise ConversionError("model_damaged", f"The GGUF model {path} cannot be loaded: {exc}") from exc
        self.context_tokens = min(context_tokens, self._llm.n_ctx())
        self.max_output_tokens = max_output_tokens

    def count_tokens(self, text: str) -> int:
        return len(self._llm.tokenize(text.encode("utf-8"), add_bos=False, special=False))

    def chat(self, messages: list[Message], max_tokens: int, cancelled: Callable[[], bool]) -> Completion:
        def stream() -> Iterator[Any]:
            yield from self._llm.create_chat_completion(
                messages=messages,  # type: ignore[arg-type]
                max_tokens=max_tokens,
                temperature=0.2,
                stream=True,
            )

        pieces: list[str] = []
        for chunk in in_background(stream, cancelled):
            content = chunk["choices"][0].get("delta", {}).get("content")
            if content:
                pieces.append(content)
        prompt = sum(self.count_tokens(m["content"]) for m in messages)
        # A streamed chunk carries one token's text.
        return Completion("".join(pieces).strip(), prompt, len(pieces))


class OpenAIProvider:
    """An OpenAI-compatible ``/chat/completions`` endpoint, spoken to over plain HTTP."""

    name = "openai"

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None,
        context_tokens: int,
        max_output_tokens: int | None,
        timeout: float,
    ) -> None:
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.model = model
        self.api_key = api_key
        self.context_tokens = context_tokens
        self.max_output_tokens = max_output_tokens
        self.timeout = timeout

    def count_tokens(self, text: str) -> int:
        # No tokenizer for a remote model: ~3.5 characters a token errs on the side of smaller chunks.
        return max(1, math.ceil(len(text) / 3.5))

    def chat(self, messages: list[Message], max_tokens: int, cancelled: Callable[[], bool]) -> Completion:
        body = {"model": self.model, "messages": messages, "max_tokens": max_tokens, "temperature": 0.2, "stream": True}
        headers = {"Content-Type": "application/json", "Accept": "text/event-stream"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        request = urllib.request.Request(self.url, data=json.dumps(body).encode(), headers=headers, method="POST")
        pieces: list[str] = []
        usage: dict[str, Any] = {}
        for event in in_background(lambda: self._events(request), cancelled):
            if event.get("usage"):
                usage = event["usage"]
            for choice in event.get("choices") or ():
                content = (choice.get("delta") or choice.get("message") or {}).get("content")
                if content:
                    pieces.append(content)
        text = "".join(pieces).strip()
        prompt = usage.get("prompt_tokens") or sum(self.count_tokens(m["content"]) for m in messages)
        completion = usage.get("completion_tokens") or len(pieces)
        return Completion(text, int(prompt), int(completion))

    def _events(self, request: urllib.request.Request) -> Iterator[dict[str, Any]]:
        """The server's reply as JSON objects: each server-sent event, or the one body if it did not stream."""
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                if "text/event-stream" not in response.headers.get("Content-Type", ""):
                    yield json.loads(response.read())
                    return
                for raw in response:
                    line = raw.strip()
                    if not line.startswith(b"data:"):
                        continue
                    data = line[5:].strip()
                    if data == b"[DONE]":
                        return
                    yield json.loads(data)
        except urllib.error.HTTPError as exc:
            detail = exc.read(300).decode("utf-8", "replace")
            message = f"The language model server answered HTTP {exc.code}: {detail}"
            raise ConversionError("llm_failed", message) from exc
        except (urllib.error.URLError, OSError) as exc:
            message = f"The language model server at {self.url} is unreachable: {exc}"
            raise ConversionError("llm_unreachable", message) from exc
        except json.JSONDecodeError as exc:
            message = f"The language model server sent something that is not JSON: {exc}"
            raise ConversionError("llm_failed", message) from exc

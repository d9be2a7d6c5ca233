"""ai-summarize and ai-translate: documents through a local language model (see :mod:`converters.engines.llm`).

Documents longer than the model's context are cut at paragraph (then sentence) boundaries
into chunks that fit. Summaries are map-reduce: each chunk is summarised, then the partial
summaries are combined -- in more rounds if they still do not fit. Translation goes chunk by
chunk and joins the results in order. Progress moves once per chunk.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import ClassVar, Literal

from pydantic import Field, field_validator

from converters.base import Context, ConversionError, InputFile, ModelUse, Params, Tool, ToolEnv, atomic_output, scaled
from converters.engines.llm import ChatProvider, Completion, Message, model_in_use, open_provider, provider_problem
from converters.tools.ai.extract import TEXT_FORMATS, extract_text

Progress = Callable[[float], None]
DEFAULT_MAX_CHARACTERS = 1_000_000
PROMPT_OVERHEAD = 160  # tokens of instructions and chat template around each chunk
MAX_ROUNDS = 4
LANGUAGE_NAMES = {
    "en": "English", "de": "German", "fr": "French", "es": "Spanish", "it": "Italian", "pt": "Portuguese",
    "nl": "Dutch", "pl": "Polish", "cs": "Czech", "sv": "Swedish", "da": "Danish", "no": "Norwegian",
    "fi": "Finnish", "ru": "Russian", "uk": "Ukrainian", "tr": "Turkish", "el": "Greek", "ar": "Arabic",
    "he": "Hebrew", "hi": "Hindi", "zh": "Chinese", "ja": "Japanese", "ko": "Korean", "vi": "Vietnamese",
    "id": "Indonesian", "th": "Thai", "hu": "Hungarian", "ro": "Romanian",
}  # fmt: skip
_LANGUAGE = re.compile(r"^[^\W\d_][\w ()\-]{1,39}$")
SUMMARY_LENGTHS = {  # instruction, tokens for a chunk's partial summary, tokens for the final one
    "short": ("Write two or three sentences.", 120, 200),
    "medium": ("Write one paragraph, then up to five bullet points with the key facts.", 200, 450),
    "long": ("Write a detailed summary of several paragraphs that covers every main point; "
             "use Markdown headings where they help.", 300, 1000),
}  # fmt: skip


def language_name(value: str) -> str:
    """'de' -> 'German'; names pass through as given."""
    return LANGUAGE_NAMES.get(value.strip().lower(), value.strip())


def _check_language(value: str) -> str:
    if not _LANGUAGE.match(value.strip()):
        raise ValueError("a language name or code, like 'German' or 'de'")
    return value.strip()


class SummarizeParams(Params):
    length: Literal["short", "medium", "long"] = Field(
        "medium", description="How long the summary is.",
        title="Summary length",
        json_schema_extra={"x-enumLabels": {"short": "Short", "medium": "Medium", "long": "Long"}},
    )
    language: str = Field("auto", description="Language of the summary: a name or code, or 'auto' for the document's.")

    @field_validator("language")
    @classmethod
    def _language(cls, value: str) -> str:
        return _check_language(value)


class TranslateParams(Params):
    target_language: str = Field(alias="targetLanguage", description="Language to translate into, e.g. 'German'.")

    @field_validator("target_language")
    @classmethod
    def _language(cls, value: str) -> str:
        return _check_language(value)


# --- chunking ------------------------------------------------------------------------------------

_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s+")


def split_chunks(text: str, budget: int, count_tokens: Callable[[str], int]) -> list[str]:
    """``text`` cut into chunks of at most ``budget`` tokens, at paragraph, then sentence boundaries."""
    pieces: list[tuple[str, int]] = []
    for paragraph in re.split(r"\n\s*\n", text):
        paragraph = paragraph.strip()
        if paragraph:
            tokens = count_tokens(paragraph)
            pieces += [(paragraph, tokens)] if tokens <= budget else _split_long(paragraph, budget, count_tokens)
    return [chunk for chunk, _ in _pack(pieces, budget, count_tokens, "\n\n")]


def _pack(
    pieces: list[tuple[str, int]], budget: int, count_tokens: Callable[[str], int], joiner: str
) -> list[tuple[str, int]]:
    """Join consecutive pieces (each within ``budget``) into as few as fit.

    Token counts do not quite add up across a join, so near the limit the joined text is counted.
    """
    packed: list[tuple[str, int]] = []
    for piece, size in pieces:
        if packed:
            text, used = packed[-1]
            if used + size <= budget * 0.8:
                packed[-1] = (text + joiner + piece, used + size)
                continue
            if used + size <= budget * 1.2:
                joined = text + joiner + piece
                exact = count_tokens(joined)
                if exact <= budget:
                    packed[-1] = (joined, exact)
                    continue
        packed.append((piece, size))
    return packed


def _split_long(paragraph: str, budget: int, count_tokens: Callable[[str], int]) -> list[tuple[str, int]]:
    pieces: list[tuple[str, int]] = []
    for sentence in _SENTENCE_END.split(paragraph):
        size = count_tokens(sentence)
        if size <= budget:
            pieces.append((sentence, size))
            continue
        # One sentence longer than the budget: cut by characters, smaller until every cut fits.
        step = max(1, len(sentence) * budget // (size + 1))
        while True:
            cuts = [(cut, count_tokens(cut)) for cut in (sentence[i : i + step] for i in range(0, len(sentence), step))]
            if step == 1 or all(n <= budget for _, n in cuts):
                break
            step = max(1, step * 3 // 4)
        pieces.extend(cuts)
    return _pack(pieces, budget, count_tokens, " ")


# --- the tools ------------------------------------------------------------------------------------


class Metered:
    """A provider that adds up the tokens it was given and gave back, for the job's notes."""

    def __init__(self, inner: ChatProvider) -> None:
        self.inner = inner
        self.name = inner.name
        self.context_tokens = inner.context_tokens
        self.max_output_tokens = inner.max_output_tokens
        self.reset()

    def reset(self) -> None:
        self.read = self.written = self.calls = 0

    def count_tokens(self, text: str) -> int:
        return self.inner.count_tokens(text)

    def chat(self, messages: list[Message], max_tokens: int, cancelled: Callable[[], bool]) -> Completion:
        completion = self.inner.chat(messages, max_tokens, cancelled)
        self.read += completion.prompt_tokens
        self.written += completion.completion_tokens
        self.calls += 1
        return completion


class _TextTool(Tool):
    category: ClassVar[str] = "ai"
    accepts: ClassVar[tuple[str, ...]] = TEXT_FORMATS
    max_input_size_bytes: ClassVar[int] = 200 * 1000**2
    timeout_seconds: ClassVar[float] = 4 * 3600.0

    def unavailable_reason(self, env: ToolEnv | None = None) -> str | None:
        return provider_problem(env)

    def models(self, env: ToolEnv | None = None) -> list[ModelUse]:
        return [model_in_use(env)]

    def run(self, ctx: Context) -> None:
        provider = Metered(open_provider(ctx.env))  # loaded once for all inputs
        count = len(ctx.inputs)
        for index, source in enumerate(ctx.inputs):
            ctx.check_cancelled()
            provider.reset()
            self.process(ctx, source, provider, scaled(ctx.progress, index / count, 1 / count))
            ctx.notes.append(
                f"{source.name}: the language model read {provider.read} and wrote {provider.written} tokens "
                f"in {provider.calls} requests."
            )
        ctx.progress(1.0)

    def process(self, ctx: Context, source: InputFile, provider: ChatProvider, progress: Progress) -> None:
        raise NotImplementedError

    def document_text(self, ctx: Context, source: InputFile, markdown: bool) -> str:
        text = extract_text(source, markdown, ctx.cancelled).strip()
        ctx.check_cancelled()
        if not text:
            raise ConversionError(
                "no_text", f"{source.name} holds no text to work with; for a scan, run ocr-pdf on it first."
            )
        limit = int(ctx.env.settings.get("ai_max_characters", DEFAULT_MAX_CHARACTERS))
        if len(text) > limit:
            raise ConversionError(
                "input_too_large", f"{source.name} has {len(text):,} characters of text; the limit is {limit:,}."
            )
        return text

    def ask(self, ctx: Context, provider: ChatProvider, system: str, user: str, max_tokens: int) -> str:
        if provider.max_output_tokens:
            max_tokens = min(max_tokens, provider.max_output_tokens)
        messages: list[Message] = [{"role": "system", "content": system}, {"role": "user", "content": user}]
        answer = provider.chat(messages, max_tokens, ctx.cancelled).text
        ctx.check_cancelled()
        if not answer:
            raise ConversionError("llm_failed", "The language model gave an empty answer.")
        return answer

    def write(self, ctx: Context, source: InputFile, text: str) -> None:
        with atomic_output(ctx.output_path(source.name, ctx.output_format)) as part:
            part.write_text(text.strip() + "\n", encoding="utf-8")


def chunk_budget(provider: ChatProvider, output_tokens: int) -> int:
    budget = provider.context_tokens - PROMPT_OVERHEAD - output_tokens
    if budget < 64:
        raise ConversionError(
            "llm_context_too_small",
            f"The model's context of {provider.context_tokens} tokens leaves no room for the text; "
            "raise llm_context_tokens in Settings.",
        )
    return budget


class Summarize(_TextTool):
    id = "ai-summarize"
    title = "Summarize document"
    description = "A summary of a document (short, medium or long) written by a local language model."
    produces = ("md",)
    params: ClassVar[type[Params]] = SummarizeParams

    SYSTEM = "You write faithful, concise summaries. Use only facts stated in the text. Reply with the summary only."

    def process(self, ctx: Context, source: InputFile, provider: ChatProvider, progress: Progress) -> None:
        params: SummarizeParams = ctx.params
        text = self.document_text(ctx, source, markdown=True)
        progress(0.02)
        instruction, part_tokens, final_tokens = SUMMARY_LENGTHS[params.length]
        if provider.max_output_tokens:
            part_tokens = min(part_tokens, provider.max_output_tokens)
            final_tokens = min(final_tokens, provider.max_output_tokens)
        in_language = " in the same language as the text"
        if params.language != "auto":
            in_language = f" in {language_name(params.language)}"
        budget = chunk_budget(provider, final_tokens)
        chunks = split_chunks(text, budget, provider.count_tokens)
        steps = len(chunks) + (1 if len(chunks) > 1 else 0)
        done = 0

        def step() -> None:
            nonlocal done
            done += 1
            progress(0.02 + 0.98 * min(done / steps, 1.0))

        for _ in range(MAX_ROUNDS):
            if len(chunks) == 1:
                break
            partials = []
            for chunk in chunks:
                user = f"Summarize this part of a longer document{in_language}, keeping its key facts.\n\n{chunk}"
                partials.append(self.ask(ctx, provider, self.SYSTEM, user, part_tokens))
                step()
            chunks = split_chunks("\n\n".join(partials), budget, provider.count_tokens)
            steps += len(chunks) - 1 if len(chunks) > 1 else 0
        if len(chunks) > 1:  # still too long after every round: keep what fits
            ctx.notes.append(f"{source.name}: the summary covers the first part of the document only.")
        what = "document" if done == 0 else "set of partial summaries of one document"
        user = f"Summarize this {what}{in_language}. {instruction}\n\n{chunks[0]}"
        summary = self.ask(ctx, provider, self.SYSTEM, user, final_tokens)
        step()
        if done > 1:
            ctx.notes.append(f"{source.name}: summarized in {done - 1} parts, then combined.")
        self.write(ctx, source, summary)


class Translate(_TextTool):
    id = "ai-translate"
    title = "Translate document"
    description = "A document translated into another language by a local language model, as Markdown or text."
    produces = ("md", "txt")
    params: ClassVar[type[Params]] = TranslateParams

    SYSTEM = "You are a professional translator. Reply with the translation only, without notes."

    def process(self, ctx: Context, source: InputFile, provider: ChatProvider, progress: Progress) -> None:
        params: TranslateParams = ctx.params
        markdown = ctx.output_format == "md"
        text = self.document_text(ctx, source, markdown=markdown)
        progress(0.02)
        target = language_name(params.target_language)
        keep = "Keep the Markdown formatting, line breaks and numbers." if markdown else "Keep line breaks and numbers."
        # A translation is about as long as its source: split the room between the two, and
        # never give a chunk more tokens than its answer may have.
        half = (provider.context_tokens - PROMPT_OVERHEAD) // 2
        answer = min(half, provider.max_output_tokens or half)
        budget = min(chunk_budget(provider, answer), answer)
        chunks = split_chunks(text, budget, provider.count_tokens)
        out: list[str] = []
        for index, chunk in enumerate(chunks):
            room = provider.context_tokens - PROMPT_OVERHEAD - provider.count_tokens(chunk)
            max_tokens = max(32, min(room, 2 * provider.count_tokens(chunk) + 32))
            user = f"Translate the following text into {target}. {keep}\n\n{chunk}"
            out.append(self.ask(ctx, provider, self.SYSTEM, user, max_tokens))
            progress(0.02 + 0.98 * (index + 1) / len(chunks))
        if len(chunks) > 1:
            ctx.notes.append(f"{source.name}: translated in {len(chunks)} parts.")
        self.write(ctx, source, "\n\n".join(out))


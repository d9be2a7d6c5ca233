# PyMuPDF annotates only part of its API; calls into the rest are untyped by no fault of ours.
# mypy: disable-error-code="no-untyped-call"
"""``pdf-redact``: text, images and drawings under boxes taken out for good (``pdf-sanitize``, which
takes out scripts, actions, attachments and metadata, is in :mod:`converters.tools.pdf.sanitize`)."""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from converters.base import CamelParams, Context, ConversionError, InputFile, ToolEnv
from converters.engines.mupdf import save_pdf
from converters.engines.pictures import HEX_COLOUR
from converters.inputs.pages import ALL_PAGES, page_set
from converters.tools.pdf.common import PageSpec, PdfTool, pages_field, stem_of
from converters.tools.pdf.security import _rgb

if TYPE_CHECKING:
    import pymupdf

MAX_PATTERN = 200  # characters: enough for any real pattern, too short to hide a maze of alternatives
MAX_TERMS = 200
MAX_PATTERNS = 20
MAX_AREAS = 1000
MAX_SIDE = 14400.0  # points: PDF's largest page side (200 inches)
REDACTED = "[redacted]"  # what replaces a match in the metadata and bookmark titles


# --------------------------------------------------------------------------- what to look for

def _iban_ok(text: str) -> bool:
    """ISO 13616's check: the IBAN, its first four characters moved to the end, is 1 modulo 97."""
    compact = re.sub(r"\s", "", text).upper()
    digits = "".join(str(int(c, 36)) for c in compact[4:] + compact[:4])
    return int(digits) % 97 == 1


def _luhn_ok(text: str) -> bool:
    """The Luhn checksum every payment card number carries in its last digit."""
    digits = [int(c) for c in text if c.isdigit()]
    total = 0
    for position, digit in enumerate(reversed(digits)):
        if position % 2:
            digit = digit * 2 - 9 if digit > 4 else digit * 2
        total += digit
    return total % 10 == 0


def _phone_ok(text: str) -> bool:
    """7 to 15 digits (E.164's most), and not a date such as 2024-01-31."""
    digits = sum(c.isdigit() for c in text)
    return 7 <= digits <= 15 and re.fullmatch(r"\d{4}[-./]\d{1,2}[-./]\d{1,2}|\d{1,2}[-./]\d{1,2}[-./]\d{4}",
                                                text) is None


@dataclass(frozen=True)
class Preset:
    pattern: re.Pattern[str]
    valid: Callable[[str], bool] = lambda text: True  # a checksum that weeds out look-alikes


PRESETS: dict[str, Preset] = {
    "email": Preset(re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}")),
    "phone": Preset(re.compile(r"(?<![\w+])(?:\+|00)?(?:\(\d{1,4}\)[ .-]?)?\d[\d .()/-]{5,20}\d(?!\w)"), _phone_ok),
    "iban": Preset(re.compile(r"\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]){11,30}\b"), _iban_ok),
    "creditCard": Preset(re.compile(r"(?<!\d)\d(?:[ -]?\d){12,18}(?!\d)"), _luhn_ok),
}
PresetName = Literal["email", "phone", "iban", "creditCard"]


def _nested_repeats(pattern: str) -> bool:
    """Whether an unbounded repeat sits inside another repeat, as in ``(a+)+``: the shape whose
    backtracking grows exponentially with the text. Read with the ``re`` module's own parser;
    where that is missing, the job's timeout remains the guard."""
    try:
        parser: Any = importlib.import_module("re._parser")
        constants: Any = importlib.import_module("re._constants")
    except ImportError:
        return False
    repeats = {constants.MAX_REPEAT, constants.MIN_REPEAT, getattr(constants, "POSSESSIVE_REPEAT", None)}

    def children(value: Any) -> Iterator[Any]:
        if isinstance(value, parser.SubPattern):
            yield value
        elif isinstance(value, tuple | list):
            for item in value:
                yield from children(item)

    def unbounded_depth(sub: Any) -> int:
        depth = 0
        for op, value in sub:
            inner = max((unbounded_depth(child) for child in children(value)), default=0)
            # An unbounded repeat adds a level; so does any repeat around one.
            if op in repeats and (value[1] == constants.MAXREPEAT or (value[1] > 1 and inner)):
                inner += 1
            depth = max(depth, inner)
        return depth

    return bool(unbounded_depth(parser.parse(pattern)) > 1)


def _one_or_many(value: Any) -> Any:
    """A single string (what a one-line form field sends) is a list of one."""
    return [value] if isinstance(value, str) else value


class Area(BaseModel):
    """A box on one page, in points from the top-left corner of the page as it is shown."""

    model_config = ConfigDict(extra="forbid")

    page: int = Field(..., ge=1, description="1-based page number.")
    x0: float = Field(..., ge=0, le=MAX_SIDE, description="Left edge, points from the left.")
    y0: float = Field(..., ge=0, le=MAX_SIDE, description="Top edge, points from the top.")
    x1: float = Field(..., ge=0, le=MAX_SIDE, description="Right edge.")
    y1: float = Field(..., ge=0, le=MAX_SIDE, description="Bottom edge.")

    @model_validator(mode="after")
    def _not_empty(self) -> Area:
        if self.x1 <= self.x0 or self.y1 <= self.y0:
            raise ValueError("an area needs x1 > x0 and y1 > y0")
        return self


def _areas_from_text(value: Any) -> Any:
    """``"1: 72 72 300 100; 2: 0 0 50 50"`` (what a one-line form field sends) as a list of areas."""
    if not isinstance(value, str):
        return value
    areas = []
    for part in filter(None, (p.strip() for p in value.split(";"))):
        match = re.fullmatch(r"(\d+)\s*:\s*([\d.]+)[\s,]+([\d.]+)[\s,]+([\d.]+)[\s,]+([\d.]+)", part)
        if match is None:
            raise ValueError(f"{part!r} is not 'page: x0 y0 x1 y1'")
        page, *corners = match.groups()
        areas.append({"page": int(page), **dict(zip(("x0", "y0", "x1", "y1"), map(float, corners), strict=True))})
    return areas


class RedactParams(CamelParams):
    terms: list[str] = Field(
        default_factory=list, max_length=MAX_TERMS,
        description="Words or phrases to black out wherever they appear in the text.",
    )
    case_sensitive: bool = Field(False, description="Match terms with the case as written (default: any case).")
    patterns: list[str] = Field(
        default_factory=list, max_length=MAX_PATTERNS,
        description=f"Regular expressions (Python syntax, up to {MAX_PATTERN} characters each) to black out.",
    )
    presets: list[PresetName] = Field(
        default_factory=list,
        description="Ready-made patterns: e-mail addresses, phone numbers, IBANs, payment card numbers.",
        title="Also find",
        json_schema_extra={
            "x-enumLabels": {
                "email": "E-mail addresses",
                "phone": "Phone numbers",
                "iban": "IBANs",
                "creditCard": "Payment card numbers",
            },
        },
    )
    areas: list[Area] = Field(
        default_factory=list, max_length=MAX_AREAS,
        description='Boxes to black out: {page, x0, y0, x1, y1} in points from the top-left of the page as shown '
                    '(as text: "1: 72 72 300 100; 2: 0 0 50 50").',
    )
    pages: PageSpec = pages_field(ALL_PAGES, "Pages searched for terms, patterns and presets")
    fill_color: str = Field("#000000", pattern=HEX_COLOUR, description="Colour of the boxes, as #rrggbb.")

    _terms_one = field_validator("terms", "patterns", mode="before")(_one_or_many)
    _areas_text = field_validator("areas", mode="before")(_areas_from_text)

    @field_validator("terms")
    @classmethod
    def _terms_not_blank(cls, value: list[str]) -> list[str]:
        if any(not term.strip() or len(term) > MAX_PATTERN for term in value):
            raise ValueError(f"every term needs 1 to {MAX_PATTERN} characters besides spaces")
        return value

    @field_validator("patterns")
    @classmethod
    def _patterns_compile(cls, value: list[str]) -> list[str]:
        for pattern in value:
            if not pattern or len(pattern) > MAX_PATTERN:
                raise ValueError(f"pattern {pattern[:40]!r} is empty or longer than {MAX_PATTERN} characters")
            try:
                compiled = re.compile(pattern)
            except re.error as exc:
                raise ValueError(f"pattern {pattern!r} is not a valid regular expression: {exc}") from None
            if compiled.match(""):
                raise ValueError(f"pattern {pattern!r} matches empty text")
            if _nested_repeats(pattern):
                raise ValueError(f"pattern {pattern!r} nests a repeat inside a repeat, as in (a+)+, "
                                 "which can take forever on some text")
        return value

    @model_validator(mode="after")
    def _something_to_redact(self) -> RedactParams:
        if not (self.terms or self.patterns or self.presets or self.areas):
            raise ValueError("give at least one of terms, patterns, presets or areas")
        return self

    def matchers(self) -> list[tuple[re.Pattern[str], Callable[[str], bool]]]:
        """Every search as a compiled pattern with the check its matches must pass."""
        flags = 0 if self.case_sensitive else re.IGNORECASE
        found: list[tuple[re.Pattern[str], Callable[[str], bool]]] = []
        if self.terms:
            # Longest first, so "John Smith" wins over "John" where both match.
            words = sorted({term.strip() for term in self.terms}, key=len, reverse=True)
            spaced = (r"\s+".join(map(re.escape, word.split())) for word in words)
            found.append((re.compile("|".join(spaced), flags), lambda text: True))
        found.extend((re.compile(pattern), lambda text: True) for pattern in self.patterns)
        found.extend((PRESETS[name].pattern, PRESETS[name].valid) for name in self.presets)
        return found


# --------------------------------------------------------------------------- finding matches on a page

def _page_text(page: pymupdf.Page) -> tuple[str, list[tuple[float, float, float, float] | None]]:
    """The page's text, a line per text line, and for each character its box (``None`` for line breaks).

    Matching runs on this text, never on the content stream: a pattern sees what a reader sees,
    and the size of what it searches is bounded by the page's characters.
    """
    import pymupdf

    flags = pymupdf.TEXTFLAGS_RAWDICT & ~pymupdf.TEXT_PRESERVE_LIGATURES  # "ﬁ" is searched as "fi"
    text: list[str] = []
    boxes: list[tuple[float, float, float, float] | None] = []
    for block in page.get_text("rawdict", flags=flags)["blocks"]:
        for line in block.get("lines", ()):
            for span in line["spans"]:
                for char in span["chars"]:
                    text.append(char["c"])
                    boxes.append(char["bbox"])
            text.append("\n")
            boxes.append(None)
    return "".join(text), boxes


def match_rects(page: pymupdf.Page, matchers: list[tuple[re.Pattern[str], Callable[[str], bool]]]) -> list[Any]:
    """One rectangle per text line a match covers, in the page's own (unrotated) coordinates."""
    import pymupdf

    text, boxes = _page_text(page)
    rects = []
    for pattern, valid in matchers:
        for match in pattern.finditer(text):
            if not valid(match.group()):
                continue
            line = pymupdf.Rect()
            for box in boxes[match.start():match.end()]:
                if box is None:
                    if not line.is_empty:
                        rects.append(line)
                    line = pymupdf.Rect()
                else:
                    line |= box
            if not line.is_empty:
                rects.append(line)
    return rects


def scrub_text(value: str, matchers: list[tuple[re.Pattern[str], Callable[[str], bool]]]) -> str:
    """``value`` with every match replaced by ``[redacted]`` (metadata fields, bookmark titles)."""
    for pattern, valid in matchers:
        value = pattern.sub(lambda m, ok=valid: REDACTED if ok(m.group()) else m.group(), value)  # type: ignore[misc]
    return value


INFO_FIELDS = ("title", "author", "subject", "keywords", "creator", "producer")


def scrub_document_text(doc: pymupdf.Document, matchers: list[tuple[re.Pattern[str], Callable[[str], bool]]]) -> int:
    """Replace matches in the document information and bookmark titles; returns how many fields changed.

    When the information changes, the XMP packet goes too: it repeats the same fields and readers prefer it.
    """
    metadata = doc.metadata or {}
    info = {key: metadata.get(key) or "" for key in INFO_FIELDS}
    scrubbed = {key: scrub_text(value, matchers) for key, value in info.items()}
    changed = sum(scrubbed[key] != info[key] for key in INFO_FIELDS)
    if changed:
        doc.set_metadata(scrubbed)
        if doc.get_xml_metadata():
            doc.del_xml_metadata()
    toc = doc.get_toc(simple=False)
    new_toc = [[level, scrub_text(title, matchers), page, *rest] for level, title, page, *rest in toc]
    titles = sum(old[1] != new[1] for old, new in zip(toc, new_toc, strict=True))
    if titles:
        doc.set_toc(new_toc)
    return changed + titles


class PdfRedact(PdfTool):
    """Black out text, images and drawings for good: under each box, nothing survives in the file."""

    id = "pdf-redact"
    title = "Redact PDF"
    description = (
        "Remove words, patterns (e-mail addresses, phone numbers, IBANs ...) or page areas for good: the text "
        "under each box is deleted from the page, image pixels under it are blanked, drawings under it removed."
    )
    params = RedactParams
    timeout_seconds = 1800.0

    def searches(self, params: RedactParams) -> bool:
        return bool(params.terms or params.patterns or params.presets)

    def pages_worked(self, doc: pymupdf.Document, params: Any) -> int | None:
        searched = page_set(params.pages, doc.page_count) if self.searches(params) else set()
        return len(searched | {area.page - 1 for area in params.areas})

    def check_document(self, doc: pymupdf.Document, params: Any, env: ToolEnv | None) -> None:
        super().check_document(doc, params, env)
        for area in params.areas:
            if area.page > doc.page_count:
                raise ConversionError("invalid_pages", f"An area names page {area.page}; the document has "
                                                       f"{doc.page_count} page{'s' if doc.page_count != 1 else ''}.")

    def convert(self, ctx: Context, source: InputFile, progress: Callable[[float], None]) -> None:
        import pymupdf

        params: RedactParams = ctx.params
        matchers = params.matchers()
        fill = _rgb(params.fill_color)
        doc = self.open_checked(ctx, source)
        try:
            searched = page_set(params.pages, doc.page_count) if matchers else set()
            areas: dict[int, list[Area]] = {}
            for area in params.areas:
                areas.setdefault(area.page - 1, []).append(area)
            chosen = sorted(searched | set(areas))
            counts: dict[int, int] = {}
            for done, index in enumerate(chosen, start=1):
                ctx.check_cancelled()
                page = doc[index]
                rects = match_rects(page, matchers) if index in searched else []
                rects += [pymupdf.Rect(a.x0, a.y0, a.x1, a.y1) * page.derotation_matrix for a in areas.get(index, ())]
                for rect in rects:
                    page.add_redact_annot(rect, fill=fill, cross_out=False)
                if rects:
                    page.apply_redactions(
                        images=pymupdf.PDF_REDACT_IMAGE_PIXELS,  # type: ignore[attr-defined]  # blank those pixels only
                        graphics=pymupdf.PDF_REDACT_LINE_ART_REMOVE_IF_COVERED,  # type: ignore[attr-defined]
                        text=pymupdf.PDF_REDACT_TEXT_REMOVE,  # type: ignore[attr-defined]
                    )
                    counts[index + 1] = len(rects)
                progress(0.9 * done / max(len(chosen), 1))
            fields = scrub_document_text(doc, matchers) if matchers else 0
            ctx.notes.append(redaction_note(source.name, counts, fields))
            save_pdf(doc, ctx.output_path(stem_of(source), "pdf"), garbage=4, clean=True)
        finally:
            doc.close()
        progress(1.0)


def redaction_note(name: str, counts: dict[int, int], fields: int) -> str:
    """What was redacted where, for the job notes; no match at all is said too, not an error."""
    if not counts and not fields:
        return f"{name}: nothing matched; no area was redacted."
    listed = ", ".join(f"page {page}: {count}" for page, count in sorted(counts.items())[:50])
    more = f", and {len(counts) - 50} more pages" if len(counts) > 50 else ""
    text = f"{name}: redacted {sum(counts.values())} area(s) on {len(counts)} page(s)"
    text += f" ({listed}{more})" if counts else ""
    if fields:
        text += f"; {fields} metadata field(s) or bookmark title(s) had matches replaced by {REDACTED}"
    return text + "."

"""A tool's JSON Schema read into plain field descriptions, and their validation. No widgets.

The parameters form (``desktop.views.params_form``) builds one editor per :class:`FieldSpec`;
keeping the reading and the checks here lets them be tested without a window.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field, replace
from typing import Any

PAGES_HINT = 'e.g. "1-3,5,8-"'
TIME_HINT = "m:ss, h:mm:ss or seconds"
_MISSING = object()
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


@dataclass(frozen=True)
class FieldSpec:
    name: str  # the JSON name (the tool's alias), the key in params
    # enum | integer | number | boolean | string | pages | multi | number-or-text | lines | json
    # | time (seconds, shown as m:ss) | colour (#rrggbb) | choice (a text from a known list)
    kind: str
    label: str
    description: str = ""
    default: Any = None
    has_default: bool = False
    required: bool = False
    nullable: bool = False
    options: tuple[Any, ...] = ()
    minimum: float | None = None
    maximum: float | None = None
    exclusive_minimum: bool = False
    exclusive_maximum: bool = False
    pattern: str | None = None
    min_length: int | None = None
    max_length: int | None = None
    secret: bool = False
    unit: str = ""  # shown after the number: "kbps", "Hz", "dpi", "px", "%", "s" ...
    common: tuple[Any, ...] = ()  # common values, offered in a drop-down
    start: Any = None  # where a number goes from "Default" on the first step up
    option_labels: dict[str, str] = field(default_factory=dict)  # str(value) -> what people read
    option_help: dict[str, str] = field(default_factory=dict)  # str(value) -> a line on what it does
    extra: dict[str, Any] = field(default_factory=dict)

    def option_label(self, value: Any) -> str:
        return self.option_labels.get(str(value), str(value))

    @property
    def initial(self) -> Any:
        """What the editor shows before the user touches it."""
        if self.has_default:
            return self.default
        if self.kind == "multi":
            return []
        if self.kind == "boolean":
            return False
        return None


def label_of(name: str, prop: dict[str, Any]) -> str:
    """The field's ``title`` when the tool gave one (``preset`` -> "Encoding speed"); otherwise its
    name in words. pydantic titles every field ``name.title()``: such a title says nothing more."""
    title = str(prop.get("title") or "")
    return title if title and title != name.title().replace("_", " ") else humanize_name(name)


def is_pages_field(name: str, schema: dict[str, Any]) -> bool:
    return name.lower().endswith("pages") or name.lower() == "pages"


def fields_from_schema(schema: dict[str, Any]) -> list[FieldSpec]:
    """One :class:`FieldSpec` per property, in the schema's order."""
    required = set(schema.get("required", []))
    specs = []
    for name, prop in schema.get("properties", {}).items():
        specs.append(_field(name, prop, name in required))
    return _choices_in_words(specs)


def _choices_in_words(specs: list[FieldSpec]) -> list[FieldSpec]:
    """Descriptions as the form shows them: where one names another field's choice by its API value
    (``With mode "ranges": ...``, ``use mode "vector"``), the choice's label stands in for both
    (``With “Page ranges”: ...``)."""
    swaps: list[tuple[re.Pattern[str], str]] = []
    for spec in specs:
        for value, label in spec.option_labels.items():
            regex = rf'\b{re.escape(spec.name)} (?:"{re.escape(value)}"|{re.escape(value)}\b)'
            swaps.append((re.compile(regex, re.IGNORECASE), f"“{label}”"))
    swaps.append((re.compile(r'\boutput "(\w+)"'), "output format “\\1”"))  # the form's Output format, not a param
    out = []
    for spec in specs:
        text = spec.description
        for pattern, words in swaps:
            text = pattern.sub(words, text)
        out.append(spec if text == spec.description else replace(spec, description=text))
    return out


def _field(name: str, prop: dict[str, Any], required: bool) -> FieldSpec:
    nullable = False
    body = prop
    variants = prop.get("anyOf") or prop.get("oneOf")
    kind: str
    if variants:
        non_null = [v for v in variants if v.get("type") != "null"]
        nullable = len(non_null) < len(variants)
        types = {v.get("type") for v in non_null}
        if len(non_null) == 1:
            body = {**prop, **non_null[0]}
        elif types >= {"string"} and types & {"number", "integer"}:
            body = {**prop, "type": "number-or-text"}
        else:
            body = {**prop, **non_null[0]}
    typ = body.get("type")
    if "enum" in body:
        kind = "enum"
    elif typ == "array" and "enum" in body.get("items", {}):
        kind = "multi"
    elif typ == "array" and body.get("items", {}).get("type") == "string":
        kind = "lines"  # a list of texts (search terms, patterns): one per line
    elif typ in ("array", "object"):
        kind = "json"  # lists of records (page areas, bookmarks) and name -> value maps (form values)
    elif typ == "boolean":
        kind = "boolean"
    elif typ == "integer":
        kind = "integer"
    elif typ == "number":
        kind = "time" if unit_of(name, prop) == "s" else "number"
    elif typ == "number-or-text":
        kind = "number-or-text"
    elif typ == "string" and is_pages_field(name, body):
        kind = "pages"
    elif typ == "string" and is_colour_pattern(body.get("pattern")):
        kind = "colour"
    elif typ == "string" and body.get("examples") and prop.get("x-enumLabels"):
        kind = "choice"  # the examples are the values to offer; the labels say what each is
    else:
        kind = "string"
    minimum, exclusive_min = _bound(body, "minimum", "exclusiveMinimum")
    maximum, exclusive_max = _bound(body, "maximum", "exclusiveMaximum")
    options: tuple[Any, ...] = tuple(body.get("enum", ()))
    if kind == "multi":
        options = tuple(body["items"]["enum"])
    elif kind == "choice":
        options = tuple(body["examples"])
    has_default = "default" in prop
    unit = unit_of(name, prop) if kind in ("integer", "number", "time") else ""
    common: tuple[Any, ...] = ()
    start = None
    if kind in ("integer", "number"):
        common = _in_range(tuple(sorted(prop.get("examples") or COMMON_VALUES.get(unit, ()))), minimum, maximum)
        start = prop.get("x-suggested", START_VALUES.get(unit))
        if start is None or _in_range((start,), minimum, maximum) == ():
            start = common[len(common) // 2] if common else None
    return FieldSpec(
        name=name, kind=kind, label=label_of(name, prop), description=str(prop.get("description", "")),
        default=prop.get("default"), has_default=has_default, required=required and not has_default,
        nullable=nullable, options=options, minimum=minimum, maximum=maximum,
        exclusive_minimum=exclusive_min, exclusive_maximum=exclusive_max, pattern=body.get("pattern"),
        min_length=body.get("minLength"), max_length=body.get("maxLength"),
        secret=body.get("format") == "password" or "password" in name.lower(),
        unit=unit, common=common, start=start,
        option_labels={str(k): str(v) for k, v in (prop.get("x-enumLabels") or {}).items()},
        option_help={str(k): str(v) for k, v in (prop.get("x-enumDescriptions") or {}).items()},
    )


# Common values and the first value from "Default", by unit, for fields whose schema gives none.
COMMON_VALUES: dict[str, tuple[float, ...]] = {
    "dpi": (72, 96, 150, 300, 600),
    "kbps": (64, 96, 128, 160, 192, 256, 320),
    "Hz": (22050, 44100, 48000, 96000),
    "fps": (24, 25, 30, 50, 60),
}
START_VALUES: dict[str, float] = {"dpi": 150, "kbps": 128, "Hz": 44100, "fps": 30}
# What a description says -> the unit, in this order (the first match wins).
_UNIT_WORDS = (
    (r"\bkbps\b", "kbps"), (r"\bin Hz\b", "Hz"), (r"dots per inch|\bdpi\b", "dpi"),
    (r"(?i:frames? per second|frame rate)", "fps"), (r"\bseconds\b", "s"), (r"\bpixels\b", "px"),
    (r"\bpercent(age)?\b", "%"), (r"\bdegrees\b", "°"), (r"\bin points\b|\bpoints \(1/72", "pt"),
    (r"\bin MB\b", "MB"), (r"\bkilobytes\b", "KB"),
)


def unit_of(name: str, prop: dict[str, Any]) -> str:
    """The unit a number is in: the schema's ``x-unit``, else read from the field's name and description."""
    if prop.get("x-unit"):
        return str(prop["x-unit"])
    if "dpi" in name.lower():
        return "dpi"
    text = str(prop.get("description", ""))
    return next((unit for pattern, unit in _UNIT_WORDS if re.search(pattern, text)), "")


def is_colour_pattern(pattern: str | None) -> bool:
    """A pattern for ``#rgb`` / ``#rrggbb`` colours."""
    return bool(pattern) and "#" in str(pattern) and "0-9a-fA-F" in str(pattern)


def _in_range(values: tuple[Any, ...], low: float | None, high: float | None) -> tuple[Any, ...]:
    return tuple(v for v in values if (low is None or v >= low) and (high is None or v <= high))


def _bound(body: dict[str, Any], inclusive: str, exclusive: str) -> tuple[float | None, bool]:
    if exclusive in body:
        return float(body[exclusive]), True
    if inclusive in body:
        return float(body[inclusive]), False
    return None, False


@dataclass(frozen=True)
class Unparsed:
    """What a ``json`` field holds while its text is not valid JSON: never sent, reported as an error."""

    text: str
    error: str


def lines_value(text: str) -> list[str] | None:
    """One entry per non-empty line, spaces around it removed; ``None`` when there is none."""
    entries = [line.strip() for line in text.splitlines() if line.strip()]
    return entries or None


def json_value(text: str) -> Any:
    """The JSON a ``json`` field holds, ``None`` when empty, :class:`Unparsed` when it does not parse."""
    if not text.strip():
        return None
    try:
        return json.loads(text)
    except ValueError as exc:
        return Unparsed(text, str(exc))


def field_text(spec: FieldSpec, value: Any) -> str:
    """How a ``lines`` or ``json`` field shows ``value``."""
    if value is None:
        return ""
    if isinstance(value, Unparsed):
        return value.text
    if spec.kind == "lines" and isinstance(value, list):
        return "\n".join(str(entry) for entry in value)
    return json.dumps(value, indent=1, ensure_ascii=False)


def parse_time(text: str) -> float | None:
    """``"1:30"`` -> 90, ``"1:02:03.5"`` -> 3723.5, ``"90"`` -> 90, ``"-0:30"`` -> -30, ``""`` -> ``None``.

    Raises ``ValueError`` for anything else (minutes or seconds past 59 after a colon, letters).
    """
    text = text.strip()
    if not text:
        return None
    sign = -1.0 if text.startswith("-") else 1.0
    parts = text.lstrip("+-").strip().split(":")
    if len(parts) > 3 or not all(re.fullmatch(r"\d+(\.\d*)?|\.\d+", p.strip()) for p in parts):
        raise ValueError(text)
    numbers = [float(p) for p in parts]
    if any(n >= 60 for n in numbers[1:]) or any("." in p for p in parts[:-1]):
        raise ValueError(text)
    seconds = 0.0
    for n in numbers:
        seconds = seconds * 60 + n
    return sign * seconds


def format_time(seconds: float) -> str:
    """``90`` -> ``"1:30"``, ``3723.5`` -> ``"1:02:03.5"``, ``-30`` -> ``"-0:30"``."""
    sign = "-" if seconds < 0 else ""
    whole, fraction = divmod(round(abs(seconds), 3), 1)
    hours, rest = divmod(int(whole), 3600)
    minutes, secs = divmod(rest, 60)
    tail = f"{fraction:.3f}".rstrip("0").rstrip(".")[1:] if fraction else ""
    if hours:
        return f"{sign}{hours}:{minutes:02d}:{secs:02d}{tail}"
    return f"{sign}{minutes}:{secs:02d}{tail}"


def time_value(text: str) -> float | int | Unparsed | None:
    """What a ``time`` field holds: seconds (a whole number when whole), ``None`` when empty."""
    try:
        seconds = parse_time(text)
    except ValueError:
        return Unparsed(text, f"not a time ({TIME_HINT}, e.g. 1:30)")
    if seconds is None:
        return None
    return int(seconds) if seconds == int(seconds) else seconds


def validate_value(spec: FieldSpec, value: Any) -> str | None:
    """Why ``value`` does not fit ``spec``, in a short sentence; ``None`` when it does.

    ``None`` is the editor's "not set" (an empty text, a spin box at "Default").
    """
    if value is None or value == "":
        if spec.required:
            return "required"
        return None
    if spec.kind == "enum":
        return None if value in spec.options else f"must be one of {', '.join(map(str, spec.options))}"
    if spec.kind == "multi":
        bad = [v for v in value if v not in spec.options]
        return f"unknown choice {bad[0]!r}" if bad else None
    if isinstance(value, Unparsed):
        return value.error if spec.kind == "time" else f"not valid JSON ({value.error})"
    if spec.kind in ("integer", "number", "time"):
        return _check_range(spec, float(value))
    if spec.kind == "choice":
        return None  # the tool's own model decides (a model may also be a folder's path)
    if spec.kind == "number-or-text":
        return None
    if spec.kind in ("lines", "json"):
        return None  # the tool's own model checks the entries (the form's checker)
    text = str(value)
    if spec.min_length is not None and len(text) < spec.min_length:
        return "required" if spec.min_length == 1 else f"at least {spec.min_length} characters"
    if spec.max_length is not None and len(text) > spec.max_length:
        return f"at most {spec.max_length} characters"
    if spec.pattern and re.search(spec.pattern, text) is None:
        if spec.kind == "pages":
            return f"not a page range ({PAGES_HINT})"
        return "not a colour (#rrggbb, e.g. #ff8800)" if spec.kind == "colour" else "not in the expected form"
    return None


def _check_range(spec: FieldSpec, number: float) -> str | None:
    if math.isnan(number):
        return "not a number"
    if spec.minimum is not None:
        if spec.exclusive_minimum and number <= spec.minimum:
            return f"must be more than {_fmt(spec.minimum)}"
        if not spec.exclusive_minimum and number < spec.minimum:
            return f"must be at least {_fmt(spec.minimum)}"
    if spec.maximum is not None:
        if spec.exclusive_maximum and number >= spec.maximum:
            return f"must be less than {_fmt(spec.maximum)}"
        if not spec.exclusive_maximum and number > spec.maximum:
            return f"must be at most {_fmt(spec.maximum)}"
    return None


def _fmt(number: float) -> str:
    return str(int(number)) if number == int(number) else str(number)


def params_from_values(specs: list[FieldSpec], values: dict[str, Any]) -> dict[str, Any]:
    """The params to send: required fields and fields whose value differs from the tool's default.

    Leaving defaults out keeps a job's params as small as the user's actual choices, so a
    tool's later change of default reaches saved choices that never touched that field.
    """
    params: dict[str, Any] = {}
    for spec in specs:
        value = values.get(spec.name, _MISSING)
        if value is _MISSING or value is None or isinstance(value, Unparsed) or (value == "" and spec.kind != "enum"):
            continue
        if spec.kind == "multi" and not spec.has_default and not value:
            continue
        if spec.has_default and value == spec.default and not spec.required:
            continue
        params[spec.name] = value
    return params


def coerce_number_or_text(text: str) -> float | int | str | None:
    """``"12.5"`` -> 12.5, ``"3"`` -> 3, ``"50%"`` stays text, ``""`` -> ``None``."""
    text = text.strip()
    if not text:
        return None
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        return text

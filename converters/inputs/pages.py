"""Page ranges as people write them: ``"1-3,5,8-"``, 1-based.

A spec is a comma-separated list of parts; each part is one page (``5``), a
closed range (``1-3``), an open range to the end (``8-``) or from the start
(``-3``). Spaces are ignored. ``"1-"`` therefore means every page.

The syntax can be checked without the document (:func:`check_page_spec`, used
by the params models so a typo is refused with the field named); the numbers
are checked against the page count when the document is known
(:func:`parse_pages`, :func:`page_groups`), failing with ``invalid_pages``.
"""

from __future__ import annotations

import re

from converters.base import ConversionError

ALL_PAGES = "1-"

# One part: "N", "N-M", "N-" or "-M" (spaces allowed around the numbers and the dash).
_PART = re.compile(r"^\s*(?:(\d+)\s*(-)\s*(\d*)|(-)\s*(\d+)|(\d+))\s*$")

# The same grammar as a JSON Schema pattern, so a form can check the field as it is typed.
PAGE_SPEC_PATTERN = r"^\s*(\d+\s*(-\s*\d*)?|-\s*\d+)(\s*,\s*(\d+\s*(-\s*\d*)?|-\s*\d+))*\s*$"


def _parse_part(part: str) -> tuple[int, int | None]:
    """``(first, last)`` 1-based; ``last`` is ``None`` for "to the end". Raises ValueError."""
    match = _PART.match(part)
    if match is None:
        raise ValueError(f"{part.strip() or 'an empty part'!r} is not a page or a range like 2-5")
    start, dash, end, lead_dash, lead_end, single = match.groups()
    if single is not None:
        first, last = int(single), int(single)
    elif lead_dash is not None:
        first, last = 1, int(lead_end)
    elif dash is not None and end == "":
        return _positive(int(start), part), None
    else:
        first, last = int(start), int(end)
    _positive(first, part)
    _positive(last, part)
    if last < first:
        raise ValueError(f"range {part.strip()!r} runs backwards; write it as {last}-{first}")
    return first, last


def _positive(number: int, part: str) -> int:
    if number < 1:
        raise ValueError(f"{part.strip()!r}: pages are numbered from 1")
    return number


def _parts(spec: str) -> list[tuple[int, int | None]]:
    if not spec.strip():
        raise ValueError("no pages given")
    return [_parse_part(part) for part in spec.split(",")]


def check_page_spec(spec: str) -> str:
    """Validate the syntax of ``spec`` alone; return it unchanged. Raises ValueError."""
    _parts(spec)
    return spec


def page_groups(spec: str, page_count: int) -> list[list[int]]:
    """One list of 0-based page indexes per comma-separated part, in the order written.

    Raises ``ConversionError("invalid_pages")`` when the spec is malformed or
    names a page the document does not have.
    """
    try:
        parts = _parts(spec)
    except ValueError as exc:
        raise ConversionError("invalid_pages", f"Invalid page range {spec!r}: {exc}.") from None
    groups: list[list[int]] = []
    for first, last in parts:
        end = page_count if last is None else last
        if first > page_count or end > page_count:
            bad = first if first > page_count else end
            raise ConversionError(
                "invalid_pages",
                f"Page {bad} does not exist: the document has {page_count} page{'s' if page_count != 1 else ''}.",
            )
        groups.append(list(range(first - 1, end)))
    return groups


def parse_pages(spec: str, page_count: int) -> list[int]:
    """The 0-based page indexes named by ``spec``, in the order written (repeats kept)."""
    return [index for group in page_groups(spec, page_count) for index in group]


def page_set(spec: str, page_count: int) -> set[int]:
    """The 0-based page indexes named by ``spec``, as a set (for rotate, delete, watermark)."""
    return set(parse_pages(spec, page_count))


def describe_group(group: list[int]) -> str:
    """``[0, 1, 2]`` -> ``"1-3"``, ``[4]`` -> ``"5"``: a 1-based label for output names."""
    if len(group) == 1:
        return str(group[0] + 1)
    return f"{group[0] + 1}-{group[-1] + 1}"

# PyMuPDF annotates only part of its API; calls into the rest are untyped by no fault of ours.
# mypy: disable-error-code="no-untyped-call"
"""``pdf-compare``: the text differences of two PDFs, page by page, as a JSON report or a highlighted PDF."""

from __future__ import annotations

import difflib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from converters.base import CamelParams, Context, ConversionError, InputFile, ToolEnv, atomic_output
from converters.engines.mupdf import save_pdf
from converters.tools.pdf.common import PdfTool, stem_of

if TYPE_CHECKING:
    import pymupdf

REMOVED_COLOUR = (1.0, 0.55, 0.55)  # on the first PDF's pages: text the second no longer has
ADDED_COLOUR = (0.55, 0.95, 0.55)  # on the second PDF's pages: text it added
GAP = 24.0  # points between the two pages of a side-by-side sheet


class CompareParams(CamelParams):
    granularity: Literal["words", "lines"] = Field(
        "words", description="Compare word by word (precise) or line by line (changed lines as a whole).",
        title="Compare",
        json_schema_extra={"x-enumLabels": {"words": "Word by word", "lines": "Line by line"}},
    )
    ignore_case: bool = Field(False, description="Treat upper and lower case as the same.")


@dataclass(frozen=True)
class Token:
    """A word or a line of a page: what it says and where it stands (unrotated page coordinates)."""

    text: str
    rect: tuple[float, float, float, float]


def page_tokens(page: pymupdf.Page, granularity: str) -> list[Token]:
    """The page's words (or lines) in reading order."""
    words = page.get_text("words", sort=True)
    if granularity == "words":
        return [Token(w[4], (w[0], w[1], w[2], w[3])) for w in words]
    lines: dict[tuple[int, int], list[Any]] = {}
    for word in words:
        lines.setdefault((word[5], word[6]), []).append(word)
    tokens = []
    for members in lines.values():
        x0, y0 = min(w[0] for w in members), min(w[1] for w in members)
        x1, y1 = max(w[2] for w in members), max(w[3] for w in members)
        tokens.append(Token(" ".join(w[4] for w in members), (x0, y0, x1, y1)))
    return tokens


@dataclass
class PageDiff:
    """The differences of one page pair: report entries, and the tokens to highlight on either side."""

    page: int
    changes: list[dict[str, Any]] = field(default_factory=list)
    removed: list[Token] = field(default_factory=list)
    added: list[Token] = field(default_factory=list)


def diff_page(number: int, old: list[Token], new: list[Token], ignore_case: bool, joiner: str) -> PageDiff:
    """difflib's opcodes over the two token lists, as ``replace`` / ``delete`` / ``insert`` entries."""
    def key(tokens: list[Token]) -> list[str]:
        return [t.text.casefold() if ignore_case else t.text for t in tokens]

    result = PageDiff(number)
    matcher = difflib.SequenceMatcher(None, key(old), key(new), autojunk=False)
    for op, a0, a1, b0, b1 in matcher.get_opcodes():
        if op == "equal":
            continue
        entry: dict[str, Any] = {"op": op}
        if a1 > a0:
            entry["removed"] = joiner.join(t.text for t in old[a0:a1])
            result.removed.extend(old[a0:a1])
        if b1 > b0:
            entry["added"] = joiner.join(t.text for t in new[b0:b1])
            result.added.extend(new[b0:b1])
        result.changes.append(entry)
    return result


def place(sheet: pymupdf.Page, where: pymupdf.Rect, source: pymupdf.Document, index: int,
          tokens: list[Token], colour: tuple[float, float, float]) -> None:
    """Show page ``index`` of ``source`` (made :func:`upright`) in ``where`` on ``sheet``, ``tokens`` highlighted."""
    import pymupdf

    sheet.show_pdf_page(where, source, index)
    shown = source[index].rect
    scale = min(where.width / shown.width, where.height / shown.height)
    # show_pdf_page centres the page in the box: the same shift applies to every token
    offset = pymupdf.Point(where.x0 + (where.width - shown.width * scale) / 2,
                           where.y0 + (where.height - shown.height * scale) / 2)
    quads = []
    for token in tokens:
        rect = pymupdf.Rect(token.rect) * pymupdf.Matrix(scale, scale)
        quads.append((rect + (offset.x, offset.y, offset.x, offset.y)).quad)
    if quads:
        annot = sheet.add_highlight_annot(quads)
        annot.set_colors(stroke=colour)
        annot.set_info(content="removed" if colour == REMOVED_COLOUR else "added")
        annot.update()


class PdfCompare(PdfTool):
    """Compare the text of two PDFs, page 1 with page 1, page 2 with page 2 ..."""

    id = "pdf-compare"
    title = "Compare PDFs"
    description = (
        "Find the text differences between two PDFs, page by page: a PDF with both versions side by side and "
        "the changes highlighted (removed in red, added in green), or a JSON report."
    )
    produces = ("pdf", "json")
    params = CompareParams
    merges_inputs = True
    max_inputs = 2
    timeout_seconds = 1800.0

    def pages_worked(self, doc: pymupdf.Document, params: Any) -> int | None:
        return int(doc.page_count)

    def precheck(self, inputs: Sequence[InputFile], params: Any, env: ToolEnv | None = None) -> None:
        check_two(inputs)
        super().precheck(inputs, params, env)

    def run(self, ctx: Context) -> None:
        import pymupdf

        check_two(ctx.inputs)
        first, second = ctx.inputs
        old = self.open_checked(ctx, first)
        try:
            new = self.open_checked(ctx, second)
        except BaseException:
            old.close()
            raise
        sheets = pymupdf.open()
        try:
            diffs = self.compare(ctx, old, new, sheets if ctx.output_format == "pdf" else None)
            stem = f"{stem_of(first)}-vs-{stem_of(second)}"
            if ctx.output_format == "pdf":
                save_pdf(sheets, ctx.output_path(stem, "pdf"))
            else:
                write_report(ctx, stem, first, second, old.page_count, new.page_count, diffs)
        finally:
            sheets.close()
            new.close()
            old.close()
        changed = [d.page for d in diffs if d.changes]
        ctx.notes.append(f"{len(changed)} of {len(diffs)} page(s) differ" + (
            f": {', '.join(map(str, changed[:50]))}{' ...' if len(changed) > 50 else ''}." if changed else "."))
        ctx.progress(1.0)

    def compare(self, ctx: Context, old: pymupdf.Document, new: pymupdf.Document,
                sheets: pymupdf.Document | None) -> list[PageDiff]:
        """Diff every page pair; a page only one PDF has counts as wholly removed or added."""
        params: CompareParams = ctx.params
        joiner = " " if params.granularity == "words" else "\n"
        count = max(old.page_count, new.page_count)
        diffs = []
        for index in range(count):
            ctx.check_cancelled()
            left = page_tokens(upright(old[index]), params.granularity) if index < old.page_count else []
            right = page_tokens(upright(new[index]), params.granularity) if index < new.page_count else []
            diff = diff_page(index + 1, left, right, params.ignore_case, joiner)
            diffs.append(diff)
            if sheets is not None:
                add_sheet(sheets, old, new, index, diff)
            ctx.progress(0.95 * (index + 1) / count)
        return diffs


def upright(page: pymupdf.Page) -> pymupdf.Page:
    """The page with its /Rotate turned into its content (in memory only; the inputs are never saved).

    Then the text's coordinates are where a reader sees it, and ``show_pdf_page`` (which ignores a
    source page's /Rotate) shows it the way the reader does.
    """
    if page.rotation:
        page.remove_rotation()
    return page


def check_two(inputs: Sequence[InputFile]) -> None:
    if len(inputs) != 2:
        raise ConversionError("invalid_params", f"pdf-compare takes exactly two PDFs; {len(inputs)} were given.")


def add_sheet(sheets: pymupdf.Document, old: pymupdf.Document, new: pymupdf.Document, index: int,
              diff: PageDiff) -> None:
    """One landscape sheet: the first PDF's page on the left, the second's on the right."""
    import pymupdf

    left = old[index].rect if index < old.page_count else None
    right = new[index].rect if index < new.page_count else None
    shown = [rect for rect in (left, right) if rect is not None]
    width, height = max(rect.width for rect in shown), max(rect.height for rect in shown)
    sheet = sheets.new_page(width=2 * width + GAP, height=height)
    if left is not None:
        place(sheet, pymupdf.Rect(0, 0, width, height), old, index, diff.removed, REMOVED_COLOUR)
    if right is not None:
        place(sheet, pymupdf.Rect(width + GAP, 0, 2 * width + GAP, height), new, index, diff.added, ADDED_COLOUR)


def write_report(ctx: Context, stem: str, first: InputFile, second: InputFile, old_pages: int, new_pages: int,
                 diffs: list[PageDiff]) -> None:
    report = {
        "files": [first.name, second.name],
        "pageCounts": [old_pages, new_pages],
        "granularity": ctx.params.granularity,
        "identical": not any(d.changes for d in diffs),
        "pagesChanged": [d.page for d in diffs if d.changes],
        "pages": [{"page": d.page, "changes": d.changes} for d in diffs if d.changes],
    }
    with atomic_output(ctx.output_path(stem, "json")) as tmp:
        tmp.write_text(json.dumps(report, indent=2, ensure_ascii=False), encoding="utf-8")

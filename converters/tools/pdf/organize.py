# PyMuPDF annotates only part of its API; calls into the rest are untyped by no fault of ours.
# mypy: disable-error-code="no-untyped-call"
"""``pdf-organize``: put pages in a new order — written out, reversed, duplicated, moved, or two scanned
stacks (fronts and backs) interleaved into one document."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field, model_validator

from converters.base import CamelParams, Context, ConversionError, InputFile, ToolEnv
from converters.engines.mupdf import save_pdf
from converters.inputs.pages import page_set, parse_pages
from converters.tools.pdf.common import PageSpec, PdfTool, check_input_count, pages_field, stem_of

if TYPE_CHECKING:
    import pymupdf

Mode = Literal["order", "reverse", "duplicate", "oddEven", "move", "interleave"]


class OrganizeParams(CamelParams):
    mode: Mode = Field(
        "reverse",
        description="order: the pages written in 'order', in that order (repeats allowed, pages left out are "
        "dropped); reverse: last page first; duplicate: each page 'copies' times; oddEven: odd pages, then even "
        "ones; move: the 'pages' go before page 'before'; interleave: fronts and backs of a duplex scan merged "
        "(two PDFs, or one whose second half is the backs).",
        title="What to do",
        json_schema_extra={
            "x-enumLabels": {
                "order": "Put pages in an order",
                "reverse": "Reverse",
                "duplicate": "Duplicate pages",
                "oddEven": "Odd pages, then even",
                "move": "Move pages",
                "interleave": "Merge a duplex scan",
            },
            "x-enumDescriptions": {
                "order": "The pages in the order given (repeats allowed, pages left out are dropped).",
                "reverse": "Last page first.",
                "duplicate": "Each page as many times as given.",
                "oddEven": "Odd pages, then even ones.",
                "move": "The pages given go before the page given.",
                "interleave": "Fronts and backs of a duplex scan merged (two PDFs, or one whose second half is "
                "the backs).",
            },
        },
    )
    order: PageSpec | None = pages_field(None, 'With mode "order": the new page order, e.g. "3,1-2,5-"')
    copies: int = Field(2, ge=2, le=100, description='With mode "duplicate": how many times each page appears.')
    collate: bool = Field(
        False, description='With mode "duplicate": repeat the whole document (1,2,3,1,2,3) instead of each page '
        "in turn (1,1,2,2,3,3).",
    )
    pages: PageSpec | None = pages_field(None, 'With mode "move": the pages to move, kept in their own order')
    before: int = Field(
        1, ge=1, le=1_000_000,
        description='With mode "move": the moved pages go before this page (one past the last page: to the end).',
    )
    reverse_backs: bool = Field(
        True, description='With mode "interleave": the backs were scanned last page first, as a turned-over '
        "stack comes out of a simplex scanner.",
    )

    @model_validator(mode="after")
    def _mode_needs(self) -> OrganizeParams:
        if self.mode == "order" and self.order is None:
            raise ValueError('mode "order" needs "order", the new page order')
        if self.mode == "move" and self.pages is None:
            raise ValueError('mode "move" needs "pages", the pages to move')
        return self


def new_order(params: OrganizeParams, count: int, backs: int = 0) -> list[int]:
    """The output's pages as 0-based indexes into the input (the backs, if any, follow at ``count``...)."""
    everything = list(range(count))
    if params.mode == "order":
        assert params.order is not None
        return parse_pages(params.order, count)
    if params.mode == "reverse":
        return everything[::-1]
    if params.mode == "duplicate":
        if params.collate:
            return everything * params.copies
        return [index for index in everything for _ in range(params.copies)]
    if params.mode == "oddEven":
        return everything[0::2] + everything[1::2]
    if params.mode == "move":
        assert params.pages is not None
        if params.before > count + 1:
            raise ConversionError("invalid_pages", f"There is no page {params.before} to move pages before: the "
                                                   f"document has {count} pages (use {count + 1} for the end).")
        moved = sorted(page_set(params.pages, count))
        chosen = set(moved)
        head = [index for index in range(params.before - 1) if index not in chosen]
        tail = [index for index in range(params.before - 1, count) if index not in chosen]
        return head + moved + tail
    return interleaved(count, backs, params.reverse_backs)


def interleaved(count: int, backs: int, reverse_backs: bool) -> list[int]:
    """Fronts ``0..count-1`` and backs ``count..count+backs-1`` as front, back, front, back ...

    With one document (``backs == 0``) its first half are the fronts and its second half the backs.
    """
    if backs == 0:
        if count % 2:
            raise ConversionError("invalid_pages", f"The document has {count} pages: an odd number cannot be "
                                                   "split into as many fronts as backs.")
        count = backs = count // 2
    if count != backs:
        raise ConversionError("invalid_pages", f"The fronts have {count} pages and the backs {backs}: a duplex "
                                               "scan has as many of each.")
    back_pages = list(range(count, count + backs))
    if reverse_backs:
        back_pages.reverse()
    return [page for pair in zip(range(count), back_pages, strict=True) for page in pair]


class PdfOrganize(PdfTool):
    """Reorder, reverse, duplicate or move pages, or interleave the two sides of a duplex scan."""

    id = "pdf-organize"
    title = "Organize PDF pages"
    description = (
        "Put the pages in a new order: written out, reversed, duplicated, odd then even, moved, or the fronts "
        "and backs of a scanned stack interleaved."
    )
    params = OrganizeParams
    merges_inputs = True  # interleave takes the backs as a second PDF
    max_inputs = 2

    def page_spec(self, params: Any) -> str | None:
        spec = params.order if params.mode == "order" else params.pages if params.mode == "move" else None
        return spec if isinstance(spec, str) else None

    def pages_worked(self, doc: pymupdf.Document, params: Any) -> int | None:
        if params.mode == "interleave":
            return None  # both documents are counted when they are joined
        return len(new_order(params, doc.page_count))

    def precheck(self, inputs: Sequence[InputFile], params: Any, env: ToolEnv | None = None) -> None:
        check_input_count(self.id, inputs, (1, 2) if params.mode == "interleave" else (1,))
        super().precheck(inputs, params, env)

    def run(self, ctx: Context) -> None:
        import pymupdf

        params: OrganizeParams = ctx.params
        check_input_count(self.id, ctx.inputs, (1, 2) if params.mode == "interleave" else (1,))
        doc = self.open_checked(ctx, ctx.inputs[0])
        try:
            count, backs = doc.page_count, 0
            if len(ctx.inputs) == 2:
                second = self.open_checked(ctx, ctx.inputs[1])
                try:
                    backs = second.page_count
                    doc.insert_pdf(second)
                finally:
                    second.close()
            order = new_order(params, count, backs)
            self.check_count(ctx, len(order))
            ctx.progress(0.3)
            ctx.check_cancelled()
            if len(set(order)) == len(order):
                doc.select(order)
            else:  # select() keeps one copy of a repeated page; copies need their own page objects
                out = pymupdf.open()
                try:
                    for done, index in enumerate(order, start=1):
                        out.insert_pdf(doc, from_page=index, to_page=index)
                        if done % 50 == 0:
                            ctx.check_cancelled()
                            ctx.progress(0.3 + 0.5 * done / len(order))
                    out.set_metadata(doc.metadata or {})
                    doc.close()
                    doc = out
                except BaseException:
                    out.close()
                    raise
            ctx.progress(0.8)
            ctx.check_cancelled()
            save_pdf(doc, ctx.output_path(stem_of(ctx.inputs[0]), "pdf"))
        finally:
            doc.close()
        ctx.progress(1.0)

    def check_count(self, ctx: Context, pages: int) -> None:
        from converters.inputs.limits import page_limit

        limit = page_limit(ctx.env)
        if pages > limit:
            raise ConversionError("input_too_large", f"The result would have {pages:,} pages; the limit is "
                                                     f"{limit:,}.")

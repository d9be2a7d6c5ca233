# PyMuPDF annotates only part of its API; calls into the rest are untyped by no fault of ours.
# mypy: disable-error-code="no-untyped-call"
"""A :class:`~converters.tools.email.message.Message` laid out as PDF pages by MuPDF's Story.

Nothing a message points to is fetched. The HTML body is rebuilt from a short list of harmless tags and
attributes (no styles, scripts, frames or forms); an image is kept only when the message carries it
(``cid:``), and is handed to MuPDF from memory; links stay links, never followed.
"""

from __future__ import annotations

import html
import io
from collections.abc import Callable
from html.parser import HTMLParser

from converters.base import Context, ConversionError
from converters.inputs.limits import pixel_limit
from converters.tools.email.message import Message, Part

PAGE = (595.0, 842.0)  # A4
MARGIN = 48.0
# The largest a picture is drawn: the text width, and most of a page's height (one that does not fit on a
# page would make MuPDF start page after page).
MAX_PICTURE = (PAGE[0] - 2 * MARGIN, PAGE[1] - 2 * MARGIN - 100)
MAX_PAGES = 2000
CSS = """
body { font-family: sans-serif; font-size: 10pt; }
table.headers td { padding: 1pt 6pt 1pt 0; vertical-align: top; }
td.name { font-weight: bold; color: #555555; }
pre { white-space: pre-wrap; font-family: monospace; font-size: 9pt; }
div.attachments { margin-top: 12pt; border-top: 1px solid #999999; padding-top: 6pt; }
"""
KEPT_TAGS = frozenset({
    "p", "br", "div", "span", "b", "strong", "i", "em", "u", "s", "sub", "sup", "small", "big", "h1", "h2", "h3",
    "h4", "h5", "h6", "ul", "ol", "li", "dl", "dt", "dd", "blockquote", "pre", "code", "hr", "table", "thead",
    "tbody", "tfoot", "tr", "td", "th", "caption", "a", "img", "center", "font",
})
DROPPED_WITH_CONTENT = frozenset({"script", "style", "head", "title", "iframe", "object", "embed", "svg", "math",
                                  "noscript", "template", "form", "select", "textarea", "button"})
VOID = frozenset({"br", "hr", "img"})
TABLE_TAGS = frozenset({"table", "thead", "tbody", "tfoot", "tr", "td", "th", "caption"})
KEPT_ATTRIBUTES = {"a": {"href"}, "img": {"src", "alt", "width", "height"}, "td": {"colspan", "rowspan"},
                   "th": {"colspan", "rowspan"}}


class SafeHtml(HTMLParser):
    """Rebuilds HTML from the harmless tags and attributes only; ``images`` maps a ``cid:`` to its archive name
    and pixel size (pictures are drawn at most :data:`MAX_PICTURE`)."""

    def __init__(self, images: dict[str, tuple[str, int, int]], tables: bool = True) -> None:
        super().__init__(convert_charrefs=True)
        self.images = images
        self.tables = tables  # False: table elements become plain blocks (for rows taller than a page)
        self.out: list[str] = []
        self.skipping = 0  # depth inside an element dropped with its content
        self.dropped = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in DROPPED_WITH_CONTENT:
            self.skipping += tag not in VOID
            self.dropped += 1
            return
        if self.skipping or tag not in KEPT_TAGS:
            return
        kept = []
        given = dict(attrs)
        for name, value in attrs:
            if name not in KEPT_ATTRIBUTES.get(tag, ()) or value is None or name in ("width", "height"):
                continue
            if name == "href" and not value.lower().startswith(("http://", "https://", "mailto:")):
                continue
            if name == "src":
                target = self.images.get(value[4:].strip("<>")) if value.lower().startswith("cid:") else None
                if target is None:
                    self.dropped += 1
                    return  # a picture from outside the message: not fetched, not shown
                value = target[0]
                width, height = fitted(target[1:], given.get("width"), given.get("height"))
                kept.append(f' width="{width}" height="{height}"')
            kept.append(f' {name}="{html.escape(value, quote=True)}"')
        if tag == "img" and "src" not in given:
            return
        if not self.tables and tag in TABLE_TAGS:
            tag, kept = "div", []
        self.out.append(f"<{tag}{''.join(kept)}>")

    def handle_endtag(self, tag: str) -> None:
        if tag in DROPPED_WITH_CONTENT:
            self.skipping = max(0, self.skipping - 1)
        elif not self.skipping and tag in KEPT_TAGS and tag not in VOID:
            self.out.append(f"</{'div' if not self.tables and tag in TABLE_TAGS else tag}>")

    def handle_data(self, data: str) -> None:
        if not self.skipping:
            self.out.append(html.escape(data))


def fitted(natural: tuple[int, int], width: str | None, height: str | None) -> tuple[int, int]:
    """A picture's drawn size: as the HTML asks (else its own, in pixels), shrunk to fit :data:`MAX_PICTURE`."""
    w, h = float(natural[0]), float(natural[1])
    asked_w, asked_h = _number(width), _number(height)
    if asked_w and asked_h:
        w, h = asked_w, asked_h
    elif asked_w:
        w, h = asked_w, asked_w * h / w
    elif asked_h:
        w, h = asked_h * w / h, asked_h
    scale = min(1.0, MAX_PICTURE[0] / w, MAX_PICTURE[1] / h)
    return max(1, round(w * scale)), max(1, round(h * scale))


def _number(value: str | None) -> float | None:
    try:
        number = float((value or "").strip().removesuffix("px"))
    except ValueError:
        return None
    return number if 0 < number < 100_000 else None


def picture_size(data: bytes, limit: int) -> tuple[int, int] | None:
    """A picture's pixel size from its header (nothing decoded); ``None`` when unreadable or over ``limit``."""
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(io.BytesIO(data)) as image:
            width, height = image.size
    except (UnidentifiedImageError, OSError, ValueError, Image.DecompressionBombError):
        return None
    return (width, height) if 0 < width * height <= limit else None


def describe(part: Part) -> str:
    """A line of the attachment list: name and size, and the subject of an attached message."""
    name = html.escape(part.name)
    if part.subject is not None:
        subject = html.escape(part.subject) if part.subject else "no subject"
        return f"{name} (attached message “{subject}”, {len(part.data):,} bytes)"
    if not part.data:
        return f"{name} (not stored in the message)"
    return f"{name} ({len(part.data):,} bytes)"


class Unplaceable(Exception):
    """Something in the page is taller than a page and cannot be split (a table row, as MuPDF lays it out)."""


def render(message: Message, prefer: str, ctx: Context, progress: Callable[[float], None]) -> bytes:
    """The message as PDF pages. Layout tables whose rows come out taller than a page (newsletters nest
    tables many deep) are laid out a second time as plain blocks, top to bottom."""
    import pymupdf

    for tables in (True, False):
        archive = pymupdf.Archive()
        notes: list[str] = []
        page = page_html(message, prefer, archive, ctx, notes, tables)
        try:
            pdf = layout(page, archive, ctx, progress)
        except Unplaceable:
            continue
        ctx.notes.extend(notes)
        if not tables:
            ctx.notes.append("The message's layout tables were taller than a page: shown without their columns.")
        return pdf
    raise ConversionError("render_failed", "The message holds something taller than a page that cannot be split.")


def page_html(message: Message, prefer: str, archive: object, ctx: Context, notes: list[str],
              tables: bool = True) -> str:
    """The message as one HTML page: headers, body, attachment list; its pictures added to ``archive``."""
    images: dict[str, tuple[str, int, int]] = {}
    for number, part in enumerate(message.parts):
        size = picture_size(part.data, pixel_limit(ctx.env)) if part.picture else None
        if size is not None:
            name = f"picture-{number}.{part.content_type.split('/', 1)[1].split(';')[0].strip() or 'png'}"
            archive.add(part.data, name)  # type: ignore[attr-defined]
            images[part.content_id] = (name, *size)
        elif part.picture:
            notes.append(f"{part.name}: a picture that cannot be read, or is too large to draw, left out.")
    use_html = message.html is not None and (prefer == "html" or message.text is None)
    if use_html:
        cleaner = SafeHtml(images, tables)
        cleaner.feed(message.html or "")
        cleaner.close()
        shown = "".join(cleaner.out)
        if cleaner.dropped:
            notes.append(f"{cleaner.dropped} remote picture{'s' if cleaner.dropped != 1 else ''}, scripts or "
                         "frames left out: nothing a message points to is fetched.")
    elif message.text is not None:
        shown = f"<pre>{html.escape(message.text)}</pre>"
    else:
        shown = "<p><i>(no text)</i></p>"
    rows = "".join(f'<tr><td class="name">{name}:</td><td>{html.escape(value)}</td></tr>'
                   for name, value in message.headers)
    listed = ""
    if message.attachments:
        items = "".join(f"<li>{describe(part)}</li>" for part in message.attachments)
        listed = f'<div class="attachments"><b>Attachments</b><ul>{items}</ul></div>'
    return f'<table class="headers">{rows}</table><hr/>{shown}{listed}'


def layout(page: str, archive: object, ctx: Context, progress: Callable[[float], None]) -> bytes:
    """The HTML laid out on A4 pages by MuPDF's Story, pictures from ``archive`` only; raises
    :class:`Unplaceable` when the layout stops moving on (a block far taller than the page, placed again and
    again)."""
    import pymupdf

    buffer = io.BytesIO()
    story = pymupdf.Story(html=f"<body>{page}</body>", user_css=CSS, archive=archive)
    writer = pymupdf.DocumentWriter(buffer)
    mediabox = pymupdf.Rect(0, 0, *PAGE)
    box = mediabox + (MARGIN, MARGIN, -MARGIN, -MARGIN)
    pages, more, last = 0, True, None
    while more:
        ctx.check_cancelled()
        device = writer.begin_page(mediabox)
        more, filled = story.place(box)
        overflow = filled[3] - box.y1
        if more and overflow > box.height / 2 and filled == last:
            raise Unplaceable()
        last = filled
        story.draw(device)
        writer.end_page()
        pages += 1
        if pages > MAX_PAGES:
            raise ConversionError("input_too_large", f"The message would take more than {MAX_PAGES:,} pages.")
        progress(min(0.9, 0.2 + 0.02 * pages))
    writer.close()
    return buffer.getvalue()

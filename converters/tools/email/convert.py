# PyMuPDF annotates only part of its API; calls into the rest are untyped by no fault of ours.
# mypy: disable-error-code="no-untyped-call"
"""``email-to-pdf``: an e-mail message (EML) as a PDF: its headers, its body, its inline pictures, and
its attachments listed (or also written out).

Nothing a message points to is fetched. The HTML body is rebuilt from a short list of harmless tags and
attributes (no styles, scripts, frames or forms); an image is kept only when the message carries it
(``cid:``), and is handed to MuPDF from memory; links stay links, never followed.
"""

from __future__ import annotations

import email
import email.policy
import html
import io
from collections.abc import Callable
from email.message import EmailMessage, MIMEPart
from html.parser import HTMLParser
from typing import Literal

from pydantic import Field

from converters.base import CamelParams, Context, ConversionError, InputFile, Tool, atomic_output
from converters.engines.mupdf import PYMUPDF

MAX_MESSAGE_BYTES = 50 * 1024**2
MAX_PARTS = 500
PAGE = (595.0, 842.0)  # A4
MARGIN = 48.0
SHOWN_HEADERS = ("From", "To", "Cc", "Date", "Subject")
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
KEPT_ATTRIBUTES = {"a": {"href"}, "img": {"src", "alt", "width", "height"}, "td": {"colspan", "rowspan"},
                   "th": {"colspan", "rowspan"}}


class EmailParams(CamelParams):
    attachments: Literal["list", "extract"] = Field(
        "list", description="list: name and size of each attachment at the end of the PDF; extract: also write "
        "each attachment as a file of its own (the result is then a ZIP).",
    )
    prefer: Literal["html", "text"] = Field("html", description="Which body to show when the message has both.")


class SafeHtml(HTMLParser):
    """Rebuilds HTML from the harmless tags and attributes only; ``images`` maps a ``cid:`` to its archive name."""

    def __init__(self, images: dict[str, str]) -> None:
        super().__init__(convert_charrefs=True)
        self.images = images
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
        for name, value in attrs:
            if name not in KEPT_ATTRIBUTES.get(tag, ()) or value is None:
                continue
            if name == "href" and not value.lower().startswith(("http://", "https://", "mailto:")):
                continue
            if name == "src":
                target = self.images.get(value[4:].strip("<>")) if value.lower().startswith("cid:") else None
                if target is None:
                    self.dropped += 1
                    return  # a picture from outside the message: not fetched, not shown
                value = target
            kept.append(f' {name}="{html.escape(value, quote=True)}"')
        self.out.append(f"<{tag}{''.join(kept)}>")

    def handle_endtag(self, tag: str) -> None:
        if tag in DROPPED_WITH_CONTENT:
            self.skipping = max(0, self.skipping - 1)
        elif not self.skipping and tag in KEPT_TAGS and tag not in VOID:
            self.out.append(f"</{tag}>")

    def handle_data(self, data: str) -> None:
        if not self.skipping:
            self.out.append(html.escape(data))


def parse_message(source: InputFile) -> EmailMessage:
    if source.path.stat().st_size > MAX_MESSAGE_BYTES:
        raise ConversionError("input_too_large", f"The message is over {MAX_MESSAGE_BYTES // 1024**2} MB.")
    with open(source.path, "rb") as f:
        message = email.message_from_binary_file(f, policy=email.policy.default)
    if not isinstance(message, EmailMessage) or not message.keys():
        raise ConversionError("damaged_input", "The file holds no e-mail headers.")
    if sum(1 for _ in message.walk()) > MAX_PARTS:
        raise ConversionError("input_too_large", f"The message has more than {MAX_PARTS} parts.")
    return message


def text_of(part: MIMEPart) -> str:
    try:
        return str(part.get_content())
    except (LookupError, ValueError, AssertionError):  # an unknown charset, a broken transfer encoding
        payload = part.get_payload(decode=True)
        return payload.decode("utf-8", "replace") if isinstance(payload, bytes) else ""


def header(message: EmailMessage, name: str) -> str:
    try:
        return str(message.get(name, "") or "")
    except (ValueError, IndexError, TypeError):  # a header the policy cannot parse: its raw text
        return str(message.get_all(name, [""])[0])


class EmailToPdf(Tool):
    """Turn an e-mail message into a PDF: headers, body, inline pictures, and its attachments listed."""

    id = "email-to-pdf"
    category = "documents"
    title = "E-mail to PDF"
    description = (
        "Turn an e-mail message (.eml) into a PDF: sender, recipients, date and subject, the message as shown, "
        "its inline pictures, and a list of its attachments (optionally written out too). Nothing it links to "
        "is fetched."
    )
    accepts = ("eml",)
    produces = ("pdf",)
    params = EmailParams
    engines = (PYMUPDF,)
    timeout_seconds = 300.0

    def convert(self, ctx: Context, source: InputFile, progress: Callable[[float], None]) -> None:
        import pymupdf

        params: EmailParams = ctx.params
        message = parse_message(source)
        archive = pymupdf.Archive()
        images: dict[str, str] = {}
        attachments: list[tuple[str, bytes]] = []
        for number, part in enumerate(message.walk()):
            if part.is_multipart():
                continue
            disposition = part.get_content_disposition()
            content_id = str(part.get("Content-ID", "") or "").strip().strip("<>")
            if part.get_content_maintype() == "image" and content_id and disposition != "attachment":
                data = part.get_payload(decode=True)
                if isinstance(data, bytes) and data:
                    name = f"inline-{number}.{part.get_content_subtype() or 'png'}"
                    archive.add(data, name)
                    images[content_id] = name
            elif disposition == "attachment" or (part.get_filename() and disposition != "inline"):
                data = part.get_payload(decode=True)
                attachments.append((part.get_filename() or f"attachment-{number}", data if isinstance(data, bytes)
                                    else b""))
        progress(0.2)
        ctx.check_cancelled()
        body = message.get_body(preferencelist=("html", "plain") if params.prefer == "html" else ("plain", "html"))
        if body is None:
            shown = "<p><i>(no text)</i></p>"
        elif body.get_content_subtype() == "html":
            cleaner = SafeHtml(images)
            cleaner.feed(text_of(body))
            cleaner.close()
            shown = "".join(cleaner.out)
            if cleaner.dropped:
                ctx.notes.append(f"{cleaner.dropped} remote picture{'s' if cleaner.dropped != 1 else ''}, script"
                                 "s or frames left out: nothing a message points to is fetched.")
        else:
            shown = f"<pre>{html.escape(text_of(body))}</pre>"
        rows = "".join(f'<tr><td class="name">{name}:</td><td>{html.escape(header(message, name))}</td></tr>'
                       for name in SHOWN_HEADERS if header(message, name))
        listed = ""
        if attachments:
            items = "".join(f"<li>{html.escape(name)} ({len(data):,} bytes)</li>" for name, data in attachments)
            listed = f'<div class="attachments"><b>Attachments</b><ul>{items}</ul></div>'
        page = f'<table class="headers">{rows}</table><hr/>{shown}{listed}'
        pdf = render(page, archive, ctx, progress)
        with atomic_output(ctx.output_path(source.name or source.path.name, "pdf")) as tmp:
            tmp.write_bytes(pdf)
        if params.attachments == "extract":
            for name, data in attachments:
                ctx.check_cancelled()
                with atomic_output(ctx.output_path(name, attachment_ext(name))) as tmp:
                    tmp.write_bytes(data)
        progress(1.0)


def attachment_ext(name: str) -> str:
    suffix = name.rsplit(".", 1)[-1].lower() if "." in name else ""
    return suffix if suffix.isalnum() and 1 <= len(suffix) <= 12 else "bin"


def render(page: str, archive: object, ctx: Context, progress: Callable[[float], None]) -> bytes:
    """The HTML laid out on A4 pages by MuPDF's Story, pictures from ``archive`` only."""
    import pymupdf

    buffer = io.BytesIO()
    story = pymupdf.Story(html=f"<body>{page}</body>", user_css=CSS, archive=archive)
    writer = pymupdf.DocumentWriter(buffer)
    mediabox = pymupdf.Rect(0, 0, *PAGE)
    pages, more = 0, True
    while more:
        ctx.check_cancelled()
        device = writer.begin_page(mediabox)
        more, _ = story.place(mediabox + (MARGIN, MARGIN, -MARGIN, -MARGIN))
        story.draw(device)
        writer.end_page()
        pages += 1
        if pages > 2000:
            raise ConversionError("input_too_large", "The message would take more than 2,000 pages.")
        progress(min(0.9, 0.2 + 0.02 * pages))
    writer.close()
    return buffer.getvalue()

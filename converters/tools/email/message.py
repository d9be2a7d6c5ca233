"""The message ``email-to-pdf`` lays out, whatever file it came from, and how an EML file is read into it.

An EML file (the standard library's parser) and an Outlook MSG file (:mod:`converters.tools.email.outlook`)
both become one :class:`Message`: the headers shown, the bodies as text, and every part a reader could open
(attachments, pictures the HTML body shows by ``cid:``, attached messages). Layout works on that alone.
"""

from __future__ import annotations

import email
import email.policy
from dataclasses import dataclass, field
from email.message import EmailMessage, MIMEPart
from email.message import Message as StdMessage
from pathlib import Path

from converters.base import ConversionError

MAX_MESSAGE_BYTES = 50 * 1024**2
MAX_PARTS = 500
SHOWN_HEADERS = ("From", "To", "Cc", "Date", "Subject")


@dataclass(frozen=True)
class Part:
    """Something a message carries besides its body."""

    name: str
    data: bytes
    content_type: str = ""  # "image/png" ...; empty when the message does not say
    content_id: str = ""  # what the HTML body calls it (``cid:...``), without angle brackets
    inline: bool = False  # a picture shown in the body only, not an attachment of its own
    subject: str | None = None  # an attached message: its subject (``""`` when it has none)

    @property
    def picture(self) -> bool:
        # An SVG may point at files and addresses: pictures are the raster kinds, drawn from their own bytes.
        return (bool(self.content_id) and self.content_type.startswith("image/") and "svg" not in self.content_type
                and bool(self.data))


@dataclass
class Message:
    """One e-mail, read: the headers shown (name, value), its HTML and plain bodies, and its parts."""

    headers: list[tuple[str, str]]
    html: str | None = None
    text: str | None = None
    parts: list[Part] = field(default_factory=list)

    @property
    def attachments(self) -> list[Part]:
        return [part for part in self.parts if not part.inline]


def check_size(path: Path) -> None:
    if path.stat().st_size > MAX_MESSAGE_BYTES:
        raise ConversionError("input_too_large", f"The message is over {MAX_MESSAGE_BYTES // 1024**2} MB.")


def read_eml(path: Path) -> Message:
    """An RFC 5322 message (.eml); attached messages are listed as parts, not opened."""
    check_size(path)
    with open(path, "rb") as f:
        message = email.message_from_binary_file(f, policy=email.policy.default)
    if not isinstance(message, EmailMessage) or not message.keys():
        raise ConversionError("damaged_input", "The file holds no e-mail headers.")
    if sum(1 for _ in message.walk()) > MAX_PARTS:
        raise ConversionError("input_too_large", f"The message has more than {MAX_PARTS} parts.")
    parts = []
    for number, part in enumerate(_leaves(message)):
        disposition = part.get_content_disposition()
        content_type = part.get_content_type()
        if content_type == "message/rfc822":
            parts.append(_attached_message(part, number))
            continue
        content_id = str(part.get("Content-ID", "") or "").strip().strip("<>")
        if part.get_content_maintype() == "image" and content_id and disposition != "attachment":
            parts.append(Part(f"inline-{number}", _payload(part), content_type, content_id, inline=True))
        elif disposition == "attachment" or (part.get_filename() and disposition != "inline"):
            parts.append(Part(part.get_filename() or f"attachment-{number}", _payload(part), content_type,
                              content_id))
    html = message.get_body(preferencelist=("html",))
    plain = message.get_body(preferencelist=("plain",))
    return Message(
        headers=[(name, header(message, name)) for name in SHOWN_HEADERS if header(message, name)],
        html=text_of(html) if html is not None else None,
        text=text_of(plain) if plain is not None else None,
        parts=parts,
    )


def _leaves(part: StdMessage) -> list[MIMEPart]:
    """The parts that hold content, in order; an attached message is one part (its insides are its own)."""
    if part.get_content_type() == "message/rfc822" or not part.is_multipart():
        return [part]  # type: ignore[list-item]  # the policy makes every part a MIMEPart
    found: list[MIMEPart] = []
    for child in part.get_payload():
        if isinstance(child, StdMessage):
            found.extend(_leaves(child))
    return found


def _payload(part: MIMEPart) -> bytes:
    data = part.get_payload(decode=True)
    return data if isinstance(data, bytes) else b""


def _attached_message(part: MIMEPart, number: int) -> Part:
    inner = part.get_payload(0) if part.is_multipart() else None
    try:
        data = inner.as_bytes() if isinstance(inner, StdMessage) else b""
    except (LookupError, ValueError, UnicodeError):  # a header that cannot be written back as it was read
        data = b""
    subject = header(inner, "Subject") if isinstance(inner, EmailMessage) else ""
    return Part(part.get_filename() or f"message-{number}.eml", data, "message/rfc822", subject=subject)


def text_of(part: MIMEPart) -> str:
    try:
        return str(part.get_content())
    except (LookupError, ValueError, AssertionError):  # an unknown charset, a broken transfer encoding
        return _payload(part).decode("utf-8", "replace")


def header(message: EmailMessage, name: str) -> str:
    try:
        return str(message.get(name, "") or "")
    except (ValueError, IndexError, TypeError):  # a header the policy cannot parse: its raw text
        return str(message.get_all(name, [""])[0])

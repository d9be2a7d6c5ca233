"""Outlook MSG files read into a :class:`~converters.tools.email.message.Message`, through ``extract-msg``.

An MSG file is an OLE2 compound file: a directory of storages and streams, one stream per property
(``__substg1.0_<id><type>``), one storage per recipient and per attachment, and an attached message as a
storage inside its attachment's. Before ``extract-msg`` reads anything, the directory is measured against
the limits (attachments, nesting of attached messages, the size the RTF body claims), and the RTF body is
inflated here, counting, rather than by a decompressor that trusts the stream. Attached messages are listed
(and written out as MSG files of their own on request), never laid out.
"""

from __future__ import annotations

import codecs
import email.utils
import re
import struct
from pathlib import Path
from typing import Any

from converters.base import ConversionError
from converters.tools.email.message import Message, Part, check_size

MAX_ENTRIES = 20_000  # directory entries: storages and streams, every level
MAX_ATTACHMENTS = 500  # every level
MAX_DEPTH = 8  # messages attached to messages attached to ...
MAX_RTF_BYTES = 16 * 1024**2
EMBEDDED = "__substg1.0_3701000D"  # the storage of an attached message
RTF_STREAM = "__substg1.0_10090102"
HTML_STREAM = "__substg1.0_10130102"
PLAIN_STREAM = "__substg1.0_1000"
CODEPAGE = "3FDE0003"  # PR_INTERNET_CPID: the charset of the HTML body
_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?([A-Za-z0-9_.:-]+)""", re.IGNORECASE)


def check_msg(path: Path) -> None:
    """Refuse, from the directory alone, a message over the limits or a file that is no Outlook message."""
    import olefile

    check_size(path)
    try:
        # DEFECT_INCORRECT: a stream whose sectors run past the end is an error, not a logged and shortened read
        with olefile.OleFileIO(str(path), raise_defects=olefile.DEFECT_INCORRECT) as ole:
            entries = ole.listdir(streams=True, storages=True)
            if not ole.exists("__properties_version1.0"):
                raise ConversionError("damaged_input", "The file is an OLE2 file but not an Outlook message.")
            rtf_head = _stream_head(ole, RTF_STREAM)
            if len(entries) <= MAX_ENTRIES:
                for entry in ole.listdir(streams=True, storages=False):
                    ole.openstream(entry).close()  # olefile follows the stream's sectors: a cut file fails here
    except ConversionError:
        raise
    except Exception as exc:  # noqa: BLE001 - olefile raises what the damage leads to (OSError, struct.error ...)
        raise ConversionError("damaged_input", f"The Outlook message cannot be read: {exc}") from None
    if len(entries) > MAX_ENTRIES:
        raise ConversionError("input_too_large", f"The message has more than {MAX_ENTRIES:,} entries.")
    attachments = sum(1 for entry in entries if entry[-1].startswith("__attach_version1.0_#"))
    if attachments > MAX_ATTACHMENTS:
        raise ConversionError("input_too_large", f"The message has {attachments:,} attachments; at most "
                                                 f"{MAX_ATTACHMENTS} are read.")
    depth = max((entry.count(EMBEDDED) for entry in entries), default=0)
    if depth > MAX_DEPTH:
        raise ConversionError("input_too_large", f"The message nests attached messages {depth} deep; at most "
                                                 f"{MAX_DEPTH} are read.")
    if len(rtf_head) >= 8 and struct.unpack_from("<I", rtf_head, 4)[0] > MAX_RTF_BYTES:
        raise ConversionError("input_too_large", f"The message's RTF body is over {MAX_RTF_BYTES // 1024**2} MB.")


def _stream_head(ole: Any, name: str) -> bytes:
    if not ole.exists(name):
        return b""
    with ole.openstream(name) as stream:
        return bytes(stream.read(16))


def read_msg(path: Path) -> Message:
    """An Outlook message (.msg): its headers, bodies (HTML, else HTML or text out of the RTF body, else
    plain text), and attachments, pictures and attached messages as parts."""
    import extract_msg
    from extract_msg.enums import ErrorBehavior
    from extract_msg.msg_classes import MessageBase

    check_msg(path)
    try:
        msg = extract_msg.openMsg(str(path), errorBehavior=ErrorBehavior.SUPPRESS_ALL)
    except Exception as exc:  # noqa: BLE001 - extract-msg raises many kinds on a damaged file
        raise ConversionError("damaged_input", f"The Outlook message cannot be read: {exc}") from None
    try:
        if not isinstance(msg, MessageBase):
            raise ConversionError("unsupported_format", "The Outlook file holds a contact, note or other item, "
                                                        "not a message.")
        try:
            return _message(msg)
        except ConversionError:
            raise
        except Exception as exc:  # noqa: BLE001 - a property or attachment broken past extract-msg's tolerance
            raise ConversionError("damaged_input", f"The Outlook message cannot be read: {exc}") from None
    finally:
        msg.close()


def _message(msg: Any) -> Message:
    date = msg.date
    values = {"From": msg.sender, "To": msg.to, "Cc": msg.cc, "Subject": msg.subject,
              "Date": email.utils.format_datetime(date) if date is not None else ""}
    headers = [(name, str(values[name]).strip()) for name in ("From", "To", "Cc", "Date", "Subject")
               if values[name] and str(values[name]).strip()]
    html, text = _bodies(msg)
    return Message(headers=headers, html=html, text=text, parts=[_part(att, n) for n, att in
                                                                 enumerate(msg.attachments)])


def _bodies(msg: Any) -> tuple[str | None, str | None]:
    text = msg.getStringStream(PLAIN_STREAM)
    raw_html = msg.getStream(HTML_STREAM)
    html = decode_html(raw_html, msg.getPropertyVal(CODEPAGE)) if raw_html else msg.getStringStream("__substg1.0_1013")
    if html is None and msg.exists(RTF_STREAM):
        kind, content = deencapsulate(inflate_rtf(msg.getStream(RTF_STREAM) or b""))
        if kind == "html":
            html = content
        elif kind == "text" and text is None:
            text = content
    return html, text


def _part(att: Any, number: int) -> Part:
    from extract_msg.msg_classes import MSGFile

    name = str(att.longFilename or att.shortFilename or att.displayName or f"attachment-{number}")
    content_id = str(att.contentId or "").strip().strip("<>")
    content_type = str(att.mimetype or "")
    data = att.data
    if isinstance(data, MSGFile):
        subject = str(getattr(data, "subject", "") or "")
        return Part(name if name.lower().endswith(".msg") else f"{name}.msg", bytes(data.exportBytes()),
                    "application/vnd.ms-outlook", subject=subject)
    if not isinstance(data, bytes):  # a link to a file elsewhere, or an attachment extract-msg cannot read
        return Part(name, b"")
    if not content_type.startswith("image/") and content_id:
        content_type = _picture_type(data) or content_type
    hidden = bool(att.hidden)
    return Part(name, data, content_type, content_id, inline=hidden and content_type.startswith("image/"))


def _picture_type(data: bytes) -> str:
    """The picture type by signature, for an attachment that states no MIME type."""
    for signature, kind in ((b"\x89PNG", "image/png"), (b"\xff\xd8\xff", "image/jpeg"), (b"GIF8", "image/gif"),
                            (b"BM", "image/bmp")):
        if data.startswith(signature):
            return kind
    return ""


def decode_html(data: bytes, codepage: object) -> str:
    """HTML bytes as text: the charset its ``<meta>`` names, else the message's code page, else UTF-8."""
    named = _META_CHARSET.search(data[:4096])
    candidates = [named.group(1).decode("ascii") if named else "", _codec(codepage), "utf-8"]
    for candidate in candidates:
        if candidate:
            try:
                return data.decode(candidate)
            except (LookupError, UnicodeDecodeError):
                continue
    return data.decode("utf-8", "replace")


def _codec(codepage: object) -> str:
    if not isinstance(codepage, int):
        return ""
    name = {65001: "utf-8", 20127: "ascii", 1200: "utf-16-le", 28591: "latin-1"}.get(codepage, f"cp{codepage}")
    try:
        return codecs.lookup(name).name
    except LookupError:
        return ""


def inflate_rtf(data: bytes, limit: int = MAX_RTF_BYTES) -> bytes:
    """A compressed RTF stream ([MS-OXRTFCP]) inflated, refusing (``input_too_large``) past ``limit`` bytes."""
    from compressed_rtf.compressed_rtf import INIT_DICT

    if len(data) < 16:
        return b""
    size, raw_size = struct.unpack_from("<II", data)
    kind, body = data[8:12], data[16:4 + size]
    if raw_size > limit:
        raise ConversionError("input_too_large", f"The message's RTF body is over {limit // 1024**2} MB.")
    if kind == b"MELA":  # stored uncompressed
        return body[:raw_size]
    if kind != b"LZFu":
        return b""
    window = bytearray(INIT_DICT.ljust(4096, b" "))
    at, out, i = len(INIT_DICT), bytearray(), 0
    while i < len(body):
        control, i = body[i], i + 1
        for bit in range(8):
            if control & (1 << bit):  # a reference into the window: 12 bits of offset, 4 of length
                if i + 2 > len(body):
                    return bytes(out)
                reference, i = body[i] << 8 | body[i + 1], i + 2
                offset, length = reference >> 4, (reference & 0xF) + 2
                if offset == at:  # the end marker
                    return bytes(out)
                for k in range(length):
                    byte = window[(offset + k) % 4096]
                    out.append(byte)
                    window[at], at = byte, (at + 1) % 4096
            else:
                if i >= len(body):
                    return bytes(out)
                byte, i = body[i], i + 1
                out.append(byte)
                window[at], at = byte, (at + 1) % 4096
        if len(out) > limit:
            raise ConversionError("input_too_large", f"The message's RTF body inflates past {limit // 1024**2} MB.")
    return bytes(out)


def deencapsulate(rtf: bytes) -> tuple[str, str]:
    """What an RTF body encapsulates: ``("html", markup)`` or ``("text", text)``; ``("", "")`` when it is RTF
    of its own (then the plain body stands in)."""
    import RTFDE
    from extract_msg.utils import stripRtf

    end = rtf.rfind(b"}")
    if end == -1:
        return "", ""
    try:
        found = RTFDE.DeEncapsulator(stripRtf(rtf[:end + 1]))
        found.deencapsulate()
    except Exception:  # noqa: BLE001 - RTFDE's parser raises its own and lark's errors on RTF it cannot follow
        return "", ""
    kind = str(found.content_type)
    content = found.html if kind == "html" else found.text if kind == "text" else ""
    # RTFDE gives the text as UTF-8 bytes, whatever code page the RTF was written in
    return kind, content.decode("utf-8", "replace") if isinstance(content, bytes) else str(content or "")

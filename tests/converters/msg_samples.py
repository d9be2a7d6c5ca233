"""Outlook MSG files written for the tests with extract-msg's own OLE writer, property by property as
[MS-OXMSG] lays them out: a property stream per object, one ``__substg1.0_`` stream per variable-size
property, a storage per recipient and attachment, and an attached message as a storage in its attachment's.
Real messages come from msg-parser's source distribution (:func:`real_messages`)."""

from __future__ import annotations

import datetime
import struct
from dataclasses import dataclass, field
from pathlib import Path

from tests.samples_cache import sdist_files

PT_LONG, PT_BOOLEAN, PT_SYSTIME, PT_UNICODE, PT_BINARY, PT_OBJECT = 0x0003, 0x000B, 0x0040, 0x001F, 0x0102, 0x000D


@dataclass
class Attachment:
    name: str
    data: bytes = b""
    mime: str = ""
    content_id: str = ""
    hidden: bool = False
    message: Outlook | None = None  # an attached message


@dataclass
class Outlook:
    subject: str = "Quarterly report ✓"
    sender: tuple[str, str] = ("Grace Hopper", "grace@example.org")
    to: list[tuple[str, str]] = field(default_factory=lambda: [("Ada Lovelace", "ada@example.org")])
    cc: list[tuple[str, str]] = field(default_factory=list)
    date: datetime.datetime | None = datetime.datetime(2026, 11, 24, 10, 0, tzinfo=datetime.UTC)
    body: str | None = "Hello Ada,\r\nthe report is attached.\r\n"
    html: str | None = None
    rtf: bytes | None = None  # stored compressed, as Outlook does
    attachments: list[Attachment] = field(default_factory=list)


def _filetime(when: datetime.datetime) -> int:
    return int((when - datetime.datetime(1601, 1, 1, tzinfo=datetime.UTC)).total_seconds() * 10**7)


def _properties(header: bytes, fixed: list[tuple[int, int, int]], variable: dict[int, tuple[int, bytes]]) -> bytes:
    """A property stream: its header, then 16 bytes a property (tag, flags, value or size)."""
    out = bytearray(header)
    for prop, kind, value in fixed:
        out += struct.pack("<IIQ", prop << 16 | kind, 6, value)
    for prop, (kind, data) in variable.items():
        out += struct.pack("<IIII", prop << 16 | kind, 6, len(data) + (2 if kind == PT_UNICODE else 0), 0)
    return bytes(out)


def _streams(prefix: str, variable: dict[int, tuple[int, bytes]]) -> list[tuple[str, bytes]]:
    return [(f"{prefix}__substg1.0_{prop:04X}{kind:04X}", data) for prop, (kind, data) in variable.items()]


def _text(value: str) -> tuple[int, bytes]:
    return PT_UNICODE, value.encode("utf-16-le")


def _message(msg: Outlook, prefix: str, top: bool) -> list[tuple[str, bytes | None]]:
    import compressed_rtf

    variable: dict[int, tuple[int, bytes]] = {0x001A: _text("IPM.Note"), 0x0037: _text(msg.subject),
                                               0x0C1A: _text(msg.sender[0]), 0x0C1F: _text(msg.sender[1]),
                                               0x5D01: _text(msg.sender[1]),
                                               0x0C1E: _text("SMTP")}
    if msg.body is not None:
        variable[0x1000] = _text(msg.body)
    if msg.html is not None:
        variable[0x1013] = (PT_BINARY, msg.html.encode("utf-8"))
    if msg.rtf is not None:
        variable[0x1009] = (PT_BINARY, compressed_rtf.compress(msg.rtf))
    fixed = [(0x0E07, PT_LONG, 1), (0x3FDE, PT_LONG, 65001)]
    if msg.date is not None:
        fixed.append((0x0039, PT_SYSTIME, _filetime(msg.date)))
    people = [(1, person) for person in msg.to] + [(2, person) for person in msg.cc]
    counts = struct.pack("<IIII", len(people), len(msg.attachments), len(people), len(msg.attachments))
    header = bytes(8) + counts + (bytes(8) if top else b"")
    entries: list[tuple[str, bytes | None]] = [(f"{prefix}__properties_version1.0",
                                                _properties(header, fixed, variable))]
    entries += _streams(prefix, variable)
    for number, (kind, (name, address)) in enumerate(people):
        folder = f"{prefix}__recip_version1.0_#{number:08X}/"
        recipient = {0x3001: _text(name), 0x39FE: _text(address), 0x3003: _text(address), 0x3002: _text("SMTP")}
        entries += [(folder, None), (f"{folder}__properties_version1.0",
                                     _properties(bytes(8), [(0x0C15, PT_LONG, kind)], recipient))]
        entries += _streams(folder, recipient)
    for number, att in enumerate(msg.attachments):
        folder = f"{prefix}__attach_version1.0_#{number:08X}/"
        fields = {0x3707: _text(att.name), 0x3704: _text(att.name[:12])}
        if att.mime:
            fields[0x370E] = _text(att.mime)
        if att.content_id:
            fields[0x3712] = _text(att.content_id)
        if att.message is None:
            fields[0x3701] = (PT_BINARY, att.data)
        fixed_att = [(0x3705, PT_LONG, 5 if att.message else 1), (0x0E21, PT_LONG, number),
                     (0x370B, PT_LONG, 0xFFFFFFFF), (0x7FFE, PT_BOOLEAN, int(att.hidden))]
        entries += [(folder, None), (f"{folder}__properties_version1.0", _properties(bytes(8), fixed_att, fields))]
        entries += _streams(folder, fields)
        if att.message is not None:
            inner = f"{folder}__substg1.0_3701000D/"
            entries += [(inner, None), *_message(att.message, inner, top=False)]
    return entries


def msg_bytes(msg: Outlook) -> bytes:
    """``msg`` as the bytes of an .msg file."""
    from extract_msg.ole_writer import OleWriter

    writer = OleWriter()
    named = "__nameid_version1.0/"
    entries = [(named, None), *((f"{named}__substg1.0_{n:04X}0102", b"") for n in (2, 3, 4)),
               *_message(msg, "", top=True)]
    for path, data in entries:
        if data is None:
            writer.addEntry(path.rstrip("/"), storage=True)
        else:
            writer.addEntry(path, data=data)
    import io

    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def write_msg(path: Path, msg: Outlook) -> Path:
    path.write_bytes(msg_bytes(msg))
    return path


def nested(depth: int) -> Outlook:
    """A message with a message attached, with a message attached ... ``depth`` deep."""
    inner = Outlook(subject=f"level {depth}", attachments=[])
    for level in range(depth - 1, -1, -1):
        inner = Outlook(subject=f"level {level}", attachments=[Attachment(f"level {level + 1}.msg", message=inner)])
    return inner


def real_messages() -> list[Path]:
    """Three Outlook messages from msg-parser's test suite: HTML with inline picture and six attached messages
    (15 MB), a Chinese delivery report with an HTML body only in its RTF, and one with an attached message."""
    return sdist_files("msg-parser", "1.2.0", "*/tests/files/*.msg")

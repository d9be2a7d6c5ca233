"""email-to-pdf on messages made with the standard library's own email package, and on the real messages of
CPython's email test suite (its test data, shipped with the interpreter); Outlook MSG files written with
extract-msg's OLE writer, and real ones from msg-parser's source distribution; read back with PyMuPDF."""

from __future__ import annotations

import io
import os
import struct
from email.message import EmailMessage
from pathlib import Path

import pymupdf
import pytest
from PIL import Image

from converters.base import ConversionError
from converters.inputs.sniff import sniff
from tests.converters import msg_samples as ms
from tests.converters.runtool import run_tool


def message(tmp_path: Path, *, html: str | None = None, text: str = "Hello Ada,\nthe report is attached.\n",
            attach: bool = True, picture: bool = False) -> Path:
    msg = EmailMessage()
    msg["From"] = "Grace Hopper <grace@example.org>"
    msg["To"] = "Ada Lovelace <ada@example.org>"
    msg["Subject"] = "Quarterly report ✓"
    msg["Date"] = "Tue, 24 Nov 2026 10:00:00 +0000"
    msg.set_content(text)
    if html is not None:
        msg.add_alternative(html, subtype="html")
    if picture:
        buffer = io.BytesIO()
        Image.new("RGB", (40, 20), (255, 0, 255)).save(buffer, "PNG")
        msg.get_payload()[1].add_related(buffer.getvalue(), "image", "png", cid="<logo@x>")
    if attach:
        msg.add_attachment(b"a,b\n1,2\n", maintype="text", subtype="csv", filename="figures.csv")
    path = tmp_path / "message.eml"
    path.write_bytes(bytes(msg))
    return path


def pdf_text(path: Path) -> str:
    with pymupdf.open(path) as doc:
        flags = pymupdf.TEXTFLAGS_TEXT & ~pymupdf.TEXT_PRESERVE_LIGATURES  # "fi", not the ligature
        return "".join(page.get_text(flags=flags) for page in doc)


def test_a_plain_message_shows_its_headers_body_and_attachments(tmp_path: Path) -> None:
    source = message(tmp_path)
    assert sniff(source, "upload") == "eml"
    run = run_tool("email-to-pdf", [source], tmp_path / "out")
    assert [p.name for p in run.outputs] == ["message.pdf"]
    text = pdf_text(run.outputs[0])
    for expected in ("Grace Hopper", "Ada Lovelace", "Quarterly report ✓", "the report is attached", "figures.csv",
                     "Attachments"):
        assert expected in text, expected
    assert run.progress[-1] == 1.0


def test_the_html_body_is_shown_with_its_inline_picture_and_nothing_remote(tmp_path: Path) -> None:
    html = ('<html><head><style>body{background:url(http://127.0.0.1:9/x)}</style></head><body>'
            '<h1>Numbers</h1><p>See <b>below</b>.</p><img src="cid:logo@x" width="40" height="20">'
            '<img src="http://127.0.0.1:9/track.png"><script>document.write("injected")</script>'
            '<table><tr><td>Q1</td><td>42</td></tr></table></body></html>')
    run = run_tool("email-to-pdf", [message(tmp_path, html=html, picture=True)], tmp_path / "out")
    text = pdf_text(run.outputs[0])
    assert "Numbers" in text and "below" in text and "42" in text and "injected" not in text
    assert "Hello Ada" not in text  # the HTML body is preferred
    with pymupdf.open(run.outputs[0]) as doc:
        images = doc[0].get_images(full=True)
        assert len(images) == 1  # the inline logo; the remote one is not fetched
        pix = pymupdf.Pixmap(doc, images[0][0])
        assert (pix.width, pix.height) == (40, 20)
    assert any("fetched" in note for note in run.notes)
    plain = run_tool("email-to-pdf", [message(tmp_path, html=html)], tmp_path / "plain", {"prefer": "text"})
    assert "Hello Ada" in pdf_text(plain.outputs[0])


def test_attachments_can_be_written_out_beside_the_pdf(tmp_path: Path) -> None:
    run = run_tool("email-to-pdf", [message(tmp_path)], tmp_path / "out", {"attachments": "extract"})
    assert sorted(p.name for p in run.outputs) == ["figures.csv", "message.pdf"]
    assert (tmp_path / "out" / "figures.csv").read_bytes() == b"a,b\n1,2\n"


def stdlib_messages() -> list[Path]:
    import test.test_email

    return sorted((Path(os.path.dirname(test.test_email.__file__)) / "data").glob("msg_*.txt"))


def test_the_messages_of_cpythons_email_suite_convert(tmp_path: Path) -> None:
    messages = [path for path in stdlib_messages() if sniff(path, path.name) == "eml"]
    assert len(messages) >= 40
    for number, path in enumerate(messages):
        try:
            [output, *_] = run_tool("email-to-pdf", [path], tmp_path / str(number)).outputs
        except ConversionError as exc:  # pragma: no cover - would be a finding: every one of them should convert
            raise AssertionError(f"{path.name}: {exc.code}: {exc}") from None
        with pymupdf.open(output) as doc:
            assert doc.page_count >= 1


def test_a_file_without_headers_is_not_a_message(tmp_path: Path) -> None:
    path = tmp_path / "notes.eml"
    path.write_text("Just some notes\nwithout any headers.\n", encoding="utf-8")
    assert sniff(path, path.name) == "txt"
    with pytest.raises(AssertionError):  # run_tool checks the tool accepts what the file sniffs as
        run_tool("email-to-pdf", [path], tmp_path / "out")


# -- Outlook MSG: messages written with extract-msg's own OLE writer, and real ones from msg-parser ----------

PICTURE_HTML = ('<html><head><style>p{color:red}</style></head><body><h1>Numbers</h1><p>See <b>below</b>.</p>'
                '<img src="cid:logo@x" width="40" height="20"><table><tr><td>Q1</td><td>42</td></tr></table>'
                '</body></html>')


def png(size: tuple[int, int] = (40, 20)) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", size, (255, 0, 255)).save(buffer, "PNG")
    return buffer.getvalue()


def outlook(tmp_path: Path, name: str = "message.msg", **fields: object) -> Path:
    msg = ms.Outlook(**fields)  # type: ignore[arg-type]
    return ms.write_msg(tmp_path / name, msg)


def test_an_msg_renders_exactly_like_the_same_message_as_eml(tmp_path: Path) -> None:
    """Headers, HTML body, inline picture and attachment list: one rendering path, the same PDF text."""
    msg = outlook(tmp_path, html=PICTURE_HTML, cc=[("Alan Turing", "alan@example.org")], attachments=[
        ms.Attachment("figures.csv", b"a,b\n1,2\n", "text/csv"),
        ms.Attachment("logo.png", png(), "image/png", "logo@x", hidden=True)])
    eml = message(tmp_path, html=PICTURE_HTML, picture=True)
    patched = eml.read_bytes().replace(b"To: Ada Lovelace <ada@example.org>\n",
                                       b"To: Ada Lovelace <ada@example.org>\nCc: Alan Turing <alan@example.org>\n")
    eml.write_bytes(patched)
    assert sniff(msg, "upload") == "msg" and sniff(eml, "upload") == "eml"
    from_msg = run_tool("email-to-pdf", [msg], tmp_path / "msg")
    from_eml = run_tool("email-to-pdf", [eml], tmp_path / "eml")
    text = pdf_text(from_msg.outputs[0])
    assert text == pdf_text(from_eml.outputs[0])
    for expected in ("Grace Hopper <grace@example.org>", "Ada Lovelace <ada@example.org>", "Alan Turing",
                     "Tue, 24 Nov 2026 10:00:00 +0000", "Quarterly report ✓", "Numbers", "42",
                     "figures.csv (8 bytes)"):
        assert expected in text, expected
    assert "logo.png" not in text and "Hello Ada" not in text  # the picture is inline; the HTML body wins
    with pymupdf.open(from_msg.outputs[0]) as doc:
        [image] = doc[0].get_images(full=True)
        pix = pymupdf.Pixmap(doc, image[0])
        assert (pix.width, pix.height) == (40, 20) and pix.pixel(5, 5)[:3] == (255, 0, 255)
    plain = run_tool("email-to-pdf", [msg], tmp_path / "plain", {"prefer": "text"})
    assert "the report is attached" in pdf_text(plain.outputs[0])


def test_msg_attachments_and_attached_messages_are_listed_and_extracted(tmp_path: Path) -> None:
    import extract_msg

    inner = ms.Outlook(subject="Inner news", attachments=[ms.Attachment("deep.txt", b"deep")])
    source = outlook(tmp_path, attachments=[ms.Attachment("figures.csv", b"a,b\n1,2\n", "text/csv"),
                                            ms.Attachment("forwarded.msg", message=inner)])
    run = run_tool("email-to-pdf", [source], tmp_path / "out", {"attachments": "extract"})
    assert [p.name for p in run.outputs] == ["figures.csv", "forwarded.msg", "message.pdf"]
    assert (tmp_path / "out" / "figures.csv").read_bytes() == b"a,b\n1,2\n"
    text = pdf_text(tmp_path / "out" / "message.pdf")
    assert "forwarded.msg (attached message “Inner news”" in text and "deep.txt" not in text
    written = extract_msg.openMsg(str(tmp_path / "out" / "forwarded.msg"))
    try:  # the attached message is a whole MSG file of its own, its attachment inside
        assert written.subject == "Inner news" and written.attachments[0].data == b"deep"
    finally:
        written.close()


RTF_HTML = (rb"{\rtf1\ansi\ansicpg1252\fromhtml1 \deff0{\fonttbl{\f0\fswiss Arial;}}{\*\htmltag19 <html>}"
            rb"{\*\htmltag50 <body>}{\*\htmltag64 <p>}\htmlrtf {\htmlrtf0 Caf\'e9 from RTF\htmlrtf }\htmlrtf0 "
            rb"{\*\htmltag72 </p>}{\*\htmltag84 <img src=http://127.0.0.1:9/p.png>}{\*\htmltag58 </body>}"
            rb"{\*\htmltag27 </html>}}")
RTF_OWN = rb"{\rtf1\ansi\deff0{\fonttbl{\f0 Arial;}}\b Bold\b0  RTF of its own\par}"


@pytest.mark.parametrize(("rtf", "body", "shown", "absent"), [
    (RTF_HTML, None, "Café from RTF", "htmltag"),  # HTML inside the RTF, de-encapsulated
    (rb"{\rtf1\ansi\ansicpg1252\fromtext \deff0{\fonttbl{\f0 Arial;}}Words from RTF\par}", None, "Words from RTF",
     "fromtext"),
    (RTF_OWN, "The plain body stands in.", "The plain body stands in.", "Bold"),  # not encapsulated: plain text
])
def test_an_rtf_only_msg_shows_what_the_rtf_holds(tmp_path: Path, rtf: bytes, body: str | None, shown: str,
                                                  absent: str) -> None:
    source = outlook(tmp_path, body=body, rtf=rtf)
    run = run_tool("email-to-pdf", [source], tmp_path / "out")
    text = pdf_text(run.outputs[0])
    assert shown in text and absent not in text, text


def test_a_compressed_rtf_body_inflating_past_the_limit_is_refused(tmp_path: Path) -> None:
    """Back-references copy 17 bytes for 2: the stream is checked as it inflates, not by what it claims."""
    from converters.tools.email.outlook import inflate_rtf

    body, at = bytearray(), 207
    for _ in range(20_000):
        body.append(0xFF)
        for _ in range(8):
            body += ((((at + 100) % 4096) << 4) | 0xF).to_bytes(2, "big")
            at = (at + 17) % 4096
    stream = struct.pack("<II4sI", len(body) + 12, 100, b"LZFu", 0) + bytes(body)
    assert len(inflate_rtf(stream, limit=10**7)) == 20_000 * 8 * 17
    with pytest.raises(ConversionError) as caught:
        inflate_rtf(stream, limit=1_000_000)
    assert caught.value.code == "input_too_large"


def test_the_real_outlook_messages_of_msg_parser_convert(tmp_path: Path) -> None:
    found = {path.name: path for path in ms.real_messages()}
    assert sorted(found) == ["complete.msg", "other.msg", "outer.msg"]
    expected = {
        "complete.msg": ["Vikram Arsid", "Test Multiple attachments complete email!!", "Withings",
                         "[MS-OXPROPS].pdf (6,934,165 bytes)", "Welcome to Azure Security Center.msg (attached "
                         "message"],
        "other.msg": ["投递状态通知", "automatically generated Delivery Status", "default_attachment.eml.msg"],
        "outer.msg": ["outer subject", "Outer body", "test.msg (attached message “test”"],
    }
    for name, path in found.items():
        assert sniff(path, "upload") == "msg"
        run = run_tool("email-to-pdf", [path], tmp_path / name)
        text = " ".join(pdf_text(run.outputs[0]).split())
        for phrase in expected[name]:
            assert phrase in text, (name, phrase)
    with pymupdf.open(tmp_path / "complete.msg" / "complete.pdf") as doc:  # its inline photo, shrunk to the page
        boxes = [box for page in doc for info in page.get_images(full=True) for box in page.get_image_rects(info[0])]
        assert len(boxes) == 1 and boxes[0].width <= 500


def test_outlook_files_are_told_by_their_directory_and_office_files_still_by_name(tmp_path: Path) -> None:
    from extract_msg.ole_writer import OleWriter

    writer = OleWriter()
    writer.addEntry("WordDocument", data=b"\x00" * 4096)
    word = tmp_path / "upload"
    with open(word, "wb") as f:
        writer.write(f)
    assert [sniff(word, name) for name in ("a.doc", "a.xls", "a.ppt", "a.msg")] == ["doc", "xls", "ppt", "doc"]
    msg = outlook(tmp_path)
    assert [sniff(msg, name) for name in ("a.doc", "a.xls", "upload")] == ["msg", "msg", "msg"]


@pytest.mark.parametrize("damage", ["cut", "noise"])
def test_a_damaged_msg_is_damaged_input(tmp_path: Path, damage: str) -> None:
    import random

    whole = ms.msg_bytes(ms.Outlook(attachments=[ms.Attachment("figures.csv", b"a,b\n" * 2000)]))
    path = tmp_path / "damaged.msg"
    if damage == "cut":  # the directory is read; the streams it points to are gone
        path.write_bytes(whole[:len(whole) // 2])
        assert sniff(path, "upload") == "msg"
    else:  # the OLE2 signature and noise: nothing can be read, the name says what it was meant to be
        path.write_bytes(whole[:8] + random.Random(1).randbytes(len(whole) - 8))
        assert sniff(path, "upload") == "doc"
    with pytest.raises(ConversionError) as caught:
        run_tool("email-to-pdf", [path], tmp_path / "out")
    assert caught.value.code == "damaged_input"

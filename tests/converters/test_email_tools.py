"""email-to-pdf on messages made with the standard library's own email package, and on the real messages of
CPython's email test suite (its test data, shipped with the interpreter); read back with PyMuPDF."""

from __future__ import annotations

import io
import os
from email.message import EmailMessage
from pathlib import Path

import pymupdf
import pytest
from PIL import Image

from converters.base import ConversionError
from converters.inputs.sniff import sniff
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

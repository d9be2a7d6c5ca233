"""A ZIP entry that lies about its size (declares 1000 bytes, inflates to 256 MB) is refused when the
job is created, after inflating no more than it declared, instead of reaching pandoc or LibreOffice."""

from __future__ import annotations

import struct
import zipfile
from pathlib import Path

import httpx

from converters.base import ConversionError
from converters.inputs.safety import check_archive, inflated_size
from tests.conftest import assert_problem, upload
from tests.converters.doc_samples import make_docx

INFLATED = 256 * 1024 * 1024


def lie_about_size(path: Path, member: str, declared: int) -> None:
    """Rewrite ``member``'s uncompressed size in its local header and its central directory entry."""
    data = bytearray(path.read_bytes())
    with zipfile.ZipFile(path) as zf:
        offset = zf.getinfo(member).header_offset
    struct.pack_into("<I", data, offset + 22, declared)
    at = data.find(b"PK\x01\x02")
    while at != -1:
        (name_length,) = struct.unpack_from("<H", data, at + 28)
        if data[at + 46: at + 46 + name_length] == member.encode():
            struct.pack_into("<I", data, at + 24, declared)
        at = data.find(b"PK\x01\x02", at + 4)
    path.write_bytes(bytes(data))


def lying_docx(tmp_path: Path) -> Path:
    honest = make_docx(tmp_path, "honest.docx")
    lying = tmp_path / "report.docx"
    with zipfile.ZipFile(honest) as src, zipfile.ZipFile(lying, "w", zipfile.ZIP_DEFLATED) as out:
        for info in src.infolist():
            body = src.read(info)
            if info.filename == "word/document.xml":
                body += b" " * INFLATED  # whitespace after the root element: still well-formed XML
            out.writestr(info.filename, body)
    lie_about_size(lying, "word/document.xml", 1000)
    return lying


def test_the_check_inflates_no_further_than_the_declared_size(tmp_path: Path) -> None:
    lying = lying_docx(tmp_path)
    assert lying.stat().st_size < 2 * 1024 * 1024  # a small upload
    with zipfile.ZipFile(lying) as zf, open(lying, "rb") as f:
        info = zf.getinfo("word/document.xml")
        assert inflated_size(f, info, info.file_size + 1) == 1001  # counting stops one byte past the claim
    try:
        check_archive(lying)
    except ConversionError as exc:
        assert exc.code == "input_too_large" and "word/document.xml" in exc.message
    else:
        raise AssertionError("a ZIP entry that inflates far past its declared size was accepted")
    check_archive(make_docx(tmp_path, "fine.docx"))  # an honest one passes


def test_a_lying_docx_is_refused_at_job_creation(client: httpx.Client, tmp_path: Path) -> None:
    ref = upload(client, "report.docx", lying_docx(tmp_path).read_bytes())
    r = client.post("/jobs", json={"tool": "document-to-pdf", "inputFileIds": [ref["id"]]})
    assert_problem(r, 422, "input_too_large")  # at creation: no job, no engine

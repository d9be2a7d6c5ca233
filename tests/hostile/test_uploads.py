"""Hostile uploads: names, sizes, multipart shapes and disguised content (cases 1, 2, 4, 8, 15)."""

from __future__ import annotations

import io
import threading
import zipfile
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.conftest import (
    IN_FLIGHT,
    Server,
    assert_problem,
    install_settings,
    png_bytes,
    stream_body,
    stream_upload,
    upload,
    wait_job,
)

NASTY_NAMES = ["../../x.png", "/etc/passwd", "..\\..\\x.png", "a\x00b.png", "evil\r\nX-Injected: 1.png",
               "photo\u202egnp.exe", ".hidden.png"]


def files_on_disk(data_dir: Path) -> set[str]:
    return {p.name for p in (data_dir / "files").rglob("*") if p.is_file()}


def raw_upload(client: httpx.Client, filename: str, data: bytes) -> httpx.Response:
    """A multipart body with the name as raw bytes, as a hostile client would send it."""
    head = b'--b\r\nContent-Disposition: form-data; name="file"; filename="' + filename.encode("utf-8") + b'"\r\n\r\n'
    return client.post("/files", content=head + data + b"\r\n--b--\r\n",
                       headers={"Content-Type": "multipart/form-data; boundary=b"})


@pytest.mark.parametrize("name", NASTY_NAMES)
def test_upload_names_are_sanitized_and_never_used_on_disk(client: httpx.Client, server: Server, name: str) -> None:
    before = files_on_disk(server.data_dir)  # the module's server: its tests run one after the other
    r = raw_upload(client, name, png_bytes())
    if r.status_code == 400:  # a name that breaks the multipart headers is a malformed request
        assert_problem(r, 400, "malformed_request")
        return
    assert r.status_code == 201, r.text
    ref = r.json()
    shown = ref["originalName"]
    assert shown and "/" not in shown and "\\" not in shown and not shown.startswith(".")
    assert not any(ord(c) < 32 or c in "\u202a\u202b\u202c\u202d\u202e" for c in shown), shown
    assert files_on_disk(server.data_dir) - before == {ref["id"]}  # stored under its id, and nothing else
    assert not (server.data_dir.parent / "x.png").exists()
    job = client.post("/jobs", json={"tool": "image-convert", "inputFileIds": [ref["id"]],
                                     "outputFormat": "jpg"}).json()
    assert wait_job(client, job["id"])["status"] == "DONE"
    url = client.get(f"/jobs/{job['id']}/result").json()["downloadUrl"]
    download = httpx.get(url)
    assert download.status_code == 200 and "x-injected" not in download.headers
    disposition = download.headers["content-disposition"]
    assert disposition.startswith("attachment; filename=")
    assert "\r" not in disposition and "\n" not in disposition


def test_path_names_keep_only_their_last_part(client: httpx.Client) -> None:
    assert raw_upload(client, "../../x.png", png_bytes()).json()["originalName"] == "x.png"
    assert raw_upload(client, "..\\..\\y.png", png_bytes()).json()["originalName"] == "y.png"
    assert raw_upload(client, "/etc/passwd", png_bytes()).json()["originalName"] == "passwd"


def test_very_long_name_is_shortened(client: httpx.Client) -> None:
    ref = upload(client, "a" * 1000 + ".png", png_bytes())
    assert len(ref["originalName"]) <= 200 and ref["originalName"].endswith(".png")


def test_a_flood_of_empty_fields_is_refused_while_it_streams(server: Server, api_key: str) -> None:
    def fields() -> Iterator[bytes]:  # two million empty parts, about 90 MB, a thousand at a time
        for first in range(0, 2_000_000, 1000):
            yield b"".join(b'--b\r\nContent-Disposition: form-data; name="f%d"\r\n\r\n\r\n' % i
                           for i in range(first, first + 1000))
        yield b"--b--\r\n"

    streamed = stream_body(server, api_key, fields(), None)
    assert_problem(streamed.response, 400, "malformed_request")
    # refused at the part limit, not after reading (or parsing) the whole flood
    assert not streamed.finished and streamed.sent < IN_FLIGHT, streamed.sent


def test_html_renamed_jpg_and_ps_renamed_png_are_415(client: httpx.Client) -> None:
    html = upload(client, "cat.jpg", b"<html><body><img src=x onerror=alert(1)></body></html>")
    eps = upload(client, "logo.png", b"%!PS-Adobe-3.0 EPSF-3.0\n%%BoundingBox: 0 0 10 10\n(%pipe%id) (w) file\n")
    assert html["mimeType"] == "text/html" and eps["mimeType"] == "application/postscript"
    for ref in (html, eps):
        r = client.post("/jobs", json={"tool": "image-convert", "inputFileIds": [ref["id"]]})
        assert_problem(r, 415, "unsupported_format")


def test_jpeg_with_zip_appended_is_treated_as_a_jpeg(client: httpx.Client) -> None:
    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", (32, 32), (10, 200, 10)).save(buf, "JPEG")
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("payload.txt", "secret")
    ref = upload(client, "polyglot.jpg", buf.getvalue() + archive.getvalue())
    assert ref["mimeType"] == "image/jpeg"
    job = client.post("/jobs", json={"tool": "image-convert", "inputFileIds": [ref["id"]],
                                     "outputFormat": "png"}).json()
    assert wait_job(client, job["id"])["status"] == "DONE"
    out = httpx.get(client.get(f"/jobs/{job['id']}/result").json()["downloadUrl"]).content
    assert b"secret" not in out and Image.open(io.BytesIO(out)).size == (32, 32)


def _zip(entries: list[tuple[zipfile.ZipInfo | str, bytes]], mimetype: str | None = None) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        if mimetype:
            zf.writestr("mimetype", mimetype, compress_type=zipfile.ZIP_STORED)
        for info, data in entries:
            zf.writestr(info, data)
    return buf.getvalue()


def _docx_parts() -> list[tuple[zipfile.ZipInfo | str, bytes]]:
    return [("[Content_Types].xml", b"<Types/>"), ("word/document.xml", b"<w:document/>")]


def _symlink(name: str, target: str) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name)
    info.external_attr = (0o120777 << 16)
    return info


def _zeros_entry() -> list[tuple[zipfile.ZipInfo | str, bytes]]:
    return [("word/media/zeros.bin", b"\x00" * (300 * 1024 * 1024))]


@pytest.mark.parametrize(("label", "make", "code"), [
    ("docx bomb", lambda: _zip(_docx_parts() + _zeros_entry()), "input_too_large"),
    ("epub with 25 000 entries", lambda: _zip([(f"OEBPS/{i}.xhtml", b"") for i in range(25_000)],
                                              "application/epub+zip"), "input_too_large"),
    ("epub with ../ entry", lambda: _zip([("../x", b"escaped")], "application/epub+zip"), "unsafe_archive"),
    ("docx with symlink", lambda: _zip(_docx_parts() + [(_symlink("word/link", "/etc/passwd"), b"/etc/passwd")]),
     "unsafe_archive"),
])
def test_zip_bombs_and_escapes_are_refused_before_any_engine(client: httpx.Client, server: Server, label: str,
                                                             make: object, code: str) -> None:
    data = make()  # type: ignore[operator]
    ref = upload(client, "book.epub" if "epub" in label else "doc.docx", data)
    tool = next(t["id"] for t in client.get("/tools").json() if ref["format"] in t["accepts"] and t["available"])
    r = client.post("/jobs", json={"tool": tool, "inputFileIds": [ref["id"]]})
    assert_problem(r, 422, code)
    assert client.get("/jobs").json()["items"] == []
    assert not (server.data_dir.parent / "x").exists()


def test_purge_during_a_download_never_truncates_it(client: httpx.Client, server: Server) -> None:
    from localapi.core.service import Service

    ref = upload(client, "big.png", png_bytes(3000, 3000))
    job = client.post("/jobs", json={"tool": "image-convert", "inputFileIds": [ref["id"]],
                                     "outputFormat": "bmp"}).json()
    wait_job(client, job["id"])
    result = client.get(f"/jobs/{job['id']}/result").json()
    expected = result["files"][0]["sizeBytes"]
    service = Service.open(install_settings(server.data_dir))
    received = 0
    purged = threading.Event()
    with httpx.stream("GET", result["downloadUrl"]) as r:
        for chunk in r.iter_bytes(65536):
            received += len(chunk)
            if not purged.is_set():
                # this test's files past their retention, not the shared server's others
                service.db.execute("update files set expires_at = 0 where id in (?, ?)", ref["id"],
                                   result["files"][0]["id"])
                assert service.purge() >= 1
                purged.set()
    assert received == expected
    assert_problem(httpx.get(result["downloadUrl"]), 410, "file_expired")


def test_upload_far_over_a_tools_limit_is_cut_off_while_streaming(client: httpx.Client, server: Server,
                                                                   api_key: str) -> None:
    tool = next(t for t in client.get("/tools").json() if t["id"] == "ai-remove-background")
    limit = int(tool["maxInputSizeBytes"])
    assert limit < 5 * 1000**3  # smaller than the global limit, so the tool's own limit is what answers
    for content_length in (False, True):  # chunked, then declared up front
        streamed = stream_upload(server, api_key, 3 * limit, content_length=content_length,
                                 query=f"?tool={tool['id']}")
        assert_problem(streamed.response, 413, "file_too_large")
        assert not streamed.finished and streamed.sent < limit + IN_FLIGHT, (streamed.sent, streamed.total)
        assert list((server.data_dir / "files" / "tmp").iterdir()) == []
    assert client.get("/usage").status_code == 200


def test_engine_errors_name_the_upload_not_where_it_is_stored(client: httpx.Client, server: Server,
                                                              tmp_path: Path) -> None:
    """FFmpeg's messages carry the path it opened; what the caller reads names the file as uploaded."""
    from tests.converters import media_samples

    clip = media_samples.write_clip(tmp_path / "clip.mp4", "mp4")
    cut = clip.read_bytes()[: clip.stat().st_size // 3]
    job = client.post("/jobs", json={"tool": "video-convert", "outputFormat": "webm",
                                     "inputFileIds": [upload(client, "holiday.mp4", cut)["id"]]}).json()
    failed = wait_job(client, job["id"])
    assert failed["status"] == "FAILED" and failed["errorCode"] == "damaged_input"
    # at creation too: transcribe reads the duration before the job exists
    refused = client.post("/jobs", json={"tool": "transcribe", "inputFileIds": [upload(client, "talk.m4a", cut)["id"]]})
    detail = assert_problem(refused, 422, "damaged_input")["detail"]
    for text in (failed["errorMessage"], detail):
        assert str(server.data_dir) not in text and "/files/" not in text and "file_" not in text, text

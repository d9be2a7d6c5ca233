"""One key cannot hold every worker: fair turns between callers, a per-key cap on running jobs, and
video work no machine finishes in reasonable time refused at creation."""

from __future__ import annotations

import time
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx

from tests.conftest import Server, assert_problem, image_pdf_bytes, start_server, upload, wait_job, write_settings
from tests.converters import media_samples


def when(job: dict[str, Any], field: str) -> float:
    return datetime.fromisoformat(job[field]).timestamp()


def test_a_second_keys_job_does_not_wait_behind_the_first_keys_queue(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    log = tmp_path / "server.log"
    srv = start_server(data, log, "--workers", "0")  # fill the queue first, then start one worker
    first, second = srv.create_key("first"), srv.create_key("second")
    try:
        with srv.client(first) as a, srv.client(second) as b:
            png = upload(a, "a.pdf", image_pdf_bytes(pages=1, size=300))
            a_jobs = [a.post("/jobs", json={"tool": "pdf-to-image", "inputFileIds": [png["id"]]}).json()
                      for _ in range(4)]
            b_png = upload(b, "b.pdf", image_pdf_bytes(pages=1, size=300))
            b_job = b.post("/jobs", json={"tool": "pdf-to-image", "inputFileIds": [b_png["id"]]}).json()
    finally:
        srv.stop()
    srv = start_server(data, log, "--workers", "1")
    try:
        with srv.client(first) as a, srv.client(second) as b:
            a_done = [wait_job(a, j["id"]) for j in a_jobs]
            b_done = wait_job(b, b_job["id"])
    finally:
        srv.stop()
    assert all(j["status"] == "DONE" for j in [*a_done, b_done])
    order = sorted([*a_done, b_done], key=lambda j: when(j, "startedAt"))
    # made in the order A A A A B; one worker takes them A B A A A: B waits for one job, not four
    assert [j["id"] for j in order][:2] == [a_jobs[0]["id"], b_job["id"]], [j["id"] for j in order]


def test_a_key_at_its_cap_leaves_the_other_worker_to_others(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    write_settings(data, max_running_jobs_per_key=1)
    srv = start_server(data, tmp_path / "server.log", "--workers", "2")
    first, second = srv.create_key("first"), srv.create_key("second")
    try:
        with srv.client(first) as a, srv.client(second) as b:
            # jobs of a few seconds: the second key's job is made while the first of them runs, and the
            # first key's third job cannot start before the other two have ended
            pdf = upload(a, "slow.pdf", image_pdf_bytes(pages=4, size=1200))
            a_jobs = [a.post("/jobs", json={"tool": "pdf-to-image", "inputFileIds": [pdf["id"]],
                                            "params": {"dpi": 150}}).json() for _ in range(3)]
            deadline = time.monotonic() + 60
            while a.get(f"/jobs/{a_jobs[0]['id']}").json()["status"] == "QUEUED":
                assert time.monotonic() < deadline
                time.sleep(0.02)
            quick = upload(b, "quick.pdf", image_pdf_bytes(pages=1, size=200))
            made = b.post("/jobs", json={"tool": "pdf-to-text", "inputFileIds": [quick["id"]]}).json()
            b_job = wait_job(b, made["id"])
            a_done = [wait_job(a, j["id"], timeout=300) for j in a_jobs]
    finally:
        srv.stop()
    assert b_job["status"] == "DONE" and all(j["status"] == "DONE" for j in a_done)
    # the second key's job took the worker the first key's cap left free: it did not wait behind the
    # first key's queue (with a cap of 1 its third job starts only after the other two have ended)
    assert when(b_job, "startedAt") < when(a_done[2], "startedAt")
    spans = sorted((when(j, "startedAt"), when(j, "finishedAt")) for j in a_done)
    for (_, end), (start, _) in zip(spans, spans[1:], strict=False):
        assert start >= end - 0.01, f"two of one key's jobs ran at once under a cap of 1: {spans}"


def test_unreasonable_video_work_is_refused_at_creation(server: Server, client: httpx.Client, tmp_path: Path) -> None:
    clip = media_samples.write_clip(tmp_path / "clip.mp4", "mp4", seconds=20.0, size=(64, 48), fps=10)
    ref = upload(client, "clip.mp4", clip.read_bytes())
    # 4096 wide, 240 fps, lossless at veryslow from a 64x48 clip: hours of one worker, refused at creation
    r = client.post("/jobs", json={"tool": "video-convert", "inputFileIds": [ref["id"]], "outputFormat": "mp4",
                                   "params": {"width": 4096, "fps": 240, "preset": "veryslow", "crf": 0}})
    body = assert_problem(r, 422, "input_too_large")
    assert "video_max_output_pixel_frames" in body["detail"]
    ok = client.post("/jobs", params={"wait": 60}, json={
        "tool": "video-convert", "inputFileIds": [ref["id"]], "outputFormat": "mp4", "params": {"width": 128}})
    assert ok.status_code == 201, ok.text
    assert wait_job(client, ok.json()["id"])["status"] == "DONE"

"""``filekiln serve --workers 0`` and a ``filekiln worker`` on one data dir: the worker takes a job the API
queues, and the API learns of its end, by the bells (localapi/core/bells.py), not by their polls.

Both poll once an hour here (``poll_interval_seconds``): a job that is picked up and answered at all was
woken, twice, across processes. Nothing is timed: without the bells the job would wait for the poll,
and the answer would come back QUEUED when its wait ran out.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.api.test_workers import start_worker, stop, wait_for
from tests.conftest import Server, png_bytes, start_server, upload, write_settings

pytestmark = pytest.mark.embedded  # the bells of the queue in the data dir (Redis wakes its workers itself)

POLL = 3600.0


@pytest.fixture
def split(tmp_path: Path) -> Iterator[tuple[Server, Path]]:
    data = tmp_path / "data"
    data.mkdir()
    write_settings(data, poll_interval_seconds=POLL)
    srv = start_server(data, tmp_path / "server.log", "--workers", "0")
    worker = start_worker(data, tmp_path / "worker.log", 1)
    try:
        wait_for("the worker's bell", lambda: _kinds(data) >= {"queue", "events"}, timeout=60)
        yield srv, data
    finally:
        stop(worker)
        srv.stop()


def _kinds(data: Path) -> set[str]:
    conn = sqlite3.connect(f"file:{data / 'filekiln.db'}?mode=ro", uri=True, timeout=10)
    try:
        return {k for (kinds,) in conn.execute("select kinds from bells") for k in kinds.split(",")}
    except sqlite3.OperationalError:
        return set()
    finally:
        conn.close()


def test_a_job_queued_by_the_api_is_woken_in_the_worker_and_its_end_in_the_api(split: tuple[Server, Path]) -> None:
    srv, _ = split
    key = srv.create_key("bells")
    with httpx.Client(base_url=srv.base_url, headers={"X-API-Key": key}, timeout=60) as c:
        for i in range(5):
            ref = upload(c, f"b{i}.png", png_bytes(color=(i * 40, 90, 200)))
            r = c.post("/jobs", params={"wait": 30},
                       json={"tool": "image-convert", "inputFileIds": [ref["id"]], "outputFormat": "webp"})
            job = r.json()
            assert r.status_code == 201, job
            assert job["status"] == "DONE", f"not woken: the job came back {job['status']} when its wait ran out"


def test_an_event_stream_on_the_api_follows_a_job_run_by_the_worker(split: tuple[Server, Path]) -> None:
    srv, _ = split
    key = srv.create_key("bells")
    with httpx.Client(base_url=srv.base_url, headers={"X-API-Key": key}, timeout=60) as c:
        ref = upload(c, "s.png", png_bytes())
        job = c.post("/jobs", json={"tool": "image-convert", "inputFileIds": [ref["id"]],
                                    "outputFormat": "webp"}).json()
        types = []
        # without the bells the stream would stay silent past the client's 60 s read timeout
        with c.stream("GET", f"/jobs/{job['id']}/events") as r:
            for line in r.iter_lines():
                if line.startswith("event: "):
                    types.append(line[7:])
        assert types[-1] == "job.done" and "job.processing" in types, types

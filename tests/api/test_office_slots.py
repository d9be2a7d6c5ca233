"""LibreOffice outlives the job that started it: the worker's next job adopts it."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import httpx
import psutil
import pytest

from tests.conftest import Server, upload, wait_job
from tests.converters import doc_samples

pytestmark = pytest.mark.skipif(shutil.which("soffice") is None, reason="LibreOffice is not installed")


def slot_offices(data_dir: Path) -> dict[str, int]:
    found = {}
    for state in (data_dir / "engines" / "office").glob("slot-*/state.json"):
        found[state.parent.name] = int(json.loads(state.read_text())["pid"])
    return found


def convert(client: httpx.Client, ref: dict[str, str]) -> tuple[dict[str, object], float]:
    started = time.monotonic()
    job = client.post("/jobs", json={"tool": "document-to-pdf", "inputFileIds": [ref["id"]],
                                     "params": {"engine": "libreoffice"}}).json()
    done = wait_job(client, str(job["id"]), timeout=180)
    return done, time.monotonic() - started


@pytest.mark.fresh_server
def test_second_office_job_reuses_the_running_instance(server: Server, client: httpx.Client,
                                                       tmp_path: Path) -> None:
    ref = upload(client, "letter.docx", doc_samples.make_docx(tmp_path).read_bytes())
    first, first_took = convert(client, ref)
    assert first["status"] == "DONE", first
    offices = slot_offices(server.data_dir)
    assert len(offices) == 1, offices
    (pid,) = offices.values()
    assert psutil.pid_exists(pid)
    second, second_took = convert(client, ref)
    assert second["status"] == "DONE", second
    if slot_offices(server.data_dir) != offices:  # the other worker took it: it starts its own once
        third, _ = convert(client, ref)
        assert third["status"] == "DONE"
    assert pid in slot_offices(server.data_dir).values()
    server.stop()
    deadline = time.monotonic() + 10
    while psutil.pid_exists(pid) and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
        assert time.monotonic() < deadline, "soffice outlived the server"
        time.sleep(0.1)
    print(f"first job {first_took:.1f} s, second {second_took:.1f} s")

"""Worker processes with different capabilities on one data dir: each takes only the jobs it can run in full.

``filekiln serve --workers 0`` answers the API; two ``filekiln worker`` processes run the jobs, one of them
without LibreOffice (its settings name a ``libreoffice_path`` that does not exist). Document to PDF runs
there only in part (by pandoc, without the page layout), so its jobs are left to the worker with LibreOffice;
image jobs go to either.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import psutil
import pytest

from tests.conftest import (
    ROOT,
    Server,
    install_db,
    png_bytes,
    process_env,
    run_cli,
    start_server,
    upload,
    wait_job,
    write_settings,
)
from tests.converters import doc_samples

pytestmark = pytest.mark.skipif(shutil.which("soffice") is None, reason="LibreOffice is not installed")

# a housekeeping tick (heartbeat, what each worker takes) every second instead of every ten
SETTINGS: dict[str, Any] = {"purge_interval_seconds": 1.0}
NO_OFFICE: dict[str, Any] = {**SETTINGS, "libreoffice_path": "/nonexistent/soffice"}


def start_worker(data: Path, log: Path, slots: int) -> subprocess.Popen[bytes]:
    """A ``filekiln worker`` process; it reads the data dir's settings.toml as it starts."""
    with open(log, "ab") as out:
        return subprocess.Popen([sys.executable, "-m", "filekiln", "worker", "--data-dir", str(data),
                                 "--workers", str(slots)], cwd=ROOT, stdout=out, stderr=subprocess.STDOUT,
                                env=process_env(data))


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


def wait_for(what: str, check: Callable[[], Any], timeout: float = 60) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        found = check()
        if found:
            return found
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def worker_of(data: Path, job_id: str) -> int | None:
    """The pid of the worker process that ran ``job_id`` (its ``worker`` column: host:pid:start-time)."""
    db = install_db(data)
    try:
        row = db.one("select worker from jobs where id = ?", job_id)
    finally:
        db.close()
    return int(row[0].split(":")[1]) if row and row[0] else None


def processes(c: httpx.Client) -> dict[int, dict[str, Any]]:
    return {p["pid"]: p for p in c.get("/health").json()["workerProcesses"]}


@pytest.fixture
def api(tmp_path: Path) -> Iterator[Server]:
    data = tmp_path / "data"
    data.mkdir()
    write_settings(data, **SETTINGS)
    srv = start_server(data, tmp_path / "server.log", "--workers", "0")
    yield srv
    srv.stop()


def test_jobs_go_to_the_workers_that_can_run_them(api: Server, tmp_path: Path) -> None:
    data = api.data_dir
    running: list[subprocess.Popen[bytes]] = []
    try:
        with api.client(api.create_key()) as c:
            assert c.get("/health").json()["workerProcesses"] == []
            office = start_worker(data, tmp_path / "office.log", 1)
            running.append(office)
            wait_for("the LibreOffice worker in /health", lambda: office.pid in processes(c))
            write_settings(data, **NO_OFFICE)  # the next process to start finds no LibreOffice
            plain = start_worker(data, tmp_path / "plain.log", 2)
            running.append(plain)
            seen = wait_for("both workers in /health", lambda: (p := processes(c)) and len(p) == 2 and p)
            write_settings(data, **SETTINGS)
            assert "document-to-pdf" not in seen[office.pid]["cannotRun"], seen
            assert "document-to-pdf" in seen[plain.pid]["cannotRun"], seen  # left to the worker with LibreOffice
            assert "image-convert" not in seen[office.pid]["cannotRun"] + seen[plain.pid]["cannotRun"]

            docx = upload(c, "letter.docx", doc_samples.make_docx(tmp_path).read_bytes())
            png = upload(c, "a.png", png_bytes())
            docs = [c.post("/jobs", json={"tool": "document-to-pdf", "inputFileIds": [docx["id"]]}).json()["id"]
                    for _ in range(3)]
            images = [c.post("/jobs", json={"tool": "image-convert", "inputFileIds": [png["id"]],
                                            "outputFormat": "webp"}).json()["id"] for _ in range(8)]
            for job_id in docs + images:
                assert wait_job(c, job_id, timeout=180)["status"] == "DONE", c.get(f"/jobs/{job_id}").json()
            assert {worker_of(data, j) for j in docs} == {office.pid}
            image_workers = [worker_of(data, j) for j in images]
            assert set(image_workers) <= {office.pid, plain.pid}
            assert plain.pid in image_workers  # the worker without LibreOffice runs the jobs it can
            assert c.get("/health").json()["waitingForWorker"] == {}

            stop(office)
            running.remove(office)
            assert office.returncode == 0
            wait_for("the LibreOffice worker gone from /health", lambda: office.pid not in processes(c))
            waiting = c.post("/jobs", json={"tool": "document-to-pdf", "inputFileIds": [docx["id"]]}).json()["id"]
            created = time.time()
            health = wait_for("/health to say the job waits", lambda: (h := c.get("/health").json())
                              ["waitingForWorker"] == {"document-to-pdf": 1} and h)
            assert [p["pid"] for p in health["workerProcesses"]] == [plain.pid]
            said = run_cli(data, "doctor", check=False)
            assert f"pid {plain.pid}: alive, 2 slots; leaves to others: " in said, said
            assert "1 queued job(s) wait for a worker: no alive worker can run their tools: document-to-pdf (1)" \
                in said, said
            # the other worker has looked again since the job was made, and left it QUEUED, without spinning
            cpu_before = sum(psutil.Process(plain.pid).cpu_times()[:2])
            wait_for("a heartbeat of the worker without LibreOffice",
                     lambda: _ts(processes(c)[plain.pid]["lastSeenAt"]) > created + 1.5)
            assert c.get(f"/jobs/{waiting}").json()["status"] == "QUEUED"
            assert sum(psutil.Process(plain.pid).cpu_times()[:2]) - cpu_before < 1.0

            office = start_worker(data, tmp_path / "office2.log", 1)
            running.append(office)
            assert wait_job(c, waiting, timeout=180)["status"] == "DONE"
            assert worker_of(data, waiting) == office.pid
            assert c.get("/health").json()["waitingForWorker"] == {}
    finally:
        for proc in running:
            stop(proc)


def _ts(iso: str) -> float:
    return datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()

"""Case 14: the data dir's disk fills up mid-job, then space comes back."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import assert_problem, png_bytes, start_server, upload, wait_job

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="mounting a small tmpfs needs root (CI runs as root)")


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    mount = tmp_path / "small"
    mount.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=48m", "tmpfs", str(mount)], check=True)
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def fill(disk: Path, leave_bytes: int) -> Path:
    filler = disk / "filler"
    free = os.statvfs(disk).f_bavail * os.statvfs(disk).f_frsize
    with open(filler, "wb") as f:
        f.truncate(0)
        remaining = max(free - leave_bytes, 0)
        block = b"\x00" * (1024 * 1024)
        while remaining > 0:
            n = min(len(block), remaining)
            try:
                f.write(block[:n])
                f.flush()
            except OSError:
                break
            remaining -= n
    return filler


def test_full_disk_fails_the_job_cleanly_and_recovers(small_disk: Path, tmp_path: Path) -> None:
    data = small_disk / "data"
    data.mkdir()
    srv = start_server(data, tmp_path / "server.log")
    try:
        with srv.client(srv.create_key()) as c:
            ref = upload(c, "flat.png", png_bytes(3000, 3000))  # tiny as PNG, 27 MB as BMP
            filler = fill(small_disk, leave_bytes=4 * 1024 * 1024)
            job = c.post("/jobs", json={"tool": "image-convert", "inputFileIds": [ref["id"]],
                                        "outputFormat": "bmp"}).json()
            failed = wait_job(c, job["id"], timeout=60)
            assert failed["status"] == "FAILED" and failed["errorCode"] == "disk_full", failed
            finals = [p for p in (data / "files").rglob("file_*") if p.is_file()]
            assert [p.name for p in finals] == [ref["id"]], "a result was left under a final name"
            assert not any((data / "jobs").glob("job_*")), "the job's work dir was left behind"
            assert c.get("/usage").status_code == 200
            r = c.post("/files", files={"file": ("big.bin", b"\x01" * (8 * 1024 * 1024))})
            assert_problem(r, 507, "disk_full")
            assert list((data / "files" / "tmp").iterdir()) == []

            filler.unlink()
            again = c.post("/jobs", json={"tool": "image-convert", "inputFileIds": [ref["id"]],
                                          "outputFormat": "bmp"}).json()
            assert wait_job(c, again["id"], timeout=60)["status"] == "DONE"
    finally:
        srv.stop()

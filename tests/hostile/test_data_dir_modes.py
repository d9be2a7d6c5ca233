"""Other local users read nothing in the data dir: the folder is 0700, what a server writes there is
0600/0700 (uploads, results, the database and its WAL, logs, engine profiles), and a data dir made with
looser modes is tightened at start-up."""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

import pytest

from tests.conftest import SCALE, image_pdf_bytes, png_bytes, run_cli, start_server, upload, wait_job

pytestmark = pytest.mark.skipif(os.name != "posix", reason="POSIX modes; Windows relies on the profile's ACLs")


def loose(root: Path) -> list[str]:
    """Folders and regular files under ``root`` (and ``root``) that a group or other users may use."""
    found = []
    # os.walk, unlike rglob, passes over a folder removed while it walks (a job's work dir as the job ends)
    walked = [Path(folder) / name for folder, dirs, files in os.walk(root) for name in (*dirs, *files)]
    for path in [root, *walked]:
        try:
            st = path.lstat()
        except FileNotFoundError:
            continue  # a work dir removed as the job ended
        if (stat.S_ISDIR(st.st_mode) or stat.S_ISREG(st.st_mode)) and stat.S_IMODE(st.st_mode) & 0o077:
            found.append(f"{oct(stat.S_IMODE(st.st_mode))} {path.relative_to(root)}")
    return found


def test_what_a_server_writes_is_private(tmp_path: Path) -> None:
    data = tmp_path / "data"  # made by the server itself
    srv = start_server(data, tmp_path / "server.log")
    try:
        key = srv.create_key()
        with srv.client(key) as c:
            png = upload(c, "photo.png", png_bytes())
            job = c.post("/jobs", json={"tool": "image-convert", "inputFileIds": [png["id"]],
                                        "outputFormat": "webp"}).json()
            assert wait_job(c, job["id"])["status"] == "DONE"
            pdf = upload(c, "scan.pdf", image_pdf_bytes(pages=2, size=200))
            job = c.post("/jobs", json={"tool": "pdf-split", "inputFileIds": [pdf["id"]]}).json()
            assert wait_job(c, job["id"])["status"] == "DONE"
        assert stat.S_IMODE(data.stat().st_mode) == 0o700
        assert not loose(data), loose(data)
        if not SCALE:  # the database and the files' bytes are in the data dir (else in PostgreSQL and a bucket)
            assert (data / "filekiln.db").is_file() and list((data / "files").rglob("file_*"))
    finally:
        srv.stop()


def test_a_data_dir_with_loose_modes_is_tightened_at_start(tmp_path: Path) -> None:
    data = tmp_path / "data"
    (data / "files" / "ab").mkdir(parents=True)
    (data / "logs").mkdir()
    for path in (data / "files" / "ab" / "file_old", data / "logs" / "filekiln.log", data / "settings.toml"):
        path.write_text("")
        path.chmod(0o644)
    for folder in (data, data / "files", data / "files" / "ab", data / "logs"):
        folder.chmod(0o755)
    srv = start_server(data, tmp_path / "server.log")
    try:
        deadline = time.monotonic() + 30
        while loose(data) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not loose(data), loose(data)
    finally:
        srv.stop()


def test_keys_create_on_a_new_data_dir_makes_it_private(tmp_path: Path) -> None:
    """The CLI runs with the user's usual umask (022 here), and writes the data dir before any server
    has started to tighten it."""
    data = tmp_path / "new" / "data"
    old = os.umask(0o022)
    try:
        run_cli(data, "keys", "create", "--name", "first")
    finally:
        os.umask(old)
    assert stat.S_IMODE(data.stat().st_mode) == 0o700
    assert loose(data) == [], loose(data)
    assert "filekiln.db" in os.listdir(data)

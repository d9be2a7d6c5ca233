"""LibreOffice leaves nothing outside the data dir: its temporary folders (``lu*.tmp``) go to the
data dir and are removed with the instance, and the pipe sockets it can only make in /tmp are
removed when the instance stops."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest

from tests.conftest import in_ci, start_server, upload, wait_job
from tests.converters.doc_samples import make_docx

PIPE_DIRS = (Path("/tmp"), Path("/var/tmp"))


def office_sockets() -> set[Path]:
    return {p for folder in PIPE_DIRS if folder.is_dir() for p in folder.glob(f"OSL_PIPE_{os.getuid()}_*")}


@pytest.mark.skipif(os.name != "posix", reason="Unix sockets and TMPDIR are POSIX matters")
def test_office_conversions_leave_nothing_in_the_system_temp_folder(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    if shutil.which("soffice") is None and not in_ci():
        pytest.skip("LibreOffice is not installed")
    system_tmp = tmp_path / "system-tmp"
    system_tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(system_tmp))  # the server and what it starts see this as the temp folder
    data = tmp_path / "data"
    data.mkdir()
    before = office_sockets()
    srv = start_server(data, tmp_path / "server.log")
    key = srv.create_key()
    try:
        with srv.client(key) as c:
            # canceled while LibreOffice works on it (the first job starts the instance: seconds): the
            # conversion is killed, and its scratch folder goes with the job's folder, not left in TMPDIR
            ref = upload(c, "canceled.docx", make_docx(tmp_path, "canceled.docx").read_bytes())
            job = c.post("/jobs", json={"tool": "document-to-pdf", "inputFileIds": [ref["id"]]}).json()
            deadline = time.monotonic() + 60
            while not [*system_tmp.glob("filekiln-doc-*"), *data.glob("jobs/*/*/filekiln-doc-*")]:
                assert time.monotonic() < deadline, "the conversion never made its scratch folder"
                time.sleep(0.02)
            c.post(f"/jobs/{job['id']}/cancel")
            assert wait_job(c, job["id"])["status"] == "CANCELED"
            for n in range(3):
                ref = upload(c, f"letter-{n}.docx", make_docx(tmp_path, f"letter-{n}.docx").read_bytes())
                job = c.post("/jobs", json={"tool": "document-to-pdf", "inputFileIds": [ref["id"]]}).json()
                assert wait_job(c, job["id"])["status"] == "DONE"
        assert list(data.glob("engines/office/slot-*/profile")), "the conversions did not use LibreOffice"
    finally:
        srv.stop()
    left = sorted(p.name for p in system_tmp.iterdir())
    assert not [n for n in left if n.startswith(("lu", "filekiln-doc-")) or "OSL" in n], left
    new_sockets = sorted(p.name for p in office_sockets() - before)
    assert not new_sockets, new_sockets
    assert not list(data.glob("engines/office/slot-*/profile.tmp")), "the instance's temp folder outlived it"

"""Passwords in job params (``pdf-protect``, ``pdf-unlock``, ``pdf-sign``, the archive tools): used by the
tool, never stored in clear, never returned, never logged, and gone from the database once the job has ended."""

from __future__ import annotations

import datetime
import io
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, get_args

import py7zr
import pymupdf
import pytest
from pydantic import SecretStr

from converters.catalogue import load_catalogue
from tests.conftest import (
    ROOT,
    Server,
    assert_problem,
    database_text,
    image_pdf_bytes,
    install_db,
    process_env,
    start_server,
    upload,
    wait_job,
)

USER_PW = "Tr0ub4dor-user-8c1f"
OWNER_PW = "Corr3ct-owner-53aa"
WRONG_PW = "not-the-pw-e71b"
SECRETS = (USER_PW.encode(), OWNER_PW.encode(), WRONG_PW.encode())


def everything_under(root: Path) -> list[tuple[Path, bytes]]:
    """Every file under ``root`` with its bytes; a job folder the worker removes during the walk is skipped
    (os.walk ignores a folder that is gone; a file that is gone holds nothing any more)."""
    found = []
    for folder, _, names in os.walk(root):
        for name in sorted(names):
            path = Path(folder) / name
            try:
                found.append((path, path.read_bytes()))
            except FileNotFoundError:
                continue
    return found


def assert_nowhere(root: Path, *extra: Path) -> None:
    """No secret, in clear, in any file of the data dir (database, WAL, queue, logs, results) or the log."""
    for path, data in [*everything_under(root), *((p, p.read_bytes()) for p in extra)]:
        for secret in SECRETS:
            assert secret not in data, f"{secret!r} found in {path}"


def sealed_column(data_dir: Path, job_id: str) -> str | None:
    db = install_db(data_dir)
    try:
        row = db.one("select secret_params from jobs where id = ?", job_id)
    finally:
        db.close()
    value: str | None = row[0]
    return value


def sealed_until_gone(data_dir: Path, job_id: str, seconds: float = 10) -> str | None:
    """The column once it is cleared, or what it still holds after ``seconds``."""
    deadline = time.monotonic() + seconds
    while (value := sealed_column(data_dir, job_id)) is not None and time.monotonic() < deadline:
        time.sleep(0.1)
    return value


@pytest.mark.backends
def test_passwords_reach_the_tool_but_are_never_stored_shown_or_logged(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    log = tmp_path / "server.log"
    # no workers: the job waits in the queue, where its passwords must already be sealed
    srv = start_server(data, log, "--workers", "0")
    key = srv.create_key()
    try:
        with srv.client(key) as c:
            pdf = upload(c, "plan.pdf", image_pdf_bytes(pages=1, size=200))
            r = c.post("/jobs", json={"tool": "pdf-protect", "inputFileIds": [pdf["id"]],
                                      "params": {"userPassword": USER_PW, "ownerPassword": OWNER_PW}})
            assert r.status_code == 201, r.text
            job = r.json()
            assert job["params"]["userPassword"] == "***" and job["params"]["ownerPassword"] == "***"
            assert job["status"] == "QUEUED"
        assert sealed_column(data, job["id"])  # kept for the run, sealed
        assert_nowhere(data, log)
    finally:
        srv.stop()

    srv = start_server(data, log)  # workers on: the queued job runs with the passwords it was given
    try:
        with srv.client(key) as c, srv.client() as anonymous:
            done = wait_job(c, job["id"])
            assert done["status"] == "DONE", done
            for shown in (done, anonymous.get(f"/jobs/{job['id']}").json(),
                          *(j for j in c.get("/jobs").json()["items"] if j["id"] == job["id"])):
                assert shown["params"] == {"userPassword": "***", "ownerPassword": "***"}, shown
            events = c.get(f"/jobs/{job['id']}/events", timeout=30).text
            assert "***" in events and USER_PW not in events
            url = c.get(f"/jobs/{job['id']}/result").json()["downloadUrl"]
            result = c.get(url).content
            doc = pymupdf.open(stream=result, filetype="pdf")
            assert doc.needs_pass and doc.authenticate(USER_PW) and doc.page_count == 1
            doc.close()
            assert sealed_until_gone(data, job["id"]) is None  # gone with the run

            protected = c.post("/files", files={"file": ("locked.pdf", result)}).json()
            wrong = c.post("/jobs", params={"wait": 60}, json={
                "tool": "pdf-unlock", "inputFileIds": [protected["id"]], "params": {"password": WRONG_PW}}).json()
            wrong = wait_job(c, wrong["id"])
            assert wrong["status"] == "FAILED" and wrong["errorCode"] == "wrong_password"
            assert WRONG_PW not in (wrong["errorMessage"] or "") and wrong["params"] == {"password": "***"}
            assert sealed_until_gone(data, wrong["id"]) is None

            # params copied back from a job as shown are refused, not run with "***" as the password
            again = c.post("/jobs", json={"tool": "pdf-unlock", "inputFileIds": [protected["id"]],
                                          "params": wrong["params"]})
            assert_problem(again, 422, "invalid_params")
            unlocked = wait_job(c, c.post("/jobs", json={
                "tool": "pdf-unlock", "inputFileIds": [protected["id"]], "params": {"password": OWNER_PW}},
            ).json()["id"])
            assert unlocked["status"] == "DONE", unlocked
    finally:
        srv.stop()
    assert_nowhere(data, log)


def test_a_canceled_job_drops_its_sealed_passwords(server: Server, api_key: str) -> None:
    """On the shared server: no other test's file holds these passwords, so the whole data dir is searched."""
    data_dir = server.data_dir
    with server.client(api_key) as c:
        pdf = upload(c, "plan.pdf", image_pdf_bytes(pages=1, size=200))
        # canceled while queued or while running (a quick one may finish first): each ending drops them
        jobs = [c.post("/jobs", json={"tool": "pdf-protect", "inputFileIds": [pdf["id"]],
                                      "params": {"userPassword": USER_PW}}).json() for _ in range(6)]
        for job in jobs:
            c.post(f"/jobs/{job['id']}/cancel")
        for job in jobs:
            assert wait_job(c, job["id"])["status"] in ("CANCELED", "DONE")
            assert sealed_until_gone(data_dir, job["id"]) is None
            c.delete(f"/jobs/{job['id']}")
    assert_nowhere(data_dir)


def test_a_worker_with_another_key_fails_the_job_instead_of_running_it_with_stars(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from cryptography.fernet import Fernet

    data = tmp_path / "data"
    data.mkdir()
    monkeypatch.setenv("FILEKILN_PARAMS_KEY", Fernet.generate_key().decode())
    srv = start_server(data, tmp_path / "server.log", "--workers", "0")
    key = srv.create_key()
    worker = None
    try:
        with srv.client(key) as c:
            pdf = upload(c, "plan.pdf", image_pdf_bytes(pages=1, size=200))
            job = c.post("/jobs", json={"tool": "pdf-protect", "inputFileIds": [pdf["id"]],
                                        "params": {"userPassword": USER_PW, "ownerPassword": OWNER_PW}}).json()
            # a worker process of the same install that was not given the install's params_key
            env = {**process_env(data), "FILEKILN_PARAMS_KEY": Fernet.generate_key().decode()}
            worker = subprocess.Popen([sys.executable, "-m", "filekiln", "worker", "--data-dir", str(data)],
                                      cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            failed = wait_job(c, job["id"], timeout=60)
            assert failed["status"] == "FAILED" and failed["errorCode"] == "params_unreadable", failed
            assert "params_key" in failed["errorMessage"] and USER_PW not in failed["errorMessage"]
            assert sealed_until_gone(data, job["id"]) is None
    finally:
        if worker is not None:
            worker.terminate()
            worker.wait(30)
        srv.stop()


# --------------------------------------------------------------------------- every tool with a secret param


def locked_pdf(password: str) -> bytes:
    doc = pymupdf.open(stream=image_pdf_bytes(pages=1, size=200), filetype="pdf")
    try:
        return bytes(doc.tobytes(encryption=pymupdf.PDF_ENCRYPT_AES_256, user_pw=password, owner_pw=password))
    finally:
        doc.close()


def pkcs12_of(password: str) -> bytes:
    """A PKCS#12 file with a fresh key and a self-signed certificate, valid from yesterday for a month."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import rsa
    from cryptography.hazmat.primitives.serialization import pkcs12
    from cryptography.x509.oid import NameOID

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "Secret Params")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=30)).sign(key, hashes.SHA256()))
    encryption = serialization.BestAvailableEncryption(password.encode())
    return pkcs12.serialize_key_and_certificates(b"signer", key, cert, None, encryption)


def locked_7z(password: str) -> bytes:
    buf = io.BytesIO()
    with py7zr.SevenZipFile(buf, "w", password=password) as sz:
        sz.writestr(b"the plan\n" * 100, "plan.txt")
    return buf.getvalue()


# a tool with a secret param -> (its input files, its params (every one a secret), its output format) for a password
SecretJob = tuple[list[tuple[str, bytes]], dict[str, str], str | None]
SECRET_JOBS: dict[str, Callable[[str], SecretJob]] = {
    "archive-convert": lambda pw: ([("locked.7z", locked_7z(pw))], {"password": pw}, "zip"),
    "archive-extract": lambda pw: ([("locked.7z", locked_7z(pw))], {"password": pw}, None),
    "pdf-protect": lambda pw: ([("plan.pdf", image_pdf_bytes(pages=1, size=200))],
                               {"userPassword": pw, "ownerPassword": pw + "-owner"}, None),
    "pdf-sign": lambda pw: ([("plan.pdf", image_pdf_bytes(pages=1, size=200)), ("me.p12", pkcs12_of(pw))],
                            {"password": pw}, None),
    "pdf-unlock": lambda pw: ([("locked.pdf", locked_pdf(pw))], {"password": pw}, None),
}


def has_secret_param(params: Any) -> bool:
    return any(SecretStr in (f.annotation, *get_args(f.annotation)) for f in params.model_fields.values())


def test_every_tool_with_a_secret_param_is_run_below() -> None:
    assert sorted(t.id for t in load_catalogue() if has_secret_param(t.params)) == sorted(SECRET_JOBS)


@pytest.mark.parametrize("tool", sorted(SECRET_JOBS))
def test_a_done_jobs_passwords_are_gone_from_the_database_and_never_logged(
        tool: str, server: Server, api_key: str) -> None:
    files, params, fmt = SECRET_JOBS[tool](f"Sealed-7d3c-{tool}")
    with server.client(api_key) as c:
        ids = [upload(c, name, data)["id"] for name, data in files]
        r = c.post("/jobs", json={"tool": tool, "inputFileIds": ids, "params": params,
                                  **({"outputFormat": fmt} if fmt else {})})
        assert r.status_code == 201, r.text
        done = wait_job(c, r.json()["id"])
    assert done["status"] == "DONE" and set(done["params"].values()) == {"***"}, done
    assert sealed_column(server.data_dir, done["id"]) is None  # cleared with the change to DONE, not later
    stored, logged = database_text(server), server.log()
    for password in params.values():
        assert password not in stored and password not in logged

"""filekiln doctor: what it checks, in words, and its exit code."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

from localapi.core.db import SCHEMA_HEAD, PostgresDatabase
from tests.conftest import ROOT, Server, start_server, write_settings
from tests.postgres import PostgresServer


def doctor(data_dir: Path, port: int | None = None) -> tuple[int, list[dict[str, str]]]:
    """``filekiln doctor --json`` on ``data_dir``, with the API port from FILEKILN_PORT like every setting."""
    env = {**os.environ, **({"FILEKILN_PORT": str(port)} if port else {})}
    proc = subprocess.run([sys.executable, "-m", "filekiln", "--data-dir", str(data_dir), "doctor", "--json"],
                          capture_output=True, text=True, cwd=ROOT, timeout=120, env=env)
    return proc.returncode, json.loads(proc.stdout)


def by_name(checks: list[dict[str, str]]) -> dict[str, dict[str, str]]:
    return {c["name"]: c for c in checks}


def test_a_fresh_data_dir_is_fine(tmp_path: Path) -> None:
    code, checks = doctor(tmp_path / "data")
    found = by_name(checks)
    assert code == 0, checks
    assert found["data dir"]["state"] == "ok" and found["metadata database"]["state"] == "ok"
    assert "tools can run here" in found["tools"]["detail"]
    assert all(c["state"] in ("ok", "warn") for c in checks)


def test_a_damaged_database_fails_in_words(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "filekiln.db").write_bytes(b"this is not SQLite" * 100)
    proc = subprocess.run([sys.executable, "-m", "filekiln", "--data-dir", str(data), "doctor"],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 1
    line = next(line for line in proc.stdout.splitlines() if "metadata database" in line)
    assert line.startswith("FAIL") and "backup" in line


def test_a_data_dir_that_cannot_be_written_fails(tmp_path: Path) -> None:
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")
    code, checks = doctor(blocked / "data")
    assert code == 1 and checks[0]["name"] == "data dir" and checks[0]["state"] == "fail"
    assert "FILEKILN_DATA_DIR" in checks[0]["detail"]


def test_the_api_address_says_who_holds_it(tmp_path: Path, server: Server) -> None:
    _, checks = doctor(server.data_dir, port=server.port)  # a FileKiln answers there
    assert by_name(checks)["API address"]["detail"].startswith("FileKiln ")
    with socket.socket() as other:  # another program: a warning that says what to do
        other.bind(("127.0.0.1", 0))
        other.listen()
        _, checks = doctor(tmp_path / "data", port=other.getsockname()[1])
        address = by_name(checks)["API address"]
        assert address["state"] == "warn" and "another program" in address["detail"]


def test_postgresql_is_looked_at_without_being_changed_and_named_in_health(tmp_path: Path,
                                                                           postgres: PostgresServer) -> None:
    data = tmp_path / "data"
    data.mkdir()
    url = postgres.create_database()
    write_settings(data, database_url=url)
    code, checks = doctor(data)
    found = by_name(checks)["metadata database"]
    assert code == 0 and found["state"] == "ok", checks
    assert "PostgreSQL" in found["detail"] and "empty; FileKiln makes its tables" in found["detail"]
    db = PostgresDatabase(url, migrate=False)
    assert db.version == SCHEMA_HEAD  # made by the service doctor started to look at the tools
    db.close()
    srv = start_server(data, tmp_path / "server.log")
    try:
        backend = srv.client(srv.create_key()).get("/health").json()["backends"]["database"]  # a key sees them
        assert backend == {"kind": "postgresql", "target": url, "ok": True, "error": None}
    finally:
        srv.stop()
    code, checks = doctor(data)
    assert "0 jobs kept" in by_name(checks)["metadata database"]["detail"]


def test_a_postgresql_that_cannot_be_reached_stops_the_start_in_words(tmp_path: Path,
                                                                      postgres: PostgresServer) -> None:
    data = tmp_path / "data"
    data.mkdir()
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    port = closed.getsockname()[1]
    closed.close()
    for url, words in ((f"postgresql://filekiln:s3cret-pw@127.0.0.1:{port}/filekiln", "refused"),
                       (postgres.url("no_such_database"), "does not exist")):
        write_settings(data, database_url=url)
        code, checks = doctor(data)
        found = by_name(checks)["metadata database"]
        assert code == 1 and found["state"] == "fail" and words in found["detail"], found
        assert "s3cret-pw" not in found["detail"]
        serve = subprocess.run([sys.executable, "-m", "filekiln", "--data-dir", str(data), "serve"],
                               capture_output=True, text=True, cwd=ROOT, timeout=60)
        assert serve.returncode == 1 and "FileKiln cannot start" in serve.stderr and words in serve.stderr
        assert "s3cret-pw" not in serve.stderr and "Traceback" not in serve.stderr
    bad = tmp_path / "bad"
    bad.mkdir()
    write_settings(bad, database_url="mysql://root@127.0.0.1/filekiln")
    assert "is not a database FileKiln can use" in by_name(doctor(bad)[1])["metadata database"]["detail"]

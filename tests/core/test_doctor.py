"""filekiln doctor: what it checks, in words, and its exit code."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT, Server


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

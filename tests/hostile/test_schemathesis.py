"""Schemathesis, all checks and the stateful phase, against the live OpenAPI document."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import httpx
import pytest

from tests.conftest import Server

CONFIG = Path(__file__).with_name("schemathesis.toml")
# Server-sent event streams stay open until a job ends (or, for /events, until the client leaves):
# a fuzzer's request would only run into its timeout. tests/api/test_events.py covers them.
STREAMS = r"/events$"


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_schemathesis_finds_no_failures(server: Server, api_key: str, tmp_path: Path) -> None:
    st = Path(sys.executable).with_name("st")
    if not st.exists():
        pytest.skip("schemathesis is not installed (it is part of the test extra)")
    junit = tmp_path / "junit.xml"
    command = [
        str(st), "--config-file", str(CONFIG), "run", f"{server.base_url}/openapi.json",
        "--checks", "all", "-H", f"X-API-Key: {api_key}", "--max-examples", "25", "--seed", "20261121",
        "--request-timeout", "70", "--exclude-path-regex", STREAMS,
        "--no-color", "--report", "junit", "--report-junit-path", str(junit),
    ]
    result = subprocess.run(command, capture_output=True, text=True, timeout=900, cwd=tmp_path,
                            env={**os.environ, "SCHEMATHESIS_HOOKS": ""})
    report = result.stdout[-6000:] + result.stderr[-2000:]
    assert result.returncode == 0, report
    # a run that reached none (or only some) of the API would pass too: every operation must be in it
    spec = httpx.get(f"{server.base_url}/openapi.json").json()
    operations = {f"{method.upper()} {path}" for path, item in spec["paths"].items() for method in item
                  if method in ("get", "put", "post", "delete", "patch") and not re.search(STREAMS, path)}
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite is not None, report
    tested = {case.get("name") for case in suite.iter("testcase")}
    assert "Stateful tests" in tested, sorted(tested)  # the phase that follows links from one call to the next
    tested.discard("Stateful tests")
    assert operations and tested == operations, (sorted(operations - tested), sorted(tested - operations))
    assert (suite.get("failures"), suite.get("errors")) == ("0", "0"), report
    assert api_key not in server.log()

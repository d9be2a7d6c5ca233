"""Schemathesis, all checks and the stateful phase, against the live OpenAPI document."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, Server

CONFIG = Path(__file__).with_name("schemathesis.toml")


@pytest.mark.slow
def test_schemathesis_finds_no_failures(server: Server, api_key: str, tmp_path: Path) -> None:
    st = Path(sys.executable).with_name("st")
    if not st.exists():
        pytest.skip("schemathesis is not installed (it is part of the test extra)")
    command = [
        str(st), "--config-file", str(CONFIG), "run", f"{server.base_url}/openapi.json",
        "--checks", "all", "-H", f"X-API-Key: {api_key}", "--max-examples", "25", "--seed", "20261121",
        "--request-timeout", "30", "--no-color",
    ]
    result = subprocess.run(command, capture_output=True, text=True, timeout=900, cwd=tmp_path,
                            env={**os.environ, "SCHEMATHESIS_HOOKS": ""})
    report = result.stdout[-6000:] + result.stderr[-2000:]
    assert result.returncode == 0, report
    assert "No issues found" in result.stdout or " passed" in result.stdout, report
    assert api_key not in server.log()
    assert (ROOT / "localapi").is_dir()

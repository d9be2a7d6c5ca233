"""The README's curl session works as written (the port aside) against a real server."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import ROOT, Server


def curl_session() -> str:
    text = (ROOT / "README.md").read_text()
    block = re.search(r"<!-- curl-session -->\s*```sh\n(.*?)```", text, re.S)
    assert block, "README has no curl session"
    return block.group(1)


@pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed")
def test_readme_curl_session_converts_a_png_to_webp(server: Server, tmp_path: Path) -> None:
    script = curl_session().replace("127.0.0.1:8741", f"127.0.0.1:{server.port}")
    script = script.replace(".venv/bin/", f"{ROOT}/.venv/bin/")
    env = {**os.environ, "FILEKILN_DATA_DIR": str(server.data_dir)}
    result = subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=tmp_path, env=env,
                            capture_output=True, text=True)  # a hang is pytest-timeout's to end
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "photo.webp").read_bytes()[8:12] == b"WEBP"

"""The README's curl session and Python example work as written (the port aside) against a real server."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, Server, png_bytes


def readme_block(name: str, language: str) -> str:
    text = (ROOT / "README.md").read_text()
    block = re.search(rf"<!-- {name} -->\s*```{language}\n(.*?)```", text, re.S)
    assert block, f"README has no {name}"
    return block.group(1)


def curl_session() -> str:
    return readme_block("curl-session", "sh")


@pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed")
def test_readme_curl_session_converts_a_png_to_webp(server: Server, tmp_path: Path) -> None:
    script = curl_session().replace("127.0.0.1:8741", f"127.0.0.1:{server.port}")
    script = script.replace(".venv/bin/", f"{ROOT}/.venv/bin/")
    env = {**os.environ, "FILEKILN_DATA_DIR": str(server.data_dir)}
    result = subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=tmp_path, env=env,
                            capture_output=True, text=True)  # a hang is pytest-timeout's to end
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "photo.webp").read_bytes()[8:12] == b"WEBP"


def test_readme_python_example_converts_a_png_to_webp(server: Server, tmp_path: Path) -> None:
    script = readme_block("python-session", "python").replace("127.0.0.1:8741", f"127.0.0.1:{server.port}")
    (tmp_path / "photo.png").write_bytes(png_bytes(640, 480))  # what the curl session made
    env = {**os.environ, "FILEKILN_API_KEY": server.create_key()}
    result = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=env,
                            capture_output=True, text=True)  # a hang is pytest-timeout's to end
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-2:] == ["100%", "converted/photo.webp"], result.stdout
    assert (tmp_path / "converted" / "photo.webp").read_bytes()[8:12] == b"WEBP"

"""The CLI's own commands: switching tools off and on, and local conversions refused as the API refuses them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT, png_bytes, run_cli


def convert(data: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "filekiln", "--data-dir", str(data), "convert", *args],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)


def test_a_disabled_tool_is_unavailable_everywhere_until_enabled(tmp_path: Path) -> None:
    data = tmp_path / "data"
    assert run_cli(data, "tools", "disable", "image-resize").strip() == "image-resize disabled."
    tools = {t["id"]: t for t in json.loads(run_cli(data, "tools", "--json"))}
    assert tools["image-resize"]["available"] is False
    assert "disabled" in tools["image-resize"]["unavailableReason"]
    assert tools["image-convert"]["available"] is True
    src = tmp_path / "in.png"
    src.write_bytes(png_bytes(40, 30))
    refused = convert(data, str(src), "--tool", "image-resize", "--param", "percent=50", "--out", str(tmp_path))
    assert refused.returncode == 2 and refused.stderr.startswith("tool_disabled:"), refused.stderr
    run_cli(data, "tools", "enable", "image-resize")
    tools = {t["id"]: t for t in json.loads(run_cli(data, "tools", "--json", "--category", "images"))}
    assert tools["image-resize"]["available"] is True


def test_switching_an_unknown_tool_says_so(tmp_path: Path) -> None:
    result = subprocess.run([sys.executable, "-m", "filekiln", "--data-dir", str(tmp_path), "tools", "disable",
                             "no-such-tool"], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert result.returncode == 2 and "no-such-tool" in result.stderr


def test_local_convert_refuses_with_the_api_codes(tmp_path: Path) -> None:
    data = tmp_path / "data"
    src = tmp_path / "in.png"
    src.write_bytes(png_bytes(40, 30))
    text = tmp_path / "notes.png"  # named like an image, sniffed as text
    text.write_text("not an image at all\n")
    cases = {
        "unknown_tool": (str(src), "--tool", "no-such-tool"),
        "invalid_params": (str(src), "--tool", "image-resize", "--param", "percent=0"),
        "unsupported_format": (str(text), "--tool", "image-convert"),
    }
    for code, args in cases.items():
        result = convert(data, *args, "--out", str(tmp_path / "out"))
        assert result.returncode == 2 and result.stderr.startswith(f"{code}:"), (code, result.stderr)
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())

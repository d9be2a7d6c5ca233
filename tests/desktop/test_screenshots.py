"""Every page in both themes, in a real X window (Xvfb): at 1024x700 and 1440x900, and at 1.5x scaling on a
1440x900 screen (960x600 logical), each written, the size it should be, and not blank."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from PIL import Image, ImageStat

from tests.conftest import ROOT

PAGES = ("convert", "watch", "keys", "api", "engines", "settings")
needs_xvfb = pytest.mark.skipif(shutil.which("xvfb-run") is None, reason="xvfb-run is not installed (apt: xvfb)")


def shoot(out: Path, screen: str, sizes: str, scale: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("QT_QPA_PLATFORM", "DISPLAY")}
    if scale:
        env["QT_SCALE_FACTOR"] = scale
    return subprocess.run(["xvfb-run", "-a", "-s", f"-screen 0 {screen}x24", sys.executable,
                           str(ROOT / "scripts" / "screenshots.py"), "--matrix", "--sizes", sizes, "--out", str(out)],
                          env=env, capture_output=True, text=True, timeout=240, cwd=ROOT)


def check(out: Path, width: int, height: int, scale: float = 1.0) -> None:
    for theme in ("light", "dark"):
        for page in PAGES:
            path = out / f"{page}-{theme}-{width}x{height}.png"
            assert path.is_file(), path
            with Image.open(path) as image:
                assert image.size == (round(width * scale), round(height * scale)), (path, image.size)
                colours = image.convert("RGB").getcolors(maxcolors=1 << 20)
                assert colours is not None and len(colours) > 50, f"{path.name} looks blank"
                if theme == "dark":  # the window is dark, not a light page with a dark frame
                    assert ImageStat.Stat(image.convert("L")).mean[0] < 110, path.name


@needs_xvfb
def test_every_page_in_both_themes_at_two_sizes(tmp_path: Path) -> None:
    proc = shoot(tmp_path, "1600x1000", "1024x700,1440x900")
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    check(tmp_path, 1024, 700)
    check(tmp_path, 1440, 900)


@needs_xvfb
def test_every_page_fits_a_1440x900_screen_at_1_5x(tmp_path: Path) -> None:
    proc = shoot(tmp_path, "1440x900", "960x600", scale="1.5")
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    check(tmp_path, 960, 600, scale=1.5)

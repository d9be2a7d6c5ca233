"""Write FileKiln's icon as PNG, ICO (Windows) and ICNS (macOS) into a folder (default build/icons).

The app draws its icon in code (desktop/icons.py); a ``resources/icons/filekiln.png`` (or
``resources/filekiln.png``), when present, wins. Run with the venv's Python; Qt runs offscreen.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def render_png(target: Path, size: int = 512) -> bool:
    for candidate in (ROOT / "resources" / "icons" / "filekiln.png", ROOT / "resources" / "filekiln.png"):
        if candidate.is_file():
            from PIL import Image

            Image.open(candidate).convert("RGBA").resize((size, size), Image.Resampling.LANCZOS).save(target)
            return True
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    sys.path.insert(0, str(ROOT))
    try:
        from PySide6.QtGui import QGuiApplication

        from desktop.icons import _kiln
    except ImportError as exc:
        print(f"make_icons: no icon source ({exc}); the bundle goes without an icon", file=sys.stderr)
        return False
    app = QGuiApplication.instance() or QGuiApplication([])
    ok = _kiln(size).save(str(target), "PNG")
    del app
    return bool(ok)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("out", nargs="?", type=Path, default=ROOT / "build" / "icons")
    out = parser.parse_args().out
    out.mkdir(parents=True, exist_ok=True)
    png = out / "filekiln-512.png"
    if not render_png(png):
        return 0
    from PIL import Image

    image = Image.open(png).convert("RGBA")
    image.resize((256, 256), Image.Resampling.LANCZOS).save(out / "filekiln.png")
    image.save(out / "filekiln.ico", sizes=[(16, 16), (24, 24), (32, 32), (48, 48), (64, 64), (128, 128), (256, 256)])
    try:
        image.save(out / "filekiln.icns")
    except (OSError, ValueError, KeyError) as exc:  # ICNS writing needs a recent Pillow
        print(f"make_icons: no .icns ({exc})", file=sys.stderr)
    print(f"icons in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

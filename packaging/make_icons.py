"""Make FileKiln's icon files from their source, resources/icons/filekiln.svg.

    .venv/bin/python packaging/make_icons.py              # build/icons (what packaging/build.py runs)
    .venv/bin/python packaging/make_icons.py OUT          # the same into OUT
    .venv/bin/python packaging/make_icons.py --resources  # refresh resources/icons/filekiln-<size>.png

The build's icons: ``filekiln.png`` (256 px; the AppDir's icon), ``filekiln.ico`` (Windows, 16-256 px) and
``filekiln.icns`` (macOS, 16-1024 px), each size rendered from the SVG on its own. ``--resources`` rewrites the
PNGs committed next to the SVG (16-256 px): the app loads those when its Qt cannot render SVG. Run it after
changing the SVG, and commit both.

Rendering uses Qt's SVG renderer (PySide6.QtSvg, offscreen); without it the committed PNGs are the source.
Writing ICO and ICNS uses Pillow.
"""

from __future__ import annotations

import argparse
import io
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from PIL import Image as PILImage

ROOT = Path(__file__).resolve().parent.parent
ICONS = ROOT / "resources" / "icons"
SVG = ICONS / "filekiln.svg"
RESOURCE_SIZES = (16, 24, 32, 48, 64, 128, 256)  # desktop/icons.py APP_ICON_SIZES
ICO_SIZES = (16, 24, 32, 48, 64, 128, 256)
ICNS_SIZES = (16, 32, 64, 128, 256, 512, 1024)


def resource_png(size: int) -> Path:
    return ICONS / f"filekiln-{size}.png"


def render_svg(sizes: tuple[int, ...], svg: Path = SVG) -> dict[int, bytes] | None:
    """PNG bytes of the SVG rendered at each size, or None when Qt's SVG renderer is not available."""
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    try:
        from PySide6.QtCore import QBuffer, QByteArray, QIODevice, QRectF, Qt
        from PySide6.QtGui import QGuiApplication, QImage, QPainter
        from PySide6.QtSvg import QSvgRenderer
    except ImportError as exc:
        print(f"make_icons: no Qt SVG renderer ({exc})", file=sys.stderr)
        return None
    app = QGuiApplication.instance() or QGuiApplication([])
    renderer = QSvgRenderer(str(svg))
    if not renderer.isValid():
        print(f"make_icons: {svg} is not a valid SVG", file=sys.stderr)
        return None
    out: dict[int, bytes] = {}
    for size in sizes:
        image = QImage(size, size, QImage.Format.Format_ARGB32)
        image.fill(Qt.GlobalColor.transparent)
        painter = QPainter(image)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        renderer.render(painter, QRectF(0, 0, size, size))
        painter.end()
        data = QByteArray()
        buffer = QBuffer(data)
        buffer.open(QIODevice.OpenModeFlag.WriteOnly)
        image.save(buffer, "PNG")  # type: ignore[call-overload]  # the stubs want bytes, PySide6 a str
        buffer.close()
        out[size] = bytes(data.data())
    del app
    return out


def images(sizes: tuple[int, ...]) -> dict[int, PILImage.Image] | None:
    """The icon at each size as Pillow images: from the SVG, else resized from the committed PNGs."""
    from PIL import Image

    rendered = render_svg(sizes)
    if rendered is not None:
        return {size: Image.open(io.BytesIO(data)).convert("RGBA") for size, data in rendered.items()}
    committed = {size: resource_png(size) for size in RESOURCE_SIZES if resource_png(size).is_file()}
    if not committed:
        return None
    print("make_icons: using the PNGs in resources/icons", file=sys.stderr)
    result = {}
    for size in sizes:
        source = committed.get(size) or committed[max(committed)]
        result[size] = Image.open(source).convert("RGBA").resize((size, size), Image.Resampling.LANCZOS)
    return result


def write_resources() -> int:
    rendered = render_svg(RESOURCE_SIZES)
    if rendered is None:
        return 1
    for size, data in rendered.items():
        resource_png(size).write_bytes(data)
    print(f"PNGs of {SVG.name} in {ICONS}: " + ", ".join(f"{size} px" for size in rendered))
    return 0


def write_build_icons(out: Path) -> int:
    out.mkdir(parents=True, exist_ok=True)
    found = images(tuple(sorted(set(ICO_SIZES) | set(ICNS_SIZES))))
    if found is None:  # the bundle goes without an icon rather than failing the build
        print("make_icons: no icon source; the bundle goes without an icon", file=sys.stderr)
        return 0
    found[256].save(out / "filekiln.png")
    found[256].save(out / "filekiln.ico", sizes=[(s, s) for s in ICO_SIZES],
                    append_images=[found[s] for s in ICO_SIZES if s != 256])
    try:
        found[1024].save(out / "filekiln.icns", append_images=[found[s] for s in ICNS_SIZES if s != 1024])
    except (OSError, ValueError, KeyError) as exc:  # ICNS writing needs a recent Pillow
        print(f"make_icons: no .icns ({exc})", file=sys.stderr)
    print(f"icons in {out}")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", nargs="?", type=Path, default=ROOT / "build" / "icons")
    parser.add_argument("--resources", action="store_true",
                        help="rewrite resources/icons/filekiln-<size>.png from the SVG instead")
    args = parser.parse_args()
    if args.resources:
        return write_resources()
    return write_build_icons(args.out)


if __name__ == "__main__":
    sys.exit(main())

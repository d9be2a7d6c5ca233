"""Screenshots of each panel: ``docs/screenshots/*.png``, or every page in both themes at several sizes.

Run: QT_QPA_PLATFORM=offscreen .venv/bin/python scripts/screenshots.py [--out docs/screenshots]
     xvfb-run -a .venv/bin/python scripts/screenshots.py --matrix --out DIR [--sizes 1024x700,1440x900]
     (a real window on X; QT_SCALE_FACTOR=1.5 for high-DPI screens: sizes are then logical pixels)

Builds a throwaway data dir with a few sample files, a couple of API keys and a few real
jobs (one converted, one failed, one from an API key), then grabs each page with
``QWidget.grab()``. Nothing outside the temp dir is touched.
"""

from __future__ import annotations

import argparse
import io
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

if "DISPLAY" not in os.environ:
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from PySide6.QtCore import QCoreApplication, QEventLoop, QTimer  # noqa: E402
from PySide6.QtWidgets import QApplication, QStyleFactory, QWidget  # noqa: E402

from desktop.context import Desktop  # noqa: E402
from desktop.controllers.api import find_free_port  # noqa: E402
from desktop.icons import app_icon, file_icons  # noqa: E402
from desktop.main_window import MainWindow  # noqa: E402
from desktop.theme import apply_theme  # noqa: E402
from desktop.views.shell import Shell  # noqa: E402
from localapi.config import load_settings  # noqa: E402
from localapi.core.jobs import Caller  # noqa: E402
from localapi.core.service import Service  # noqa: E402
from localapi.core.workflows.records import StepSpec  # noqa: E402


def pump(seconds: float) -> None:
    loop = QEventLoop()
    QTimer.singleShot(int(seconds * 1000), loop.quit)
    loop.exec()


def wait_for(check: object, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not check() and time.monotonic() < deadline:  # type: ignore[operator]
        pump(0.05)


def sample_files(folder: Path) -> list[Path]:
    from PIL import Image, ImageDraw

    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, color in (("holiday-beach.png", (40, 140, 200)), ("team-photo.png", (200, 120, 40)),
                        ("logo.png", (90, 160, 70))):
        image = Image.new("RGB", (640, 420), color)
        ImageDraw.Draw(image).ellipse((200, 100, 440, 320), fill=(250, 230, 120))
        path = folder / name
        image.save(path)
        paths.append(path)
    buf = io.BytesIO()
    Image.new("RGB", (64, 64), (10, 10, 10)).save(buf, "JPEG")
    (folder / "scan.jpg").write_bytes(buf.getvalue())
    paths.append(folder / "scan.jpg")
    return paths


def grab(widget: QWidget, path: Path) -> None:
    pump(0.3)
    widget.grab().save(str(path))
    print(path.relative_to(ROOT) if path.is_relative_to(ROOT) else path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "screenshots")
    parser.add_argument("--matrix", action="store_true",
                        help="every page, light and dark, at each of --sizes: <page>-<theme>-<w>x<h>.png")
    parser.add_argument("--sizes", default="1024x700,1440x900", help="window sizes for --matrix (logical pixels)")
    args = parser.parse_args()
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="filekiln-shots-"))
    app = QApplication(sys.argv)
    app.setApplicationName("FileKiln")
    if "Fusion" in QStyleFactory.keys():
        app.setStyle("Fusion")
    app.setWindowIcon(app_icon())
    try:
        settings = load_settings(work / "data", port=find_free_port())
        service = Service.open(settings)
        desktop = Desktop.create(service, icon_for=file_icons())
        shell = Shell(copy=lambda text: None, open_url=lambda url: None, open_path=lambda p: None,
                      reveal=lambda p: None, apply_theme=lambda theme: apply_theme(app, theme),
                      quit_app=QCoreApplication.quit, notify=lambda title, text: None)
        window = MainWindow(desktop, shell)
        window.resize(1280, 800)
        window.show()
        desktop.start(start_api=True)
        wait_for(lambda: desktop.api.running and desktop.workers_started)

        # keys, one of them used by an API job, one revoked
        key, _ = desktop.keys.create("backup script", 500)
        desktop.keys.create("photo sync", None)
        old, _ = desktop.keys.create("old laptop", None)
        desktop.keys.revoke(old.id)
        files = sample_files(work / "Pictures")
        stored = service.files.add(files[1], files[1].name, key_id=key.id, kind="upload", move=False)
        service.jobs.create(Caller(key=key), "image-resize", [stored.id], {"width": 320}, "jpg")

        # a real conversion from the app, then files in the list and a tool chosen
        window.convert.add_paths(files[:1])
        wait_for(lambda: desktop.files.rowCount() == 1)
        window.convert.select_tool("image-convert")
        window.convert.options.set_output_folder(work / "Converted")
        window.convert.options.format_combo.setCurrentIndex(window.convert.options.format_combo.findData("webp"))
        window.convert.convert()
        wait_for(lambda: len(desktop.jobs.rows) >= 2 and all(not r.active and not r.saving for r in desktop.jobs.rows))
        bad = work / "Pictures" / "cut-short.png"
        bad.write_bytes(files[0].read_bytes()[:200])  # recognised as PNG, but unreadable: a failed job
        desktop.files.clear()
        window.convert.add_paths([bad])
        wait_for(lambda: desktop.files.rowCount() == 1)
        window.convert.select_tool("image-convert")
        window.convert.convert()
        wait_for(lambda: any(r.status == "FAILED" for r in desktop.jobs.rows))
        desktop.files.clear()
        window.convert.add_paths(files)
        wait_for(lambda: desktop.files.rowCount() == len(files))
        window.convert.select_tool("image-compress")
        window.jobs_view.table.clearSelection()
        window.convert.show_message("")
        pump(0.6)

        tabs = window.tabs
        if args.matrix:
            shoot_matrix(app, window, out, [tuple(map(int, size.split("x"))) for size in args.sizes.split(",")])
        else:
            tabs.setCurrentIndex(0)
            grab(window, out / "convert.png")

            # a workflow: photos to JPG, then one PDF, built on the convert page
            window.convert.select_tool("image-convert")
            options = window.convert.options
            options.format_combo.setCurrentIndex(options.format_combo.findData("jpg"))
            window.convert.builder.add_step(StepSpec("image-to-pdf", {}, "pdf"))
            pump(0.3)
            grab(window, out / "workflow.png")
            window.convert.builder.clear()

            # a watch folder with a file converted and one that failed
            inbox, outbox = work / "Inbox", work / "Web"
            inbox.mkdir()
            desktop.watch.add(inbox, outbox, "Web images", True, "keep")
            wait_for(lambda: bool(desktop.watch.folders))
            shutil.copy(files[0], inbox / files[0].name)
            (inbox / "broken.png").write_bytes(files[0].read_bytes()[:200])
            wait_for(lambda: (outbox / "failed" / "broken.png.error.txt").exists() and any(outbox.glob("*.webp")))
            tabs.setCurrentWidget(window.watch_panel)
            pump(0.5)
            grab(window, out / "watch.png")

            tabs.setCurrentWidget(window.keys_panel)
            grab(window, out / "keys.png")
            secret_dialog = window.keys_panel.create_key("new script", None)
            grab(secret_dialog, out / "key-secret.png")
            secret_dialog.close()
            failed = next(r for r in desktop.jobs.rows if r.status == "FAILED")
            tabs.setCurrentIndex(0)
            window.jobs_view.select_job(failed.id)
            window.jobs_view.show_details()
            assert window.jobs_view.details_box is not None
            grab(window.jobs_view.details_box, out / "job-details.png")
            window.jobs_view.details_box.close()
            window.jobs_view.table.clearSelection()
            tabs.setCurrentWidget(window.api_panel)
            grab(window, out / "api.png")
            tabs.setCurrentWidget(window.engines_panel)
            wait_for(lambda: bool(window.engines_panel.rows))
            grab(window, out / "engines.png")
            tabs.setCurrentWidget(window.settings_panel)
            grab(window, out / "settings.png")
            apply_theme(app, "dark")
            tabs.setCurrentIndex(0)
            grab(window, out / "convert-dark.png")
        window.quitting = True
        window.close()
        desktop.shutdown()
        service.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)


def shoot_matrix(app: QApplication, window: MainWindow, out: Path, sizes: list[tuple[int, ...]]) -> None:
    """Every page in both themes at each size: what a reviewer looks at before a release."""
    pages = {"convert": window.convert, "watch": window.watch_panel, "keys": window.keys_panel,
             "api": window.api_panel, "engines": window.engines_panel, "settings": window.settings_panel}
    for theme in ("light", "dark"):
        apply_theme(app, theme)
        for width, height in sizes:
            window.resize(width, height)
            for name, page in pages.items():
                if name == "convert":
                    window.tabs.setCurrentIndex(0)
                else:
                    window.tabs.setCurrentWidget(page)
                if name == "engines":
                    wait_for(lambda: bool(window.engines_panel.rows))
                grab(window, out / f"{name}-{theme}-{width}x{height}.png")
    apply_theme(app, "system")


if __name__ == "__main__":
    main()

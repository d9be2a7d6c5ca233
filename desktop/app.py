"""The desktop app: the service, the API on localhost, and the main window.

The window comes first: the workers and the API start right after it is shown, off the
GUI thread, so the app is usable as soon as it appears.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from localapi.config import Settings
from localapi.core.service import Service


def run(settings: Settings, on_ready: Callable[[], None] | None = None, files: Sequence[Path] = ()) -> int:
    """Run the app until it quits, with ``files`` in its file list. When a FileKiln already runs on this
    data dir, ``files`` go to its window instead, and this returns at once. ``on_ready`` is called once
    the window is shown and the event loop runs (the start-up benchmark uses it)."""
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication, QStyleFactory, QSystemTrayIcon

    from desktop.context import Desktop
    from desktop.icons import app_icon, file_icons
    from desktop.main_window import MainWindow
    from desktop.theme import apply_theme
    from desktop.views.shell import Shell, Tray
    from localapi.logs import setup_logging

    existing = QApplication.instance()
    app = existing if isinstance(existing, QApplication) else QApplication(sys.argv)
    app.setApplicationName("FileKiln")
    app.setApplicationDisplayName("FileKiln")
    app.setDesktopFileName("filekiln")
    if sys.platform.startswith("linux") and "Fusion" in QStyleFactory.keys():
        app.setStyle("Fusion")  # consistent and readable in light and dark palettes
    icon = app_icon()
    app.setWindowIcon(icon)
    app.setQuitOnLastWindowClosed(False)  # the window decides: hide to the tray, ask, or quit
    from desktop.single import hand_over, server_name

    if hand_over(server_name(settings.data_dir), files):
        return 0  # the FileKiln already running on this data dir took the files and comes to the front
    setup_logging(settings, to_console=False)
    service = Service.open(settings)
    desktop = Desktop.create(service, icon_for=file_icons())
    apply_theme(app, desktop.prefs.theme)
    shell = Shell.system(app.clipboard(), apply_theme=lambda theme: apply_theme(app, theme))
    window = MainWindow(desktop, shell)
    if QSystemTrayIcon.isSystemTrayAvailable():
        tray = Tray(icon, window, window.request_quit)
        window.tray = tray
        tray.show()
    window.show()
    accept_launches(window, server_name(settings.data_dir))
    if files:
        window.convert.add_paths(list(files))
    QTimer.singleShot(0, desktop.start)
    if on_ready is not None:
        QTimer.singleShot(0, on_ready)
    if os.environ.get("FILEKILN_QUIT_AFTER_START"):  # used by smoke tests of installed builds
        QTimer.singleShot(int(os.environ["FILEKILN_QUIT_AFTER_START"]), app.quit)
    try:
        return int(app.exec())
    finally:
        window.quitting = True
        desktop.shutdown()  # stops the workers last: running jobs go back to the queue for the next start


def accept_launches(window: Any, name: str) -> Any:
    """Take the files of every later launch (``filekiln gui FILE...``, "Open with") into ``window``'s
    file list and bring it to the front; returns the :class:`~desktop.single.SingleInstance`."""
    from desktop.single import SingleInstance

    instance = SingleInstance(name, window)
    if not instance.listen():  # another FileKiln took the name first: this window simply runs on its own
        return instance

    def arrived(paths: list[Path]) -> None:
        if paths:
            window.convert.add_paths(paths)
            window.tabs.setCurrentIndex(0)
        window.showNormal()
        window.raise_()
        window.activateWindow()

    instance.files_received.connect(arrived)
    return instance

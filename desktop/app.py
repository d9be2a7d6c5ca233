"""The desktop app: the service, the API on localhost, and the main window."""

from __future__ import annotations

import os
import sys

from localapi.config import Settings
from localapi.core.service import Service
from localapi.server import ApiServer


def run(settings: Settings) -> int:
    from PySide6.QtWidgets import QApplication

    from desktop.main_window import MainWindow

    app = QApplication.instance() or QApplication(sys.argv)
    app.setApplicationName("FileKiln")
    service = Service.open(settings)
    service.start_workers()
    server = ApiServer(service)
    server.start()
    window = MainWindow(service, server)
    window.show()
    if os.environ.get("FILEKILN_QUIT_AFTER_START"):  # used by smoke tests of installed builds
        from PySide6.QtCore import QTimer

        QTimer.singleShot(int(os.environ["FILEKILN_QUIT_AFTER_START"]), app.quit)
    try:
        return int(app.exec())
    finally:
        server.stop()
        service.close()

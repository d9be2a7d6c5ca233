"""What the windows ask of the desktop environment: clipboard, browser, file manager, dialogs,
notifications, quitting. Passed in, so tests can record instead of opening things."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import QCoreApplication, QUrl
from PySide6.QtGui import QClipboard, QDesktopServices, QIcon
from PySide6.QtWidgets import QMenu, QSystemTrayIcon, QWidget

from desktop.views.jobs_view import open_with_system, reveal_in_folder


def open_url(url: str) -> None:
    QDesktopServices.openUrl(QUrl(url))


# what to do when the window closes while jobs run
STAY, HIDE, QUIT, CANCEL_AND_QUIT = "stay", "hide", "quit", "cancel-and-quit"


@dataclass
class Shell:
    copy: Callable[[str], None]
    open_url: Callable[[str], None]
    open_path: Callable[[Path], None]
    reveal: Callable[[Path], None]
    apply_theme: Callable[[str], None]
    quit_app: Callable[[], None]
    notify: Callable[[str, str], None] | None = None
    # (running jobs, can keep running in the background) -> STAY | HIDE | QUIT | CANCEL_AND_QUIT
    ask_on_close: Callable[[int, bool], str] | None = None
    confirm: Callable[[str, str], bool] | None = None
    choose_files: Callable[[], list[Path]] | None = None
    choose_folder: Callable[[str], str | None] | None = None
    ask_text: Callable[[str, str], str | None] | None = None

    @classmethod
    def system(cls, clipboard: QClipboard, apply_theme: Callable[[str], None]) -> Shell:
        return cls(copy=clipboard.setText, open_url=open_url,
                   open_path=open_with_system, reveal=reveal_in_folder, apply_theme=apply_theme,
                   quit_app=QCoreApplication.quit)


class Tray(QSystemTrayIcon):
    """The tray icon: show the window, see the API's address, quit."""

    def __init__(self, icon: QIcon, window: QWidget, quit_app: Callable[[], None]) -> None:
        super().__init__(icon, window)
        self.setToolTip("FileKiln")
        self.menu = QMenu()
        self.show_action = self.menu.addAction("Show FileKiln")
        self.api_action = self.menu.addAction("API")
        self.api_action.setEnabled(False)
        self.menu.addSeparator()
        self.quit_action = self.menu.addAction("Quit FileKiln")
        self.setContextMenu(self.menu)
        self.show_action.triggered.connect(lambda: self._raise(window))
        self.quit_action.triggered.connect(quit_app)
        self.activated.connect(lambda reason: self._raise(window)
                               if reason == QSystemTrayIcon.ActivationReason.Trigger else None)

    @staticmethod
    def _raise(window: QWidget) -> None:
        window.showNormal()
        window.raise_()
        window.activateWindow()

    def set_api_text(self, text: str) -> None:
        self.api_action.setText(text)
        self.setToolTip(f"FileKiln — {text}")

    def notify(self, title: str, text: str) -> None:
        self.showMessage(title, text, QSystemTrayIcon.MessageIcon.Information, 8000)

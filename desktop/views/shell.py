"""What the windows ask of the desktop environment: clipboard, browser, file manager, dialogs,
notifications, quitting. Passed in, so tests can record instead of opening things."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import QCoreApplication, QUrl
from PySide6.QtGui import QClipboard, QDesktopServices, QIcon
from PySide6.QtWidgets import QApplication, QMenu, QMessageBox, QSystemTrayIcon, QWidget


def warn(text: str, details: str) -> None:
    """Tell the user that something asked of the desktop did not happen (in front of the active window)."""
    QMessageBox.warning(QApplication.activeWindow(), "FileKiln", f"{text}\n\n{details}")


def open_url(url: str) -> None:
    """Open ``url`` in the browser; when none opens it, say so and put the address on the clipboard."""
    if not QDesktopServices.openUrl(QUrl(url)):
        QApplication.clipboard().setText(url)
        warn("No browser opened the page.", f"Open {url} yourself: the address is on the clipboard.")


def reveal_command(path: Path, platform: str = sys.platform) -> list[str] | None:
    """The command that shows ``path`` selected in the file manager; ``None``: open its folder instead."""
    if platform == "win32":
        return ["explorer", f"/select,{path}"]
    if platform == "darwin":
        return ["open", "-R", str(path)]
    return None


def open_with_system(path: Path) -> None:
    """Open a file (or folder) with the program the system has for it, or say why nothing opened."""
    if not path.exists():
        warn(f"{path.name} is no longer there.", f"It was moved or deleted since FileKiln wrote it: {path}")
    elif not QDesktopServices.openUrl(QUrl.fromLocalFile(str(path))):
        warn(f"No program opened {path.name}.",
             "This computer has no program set up for this kind of file; open it from the file manager.")


def reveal_in_folder(path: Path) -> None:
    """Show ``path`` in the file manager (selected, where the system can), or say why not."""
    if not path.exists():
        warn(f"{path.name} is no longer there.", f"It was moved or deleted since FileKiln wrote it: {path}")
        return
    command = reveal_command(path)
    if command is None:
        open_with_system(path.parent)
        return
    try:
        subprocess.Popen(command)  # noqa: S603 - a fixed program and our own path
    except OSError as exc:
        warn("The file manager did not open.", f"{exc}. The file is {path}")


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

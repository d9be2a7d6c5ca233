"""Desktop fixtures: a real service per test (own data dir), the app's models, and a window whose
outside-world actions (clipboard, browser, dialogs, notifications) are recorded instead of done."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from pytestqt.qtbot import QtBot

from desktop.context import Desktop
from desktop.main_window import MainWindow
from desktop.models.tools import ToolInfo, tool_infos
from desktop.views.shell import STAY, Shell
from localapi.config import load_settings
from localapi.core.service import Service
from tests.conftest import free_port, slow_pdf_bytes


@dataclass
class Recorder:
    copied: list[str] = field(default_factory=list)
    urls: list[str] = field(default_factory=list)
    opened: list[Path] = field(default_factory=list)
    revealed: list[Path] = field(default_factory=list)
    notes: list[tuple[str, str]] = field(default_factory=list)
    themes: list[str] = field(default_factory=list)
    quits: int = 0
    close_answer: str = STAY
    close_asked: list[tuple[int, bool]] = field(default_factory=list)
    confirm_answer: bool = True
    confirmed: list[str] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)
    files: list[Path] = field(default_factory=list)

    def quit(self) -> None:
        self.quits += 1

    def ask_on_close(self, running: int, can_hide: bool) -> str:
        self.close_asked.append((running, can_hide))
        return self.close_answer

    def confirm(self, title: str, text: str) -> bool:
        self.confirmed.append(text)
        return self.confirm_answer

    def shell(self) -> Shell:
        return Shell(copy=self.copied.append, open_url=self.urls.append, open_path=self.opened.append,
                     reveal=self.revealed.append, apply_theme=self.themes.append, quit_app=self.quit,
                     notify=lambda title, text: self.notes.append((title, text)), ask_on_close=self.ask_on_close,
                     confirm=self.confirm, choose_files=lambda: list(self.files),
                     choose_folder=lambda start: None, ask_text=lambda title, label: self.texts.pop(0))


@pytest.fixture
def service(tmp_path: Path) -> Iterator[Service]:
    # children start as jobs need them: most of these tests run one job or none (tests/backends.py)
    svc = Service.open(load_settings(tmp_path / "data", port=free_port(), warm_children=False))
    yield svc
    svc.close()


@pytest.fixture
def desktop(service: Service, qapp: object) -> Iterator[Desktop]:
    app_desktop = Desktop.create(service)
    yield app_desktop
    app_desktop.shutdown()


@pytest.fixture
def recorder() -> Recorder:
    return Recorder()


@pytest.fixture
def window(desktop: Desktop, recorder: Recorder, qtbot: QtBot) -> Iterator[MainWindow]:
    main = MainWindow(desktop, recorder.shell())
    qtbot.addWidget(main)
    main.show()
    desktop.start(start_api=False)
    qtbot.waitUntil(lambda: desktop.workers_started, timeout=30_000)
    yield main
    main.quitting = True


@pytest.fixture(scope="session")
def slow_pdf(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An image-heavy 80-page PDF: pdf-compress at level extreme takes several seconds on it even on
    a quiet machine, reporting progress page after page (tests/conftest.py: slow_pdf_bytes)."""
    path = tmp_path_factory.mktemp("slow") / "scan.pdf"
    path.write_bytes(slow_pdf_bytes())
    return path


def wait_for(qtbot: QtBot, check: Callable[[], bool], timeout: float = 60) -> None:
    qtbot.waitUntil(check, timeout=int(timeout * 1000))


@pytest.fixture(scope="module")
def tools(tmp_path_factory: pytest.TempPathFactory) -> dict[str, ToolInfo]:
    """Every tool as the desktop sees it (schema, availability), from a service of its own."""
    service = Service.open(load_settings(tmp_path_factory.mktemp("data")))
    try:
        return {t.id: t for t in tool_infos(service.catalogue, service.switches.tool_status)}
    finally:
        service.close()

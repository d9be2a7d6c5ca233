"""Open result, Show in folder and the API docs say so when nothing opens, instead of doing nothing."""

from __future__ import annotations

from pathlib import Path

import pytest
from pytestqt.qtbot import QtBot

from desktop.context import Desktop
from desktop.main_window import MainWindow
from desktop.views import shell
from tests.conftest import png_bytes
from tests.desktop.conftest import wait_for


@pytest.fixture
def told(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    said: list[tuple[str, str]] = []
    monkeypatch.setattr(shell, "warn", lambda text, details: said.append((text, details)))
    return said


def test_a_result_moved_away_is_said_so_for_open_and_reveal(qapp: object, told: list[tuple[str, str]],
                                                           tmp_path: Path) -> None:
    gone = tmp_path / "report-compressed.pdf"
    shell.open_with_system(gone)
    shell.reveal_in_folder(gone)
    assert len(told) == 2 and all("report-compressed.pdf is no longer there" in text for text, _ in told)
    assert str(gone) in told[0][1]


def test_a_file_no_program_opens_is_said_so(qapp: object, told: list[tuple[str, str]], tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    there = tmp_path / "model.glb"
    there.write_bytes(b"glTF")
    monkeypatch.setattr(shell.QDesktopServices, "openUrl", staticmethod(lambda url: False))
    shell.open_with_system(there)
    assert told and told[0][0] == "No program opened model.glb."


def test_a_browser_that_does_not_open_leaves_the_address_on_the_clipboard(
        qapp: object, told: list[tuple[str, str]], monkeypatch: pytest.MonkeyPatch) -> None:
    from PySide6.QtWidgets import QApplication

    monkeypatch.setattr(shell.QDesktopServices, "openUrl", staticmethod(lambda url: False))
    shell.open_url("http://127.0.0.1:8741/v1/docs")
    assert told and "http://127.0.0.1:8741/v1/docs" in told[0][1]
    assert QApplication.clipboard().text() == "http://127.0.0.1:8741/v1/docs"


def test_empty_jobs_and_keys_tables_say_what_to_do(qtbot: QtBot, window: MainWindow, desktop: Desktop,
                                                   tmp_path: Path) -> None:
    jobs_hint, keys_hint = window.jobs_view.empty_hint, window.keys_panel.empty_hint
    window.tabs.setCurrentWidget(window.keys_panel)
    wait_for(qtbot, keys_hint.isVisible)
    assert "Create key" in keys_hint.text()
    desktop.service.keys.create("script")
    desktop.keys.refresh()
    wait_for(qtbot, lambda: not keys_hint.isVisible())

    window.tabs.setCurrentIndex(0)
    wait_for(qtbot, jobs_hint.isVisible)
    assert "No jobs yet" in jobs_hint.text()
    photo = tmp_path / "hint.png"
    photo.write_bytes(png_bytes())
    desktop.jobs_controller.submit([[photo]], "image-convert", {}, "webp", None, "rename")
    wait_for(qtbot, lambda: not jobs_hint.isVisible())

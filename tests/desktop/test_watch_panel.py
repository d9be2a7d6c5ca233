"""The Watch folders panel: a real service, real engines, real files copied into a real watched folder."""

from __future__ import annotations

import dataclasses
import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from PIL import Image
from pytestqt.qtbot import QtBot

from desktop.context import Desktop
from desktop.main_window import MainWindow
from desktop.views.watch_panel import EMPTY_HINT, WatchPanel, ago
from localapi.config import load_settings
from localapi.core.service import Service
from tests.conftest import free_port, png_bytes
from tests.desktop.conftest import Recorder, wait_for

SETTLE = 0.3  # seconds a file must stay unchanged before it is taken
PRESET = "Web images"  # built in: fit within 2048 px, WebP


@dataclasses.dataclass
class App:
    desktop: Desktop
    window: MainWindow
    recorder: Recorder
    folders: list[Path]  # what the folder chooser answers, first first

    @property
    def panel(self) -> WatchPanel:
        return self.window.watch_panel

    def close(self) -> None:
        self.window.quitting = True
        self.window.close()
        self.desktop.shutdown()


@pytest.fixture
def open_app(tmp_path: Path, qtbot: QtBot, qapp: object) -> Iterator[Callable[[], App]]:
    """Opens the app on one data dir (again after a close: a restart), workers running."""
    settings = load_settings(tmp_path / "data", port=free_port())
    opened: list[App] = []

    def open_one() -> App:
        desktop = Desktop.create(Service.open(settings), watch_settle_seconds=SETTLE)
        recorder = Recorder()
        folders: list[Path] = []
        shell = dataclasses.replace(recorder.shell(), choose_folder=lambda start: str(folders.pop(0)))
        window = MainWindow(desktop, shell)
        qtbot.addWidget(window)
        window.show()
        desktop.start(start_api=False)
        wait_for(qtbot, lambda: desktop.workers_started, timeout=30)
        app = App(desktop, window, recorder, folders)
        opened.append(app)
        return app

    yield open_one
    for app in opened:
        app.close()


@pytest.fixture
def dirs(tmp_path: Path) -> tuple[Path, Path]:
    (tmp_path / "in").mkdir()
    return tmp_path / "in", tmp_path / "out"


def add_through_the_panel(qtbot: QtBot, app: App, in_dir: Path, out_dir: Path) -> str:
    """Add… → choose both folders → Watch this folder; returns the new folder's id once it is listed."""
    panel = app.panel
    app.window.tabs.setCurrentWidget(panel)
    panel.add_button.click()
    assert panel.form.isVisible()
    app.folders.extend([in_dir, out_dir])
    panel.form.in_button.click()
    panel.form.out_button.click()
    panel.form.preset_combo.setCurrentIndex(panel.form.preset_combo.findData(PRESET))
    panel.form.submit_button.click()
    wait_for(qtbot, lambda: len(app.desktop.watch.folders) == 1 and not panel.form.isVisible())
    [folder] = app.desktop.watch.folders
    assert (folder.in_dir, folder.out_dir, folder.preset) == (in_dir.resolve(), out_dir.resolve(), PRESET)
    return folder.id


def drop_png(folder: Path, name: str, size: tuple[int, int] = (120, 80)) -> Path:
    """Write the PNG beside the folder, then move it in whole (as a file manager's copy ends)."""
    staged = folder.parent / f"staged-{name}"
    staged.write_bytes(png_bytes(*size))
    return Path(shutil.move(staged, folder / name))


def stays_absent(path: Path, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if path.exists():
            return False
        time.sleep(0.05)
    return True


def test_relative_times() -> None:
    now = 1_000_000.0
    assert [ago(None, now), ago(now - 3, now), ago(now - 42, now), ago(now - 300, now), ago(now - 7200, now),
            ago(now - 90_000, now), ago(now - 3 * 86_400, now)] == [
        "never", "just now", "42 s ago", "5 min ago", "2 h ago", "yesterday", "3 days ago"]


def test_a_png_copied_into_a_folder_added_in_the_panel_is_converted_and_the_row_says_when(
        qtbot: QtBot, open_app: Callable[[], App], dirs: tuple[Path, Path]) -> None:
    in_dir, out_dir = dirs
    app = open_app()
    panel = app.panel
    app.window.tabs.setCurrentWidget(panel)
    assert panel.hint.isVisible() and panel.hint.text() == EMPTY_HINT and not panel.table.isVisible()
    assert panel.table.accessibleName() == "Watch folders"
    folder_id = add_through_the_panel(qtbot, app, in_dir, out_dir)
    assert panel.table.isVisible() and not panel.hint.isVisible()
    assert [panel.cell(folder_id, c) for c in range(6)] == [
        str(in_dir.resolve()), str(out_dir.resolve()), PRESET, "no", "keep", "active"]
    assert panel.cell(folder_id, panel.ACTIVITY) == "never"

    drop_png(in_dir, "photo.png")
    wait_for(qtbot, lambda: (out_dir / "photo.webp").exists())
    with Image.open(out_dir / "photo.webp") as image:
        assert image.format == "WEBP" and image.size == (120, 80)
    wait_for(qtbot, lambda: panel.cell(folder_id, panel.ACTIVITY) == "just now")
    assert panel.cell(folder_id, panel.ERROR) == ""
    assert "photo.webp" in panel.status.text()
    assert (in_dir / "photo.png").exists()  # after: keep


def test_a_paused_folder_converts_nothing_until_it_is_resumed(
        qtbot: QtBot, open_app: Callable[[], App], dirs: tuple[Path, Path]) -> None:
    in_dir, out_dir = dirs
    app = open_app()
    panel = app.panel
    folder_id = add_through_the_panel(qtbot, app, in_dir, out_dir)
    panel.select(folder_id)
    assert panel.pause_button.text() == "&Pause"
    panel.pause_button.click()
    wait_for(qtbot, lambda: panel.cell(folder_id, 5) == "paused")
    assert panel.pause_button.text() == "&Resume"

    drop_png(in_dir, "later.png")
    assert stays_absent(out_dir / "later.webp", SETTLE + 2.0)

    panel.pause_button.click()
    wait_for(qtbot, lambda: (out_dir / "later.webp").exists())
    assert panel.cell(folder_id, 5) == "active"


def test_a_corrupt_png_shows_its_error_in_the_row_and_a_report_in_failed(
        qtbot: QtBot, open_app: Callable[[], App], dirs: tuple[Path, Path]) -> None:
    in_dir, out_dir = dirs
    app = open_app()
    panel = app.panel
    folder_id = add_through_the_panel(qtbot, app, in_dir, out_dir)
    staged = in_dir.parent / "broken.png"
    staged.write_bytes(png_bytes(200, 150)[:90])  # a PNG by its header, cut short
    shutil.move(staged, in_dir / "broken.png")
    report = out_dir / "failed" / "broken.png.error.txt"
    wait_for(qtbot, lambda: panel.cell(folder_id, panel.ERROR) != "")
    error = panel.cell(folder_id, panel.ERROR)
    assert report.exists() and error in report.read_text()
    assert panel.cell(folder_id, panel.ACTIVITY) == "just now"
    assert "broken.png could not be converted" in panel.status.text() and str(report) in panel.status.text()
    assert (in_dir / "broken.png").exists()
    assert app.desktop.service.db.one("select last_error from watch_folders")["last_error"] == error


def test_a_refused_folder_is_told_and_nothing_is_stored(
        qtbot: QtBot, open_app: Callable[[], App], dirs: tuple[Path, Path]) -> None:
    in_dir, _ = dirs
    app = open_app()
    panel = app.panel
    app.window.tabs.setCurrentWidget(panel)
    panel.add_button.click()
    app.folders.extend([in_dir, in_dir])  # the output folder must not be the watched one
    panel.form.in_button.click()
    panel.form.out_button.click()
    panel.form.submit_button.click()
    wait_for(qtbot, lambda: "must not be the watched folder" in panel.form.problem.text())
    assert panel.form.isVisible() and panel.form.submit_button.isEnabled()
    assert app.window.error_box.text() == panel.form.problem.text()  # shown like other action failures
    assert app.desktop.watch.folders == [] and app.desktop.watch.watch.list() == []


def test_remove_asks_first_and_then_forgets_the_folder(
        qtbot: QtBot, open_app: Callable[[], App], dirs: tuple[Path, Path]) -> None:
    in_dir, out_dir = dirs
    app = open_app()
    panel = app.panel
    folder_id = add_through_the_panel(qtbot, app, in_dir, out_dir)
    panel.select(folder_id)
    app.recorder.confirm_answer = False
    panel.remove_button.click()
    assert len(app.recorder.confirmed) == 1 and str(in_dir.resolve()) in app.recorder.confirmed[0]
    assert app.desktop.watch.wait() and len(app.desktop.watch.folders) == 1
    app.recorder.confirm_answer = True
    panel.remove_button.click()
    wait_for(qtbot, lambda: app.desktop.watch.folders == [] and panel.hint.isVisible())
    assert app.desktop.watch.watch.running == {}


def test_a_stored_folder_is_listed_and_running_after_a_restart(
        qtbot: QtBot, open_app: Callable[[], App], dirs: tuple[Path, Path]) -> None:
    in_dir, out_dir = dirs
    first = open_app()
    folder_id = add_through_the_panel(qtbot, first, in_dir, out_dir)
    first.close()

    second = open_app()
    panel = second.panel
    wait_for(qtbot, lambda: panel.cell(folder_id, 0) == str(in_dir.resolve()))
    assert panel.cell(folder_id, 5) == "active"
    wait_for(qtbot, lambda: folder_id in second.desktop.watch.watch.running)
    drop_png(in_dir, "after-restart.png")
    wait_for(qtbot, lambda: (out_dir / "after-restart.webp").exists())
    wait_for(qtbot, lambda: panel.cell(folder_id, panel.ACTIVITY) == "just now")

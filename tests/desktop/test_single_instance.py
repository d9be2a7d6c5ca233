"""One window per data dir: a second launch hands its files over and exits."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

from PySide6.QtCore import QDir
from pytestqt.qtbot import QtBot

from desktop.app import accept_launches
from desktop.context import Desktop
from desktop.main_window import MainWindow
from desktop.single import SingleInstance, hand_over, server_name
from tests.conftest import ROOT, png_bytes
from tests.desktop.conftest import wait_for


def test_a_second_launch_gives_its_files_to_the_running_window(qtbot: QtBot, window: MainWindow,
                                                               desktop: Desktop, tmp_path: Path) -> None:
    data_dir = desktop.service.settings.data_dir
    instance = accept_launches(window, server_name(data_dir))
    try:
        photo = tmp_path / "handed.png"
        photo.write_bytes(png_bytes())
        env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "PYTHONPATH": str(ROOT)}
        second = subprocess.Popen([sys.executable, "-m", "filekiln", "--data-dir", str(data_dir), "gui", str(photo)],
                                  env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        # the window's event loop must run to answer the second launch: wait here, not in communicate()
        wait_for(qtbot, lambda: second.poll() is not None, timeout=60)
        assert second.returncode == 0, second.stderr.read() if second.stderr else b""
        wait_for(qtbot, lambda: any(e.path == photo for e in desktop.files.entries), timeout=30)
        assert not (data_dir / "logs" / "filekiln.log").is_file() or "Traceback" not in (
            data_dir / "logs" / "filekiln.log").read_text(errors="replace")
    finally:
        instance.close()


def test_nobody_answering_means_this_launch_starts(qapp: object, tmp_path: Path) -> None:
    assert not hand_over(server_name(tmp_path / "nobody-runs-here"), [tmp_path / "a.png"])


def test_a_socket_left_by_a_crash_is_taken_over(qtbot: QtBot, tmp_path: Path) -> None:
    name = server_name(tmp_path / "crashed")
    stale = Path(QDir.tempPath()) / name
    stale.write_bytes(b"")  # what a killed FileKiln leaves: a socket file nobody listens on
    instance = SingleInstance(name)
    try:
        assert instance.listen()
        got: list[list[Path]] = []
        instance.files_received.connect(got.append)
        sent = Path(tempfile.gettempdir())  # an existing path; missing ones are dropped
        assert hand_over(name, [sent, tmp_path / "missing.png"])
        wait_for(qtbot, lambda: bool(got), timeout=10)
        assert got == [[sent]]
    finally:
        instance.close()
        stale.unlink(missing_ok=True)


def test_the_linux_desktop_entry_opens_every_accepted_type_in_the_running_window(tmp_path: Path) -> None:
    """build.py fills MimeType= from the catalogue; Exec= passes the files to `filekiln gui`."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("fk_build", ROOT / "packaging" / "build.py")
    assert spec is not None and spec.loader is not None
    build = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(build)
    app = tmp_path / "filekiln"
    app.mkdir()
    build.make_appdir(app)
    entry = (app / "filekiln.desktop").read_text()
    assert "Exec=filekiln gui %F" in entry and "@" not in entry
    types = next(line for line in entry.splitlines() if line.startswith("MimeType=")).removeprefix("MimeType=")
    assert {"application/pdf", "image/png", "audio/mpeg", "video/mp4"} <= set(types.split(";"))
    assert "Name=Convert with FileKiln" in entry

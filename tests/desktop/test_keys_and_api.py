"""The Keys and API panels against the real API, served by the app on a free port."""

from __future__ import annotations

import shutil
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDialogButtonBox
from pytestqt.qtbot import QtBot

from desktop.context import Desktop
from desktop.main_window import MainWindow
from desktop.views.api_panel import curl_example
from tests.conftest import Server, assert_problem, png_bytes
from tests.desktop.conftest import Recorder, wait_for


@pytest.fixture
def api(qtbot: QtBot, window: MainWindow, desktop: Desktop) -> Iterator[httpx.Client]:
    desktop.api.start()
    wait_for(qtbot, lambda: desktop.api.state in ("running", "error"), timeout=30)
    assert desktop.api.running, desktop.api.error
    with httpx.Client(base_url=desktop.api.base_url, timeout=30) as client:
        yield client


def create_key_through_the_dialog(qtbot: QtBot, window: MainWindow, name: str, quota: int | None) -> str:
    panel = window.keys_panel
    window.tabs.setCurrentWidget(panel)
    qtbot.mouseClick(panel.create_button, Qt.MouseButton.LeftButton)
    dialog = panel.create_dialog
    assert dialog is not None and dialog.isVisible()
    ok = dialog.buttons.button(QDialogButtonBox.StandardButton.Ok)
    assert not ok.isEnabled()  # a key needs a name
    qtbot.keyClicks(dialog.name_edit, name)
    if quota is not None:
        dialog.limit_box.setChecked(True)
        dialog.quota_spin.setValue(quota)
    qtbot.mouseClick(ok, Qt.MouseButton.LeftButton)
    secret_dialog = panel.secret_dialog
    assert secret_dialog is not None and secret_dialog.isVisible()
    return secret_dialog.secret_edit.text()


def test_a_new_key_is_shown_once_and_works_against_the_running_api(qtbot: QtBot, window: MainWindow,
                                                                   desktop: Desktop, recorder: Recorder,
                                                                   api: httpx.Client) -> None:
    secret = create_key_through_the_dialog(qtbot, window, "nightly backup", 3)
    panel = window.keys_panel
    dialog = panel.secret_dialog
    assert dialog is not None and secret.startswith("fk_")
    qtbot.mouseClick(dialog.copy_button, Qt.MouseButton.LeftButton)
    assert recorder.copied == [secret]
    usage = api.get("/usage", headers={"X-API-Key": secret})
    assert usage.status_code == 200 and usage.json()["name"] == "nightly backup"
    assert usage.json()["dailyJobQuota"] == 3

    dialog.close()
    assert panel.secret_dialog is None and dialog.secret_edit.text() == ""  # shown once, then forgotten
    model = desktop.keys
    cells = [str(model.index(r, c).data()) for r in range(model.rowCount()) for c in range(model.columnCount())]
    assert not any(secret in cell for cell in cells)
    assert model.index(0, 0).data() == "nightly backup" and model.index(0, 4).data() == "0 of 3"
    assert model.index(0, 1).data() == secret[:10] + "…"


def test_a_revoked_key_gets_401_at_once(qtbot: QtBot, window: MainWindow, desktop: Desktop, recorder: Recorder,
                                        api: httpx.Client) -> None:
    secret = create_key_through_the_dialog(qtbot, window, "laptop", None)
    window.keys_panel.secret_dialog.close()  # type: ignore[union-attr]
    headers = {"X-API-Key": secret}
    assert api.get("/usage", headers=headers).status_code == 200
    panel = window.keys_panel
    panel.table.selectRow(0)
    recorder.confirm_answer = False
    qtbot.mouseClick(panel.revoke_button, Qt.MouseButton.LeftButton)
    assert "laptop" in recorder.confirmed[0] and api.get("/usage", headers=headers).status_code == 200
    recorder.confirm_answer = True
    qtbot.mouseClick(panel.revoke_button, Qt.MouseButton.LeftButton)
    assert_problem(api.get("/usage", headers=headers), 401, "invalid_api_key")
    assert desktop.keys.index(0, 5).data().startswith("revoked") and not panel.revoke_button.isEnabled()


def test_maintenance_mode_gives_503_for_new_jobs(qtbot: QtBot, window: MainWindow, desktop: Desktop,
                                                 api: httpx.Client) -> None:
    key, secret = desktop.keys.create("script", None)
    api.headers["X-API-Key"] = secret
    upload = api.post("/files", files={"file": ("a.png", png_bytes())})
    assert upload.status_code == 201, upload.text
    body = {"tool": "image-convert", "inputFileIds": [upload.json()["id"]], "outputFormat": "jpg"}
    panel = window.api_panel
    window.tabs.setCurrentWidget(panel)
    assert desktop.api.base_url in panel.status_label.text()
    panel.maintenance_box.click()
    assert desktop.service.switches.maintenance and "Maintenance" in panel.status_label.text()
    assert_problem(api.post("/jobs", json=body), 503, "maintenance")
    panel.maintenance_box.click()
    created = api.post("/jobs", json=body)
    assert created.status_code == 201, created.text
    # the API client's job shows up in the app, live
    wait_for(qtbot, lambda: any(r.id == created.json()["id"] for r in desktop.jobs.rows))
    row = desktop.jobs.job(created.json()["id"])
    assert row is not None and row.source == "API: script" and not row.from_app


def test_the_api_panel_copies_the_url_and_opens_the_docs(qtbot: QtBot, window: MainWindow, desktop: Desktop,
                                                         recorder: Recorder, api: httpx.Client) -> None:
    panel = window.api_panel
    qtbot.mouseClick(panel.copy_button, Qt.MouseButton.LeftButton)
    qtbot.mouseClick(panel.docs_button, Qt.MouseButton.LeftButton)
    assert recorder.copied == [desktop.api.base_url] and recorder.urls == [desktop.api.base_url + "/docs"]
    assert api.get("/docs").status_code == 200
    assert f"BASE={desktop.api.base_url}" in panel.curl_text.toPlainText()
    qtbot.mouseClick(panel.stop_button, Qt.MouseButton.LeftButton)
    wait_for(qtbot, lambda: desktop.api.state == "stopped")
    with pytest.raises(httpx.HTTPError):
        api.get("/health")
    assert panel.start_button.isEnabled() and "Stopped" in panel.status_label.text()


def test_a_port_in_use_is_explained_and_another_can_be_chosen(qtbot: QtBot, window: MainWindow,
                                                              desktop: Desktop) -> None:
    with socket.socket() as blocker:
        blocker.bind(("127.0.0.1", desktop.api.port))
        blocker.listen()
        desktop.api.start()
        wait_for(qtbot, lambda: desktop.api.state == "error", timeout=30)
        panel = window.api_panel
        assert "in use" in panel.status_label.text()
        qtbot.mouseClick(panel.free_port_button, Qt.MouseButton.LeftButton)
        assert panel.port_spin.value() != desktop.api.port
        qtbot.mouseClick(panel.apply_port_button, Qt.MouseButton.LeftButton)
        wait_for(qtbot, lambda: desktop.api.state == "running", timeout=30)
        assert httpx.get(f"{desktop.api.base_url}/health", timeout=10).status_code == 200
    assert desktop.settings_file.read()["port"] == desktop.api.port  # remembered for the next start


def test_curl_example_uses_the_base_url_and_a_placeholder() -> None:
    text = curl_example("http://127.0.0.1:9999/v1")
    assert "BASE=http://127.0.0.1:9999/v1" in text and "YOUR_API_KEY" in text


@pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed")
def test_the_curl_example_works_as_pasted_with_a_real_key(server: Server, tmp_path: Path) -> None:
    """Pasted with a key in place of the placeholder, it waits for the job and downloads the result."""
    script = curl_example(server.base_url).replace("YOUR_API_KEY", server.create_key("pasted"))
    (tmp_path / "photo.png").write_bytes(png_bytes(320, 200))
    result = subprocess.run(["bash", "-eu", "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "DONE"
    assert (tmp_path / "photo.webp").read_bytes()[8:12] == b"WEBP"

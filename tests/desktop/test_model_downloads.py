"""The Engines panel's model downloads against a real HTTP server on loopback."""

from __future__ import annotations

import hashlib
import http.server
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from pytestqt.qtbot import QtBot

import converters.engines.modelfiles as registry
from converters.engines.modelfiles import ModelEntry, ModelFile
from desktop.views.models_box import ModelsBox
from localapi.config import load_settings
from localapi.core.service import Service

PAYLOAD = bytes(range(256)) * 4096  # 1 MiB


class _Handler(http.server.BaseHTTPRequestHandler):
    delay = 0.0

    def do_GET(self) -> None:  # noqa: N802
        start = int(self.headers.get("Range", "bytes=0-")[6:].split("-")[0] or 0)
        body = PAYLOAD[start:]
        self.send_response(206 if start else 200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        for i in range(0, len(body), 16384):
            self.wfile.write(body[i:i + 16384])
            time.sleep(self.delay)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def model_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[type[_Handler]]:
    handler = type("Handler", (_Handler,), {})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/tiny.onnx"
    entry = ModelEntry("test-model", "background", "A test model (1 MiB)",
                       (ModelFile(url, "background/test-model.onnx",
                                  "sha256:" + hashlib.sha256(PAYLOAD).hexdigest(), len(PAYLOAD)),))
    monkeypatch.setattr(registry, "REGISTRY", {"test-model": entry})
    yield handler
    server.shutdown()


@pytest.fixture
def service(tmp_path: Path) -> Iterator[Service]:
    s = Service.open(load_settings(tmp_path / "data"))
    yield s
    s.close()


def test_download_shows_progress_and_installs_the_checked_file(qtbot: QtBot, model_server: type[_Handler],
                                                               service: Service) -> None:
    box = ModelsBox(service.models, service.download_model)
    qtbot.addWidget(box)
    assert box.table.item(0, 2).text() == "not downloaded"
    box.download_button.click()
    qtbot.waitUntil(lambda: box.download_button.isEnabled(), timeout=20_000)
    assert box.progress.value() == 100 and "verified" in box.status.text()
    assert box.table.item(0, 2).text() == "installed"
    assert (service.settings.data_dir / "models" / "background" / "test-model.onnx").read_bytes() == PAYLOAD


def test_cancel_stops_the_download_and_a_second_try_resumes(qtbot: QtBot, model_server: type[_Handler],
                                                            service: Service) -> None:
    model_server.delay = 0.05
    box = ModelsBox(service.models, service.download_model)
    qtbot.addWidget(box)
    box.download_button.click()
    qtbot.waitUntil(lambda: box.progress.value() > 5, timeout=20_000)
    box.cancel_button.click()
    qtbot.waitUntil(lambda: box.download_button.isEnabled(), timeout=10_000)
    assert "canceled" in box.status.text()
    target = service.settings.data_dir / "models" / "background" / "test-model.onnx"
    assert not target.exists()
    model_server.delay = 0.0
    box.download_button.click()
    qtbot.waitUntil(lambda: box.download_button.isEnabled(), timeout=20_000)
    assert target.read_bytes() == PAYLOAD

"""The API panel: is the API up (or why not), start/stop, address, docs, a curl example, maintenance."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtGui import QFontDatabase
from PySide6.QtWidgets import (
    QCheckBox,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from desktop.controllers.api import ApiController, find_free_port

Copy = Callable[[str], None]
OpenUrl = Callable[[str], None]


def curl_example(base_url: str, key_placeholder: str = "YOUR_API_KEY") -> str:
    """A ready-to-paste shell session that works as written (with a real key and a photo.png): upload,
    create the job and wait for it to end, download the result. Only curl, grep and cut: no jq."""
    return (
        f'KEY={key_placeholder}\n'
        f'BASE={base_url}\n'
        '# field NAME: the value of the first "NAME":"..." in a JSON answer\n'
        'field() { grep -o "\\"$1\\":\\"[^\\"]*\\"" | head -n 1 | cut -d\'"\' -f4; }\n'
        '# 1. upload a file\n'
        'FILE=$(curl -sf -H "X-API-Key: $KEY" -F "file=@photo.png" "$BASE/files" | field id)\n'
        '# 2. create a job; the answer comes when it has ended (or after 60 s)\n'
        'JOB=$(curl -sf -H "X-API-Key: $KEY" -H "Content-Type: application/json" \\\n'
        '  -d "{\\"tool\\": \\"image-convert\\", \\"inputFileIds\\": [\\"$FILE\\"],'
        ' \\"outputFormat\\": \\"webp\\"}" \\\n'
        '  "$BASE/jobs?wait=60" | field id)\n'
        '# 3. wait until it has ended (60 s at a time), then download the result\n'
        'while STATUS=$(curl -sf -H "X-API-Key: $KEY" "$BASE/jobs/$JOB?wait=60" | field status);'
        ' [ "$STATUS" = QUEUED ] || [ "$STATUS" = PROCESSING ]; do :; done\n'
        'echo "$STATUS"\n'
        '[ "$STATUS" = DONE ] && curl -sf -H "X-API-Key: $KEY" "$BASE/jobs/$JOB/result" | field downloadUrl'
        ' | xargs curl -sfOJ\n'
    )


class ApiPanel(QWidget):
    def __init__(self, api: ApiController, copy: Copy, open_url: OpenUrl,
                 persist: Callable[[dict[str, Any]], None] | None = None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.api = api
        self._persist = persist
        self._copy = copy
        self._open_url = open_url
        self.status_label = QLabel()
        self.status_label.setWordWrap(True)
        self.status_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.status_label.setAccessibleName("API status")
        self.start_button = QPushButton("&Start")
        self.stop_button = QPushButton("S&top")
        self.copy_button = QPushButton("&Copy base URL")
        self.docs_button = QPushButton("Open interactive &docs")
        row = QHBoxLayout()
        for b in (self.start_button, self.stop_button, self.copy_button, self.docs_button):
            row.addWidget(b)
        row.addStretch(1)

        self.port_spin = QSpinBox()
        self.port_spin.setRange(1024, 65535)
        self.port_spin.setAccessibleName("Port")
        self.free_port_button = QPushButton("Find a free port")
        self.apply_port_button = QPushButton("Use this port")
        port_row = QHBoxLayout()
        port_row.addWidget(self.port_spin)
        port_row.addWidget(self.apply_port_button)
        port_row.addWidget(self.free_port_button)
        port_row.addStretch(1)
        address_box = QGroupBox("Address")
        address = QFormLayout(address_box)
        self.host_label = QLabel()
        address.addRow("Listening on", self.host_label)
        port_label = QLabel("&Port")
        port_label.setBuddy(self.port_spin)
        address.addRow(port_label, port_row)

        self.maintenance_box = QCheckBox("&Maintenance mode: refuse new jobs (503) until switched off")
        self.curl_text = QPlainTextEdit()
        self.curl_text.setReadOnly(True)
        self.curl_text.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self.curl_text.setAccessibleName("curl example")
        self.copy_curl_button = QPushButton("Copy example")
        curl_box = QGroupBox("Try it (put a key from the Keys panel in place of YOUR_API_KEY)")
        curl_layout = QVBoxLayout(curl_box)
        curl_layout.addWidget(self.curl_text)
        curl_layout.addWidget(self.copy_curl_button, 0, Qt.AlignmentFlag.AlignLeft)

        layout = QVBoxLayout(self)
        layout.addWidget(self.status_label)
        layout.addLayout(row)
        layout.addWidget(address_box)
        layout.addWidget(self.maintenance_box)
        layout.addWidget(curl_box, 1)

        self.start_button.clicked.connect(api.start)
        self.stop_button.clicked.connect(lambda: api.stop())
        self.copy_button.clicked.connect(lambda: self._copy(api.base_url))
        self.docs_button.clicked.connect(lambda: self._open_url(api.docs_url))
        self.copy_curl_button.clicked.connect(lambda: self._copy(self.curl_text.toPlainText()))
        self.free_port_button.clicked.connect(lambda: self.port_spin.setValue(find_free_port(api.host)))
        self.apply_port_button.clicked.connect(self.use_port)
        self.maintenance_box.toggled.connect(self._maintenance_toggled)
        api.changed.connect(self.refresh)
        self.refresh()

    def use_port(self) -> None:
        port = self.port_spin.value()
        self.api.set_address(port=port)
        if self._persist is not None:
            self._persist({"port": port})
        if self.api.state in ("stopped", "error"):
            self.api.start()

    def _maintenance_toggled(self, on: bool) -> None:
        if on != self.api.maintenance:
            self.api.set_maintenance(on)

    def refresh(self) -> None:
        api = self.api
        state = api.state
        if state == "running":
            text = f"<b>Running</b> at <code>{api.base_url}</code>"
        elif state == "starting":
            text = "Starting…"
        elif state == "stopping":
            text = "Stopping…"
        elif state == "error":
            text = f"<b>Not running.</b> {api.error or ''} Choose another port below and press Use this port."
        else:
            text = "<b>Stopped.</b> Scripts cannot reach FileKiln until you start the API."
        if api.maintenance:
            text += "<br>Maintenance mode is on: new jobs are refused with 503."
        self.status_label.setText(text)
        self.start_button.setEnabled(state in ("stopped", "error"))
        self.stop_button.setEnabled(state == "running")
        self.docs_button.setEnabled(state == "running")
        self.host_label.setText(api.host + ("" if api.service.settings.loopback_only else
                                            "  (reachable from other computers; keys required everywhere)"))
        if not self.port_spin.hasFocus():
            self.port_spin.setValue(api.port)
        self.maintenance_box.blockSignals(True)
        self.maintenance_box.setChecked(api.maintenance)
        self.maintenance_box.blockSignals(False)
        self.curl_text.setPlainText(curl_example(api.base_url))

"""Model downloads in the Engines panel: progress, checksum (done by the service), cancel, resume."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QGroupBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QProgressBar,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

Download = Callable[[str, Callable[[float], None], Callable[[], bool]], None]


class _Relay(QObject):
    """Lives on the GUI thread; the download thread emits, Qt queues the calls over."""

    progress = Signal(float)
    finished = Signal(str)  # "" when done, else the error text ("canceled" on cancel)


def _size(size: int | None) -> str:
    return f"{size / 1e6:.1f} MB" if size else "—"


class ModelsBox(QGroupBox):
    COLUMNS = ("Model", "Size", "Status")

    def __init__(self, list_models: Callable[[], list[dict[str, Any]]], download: Download,
                 parent: QWidget | None = None) -> None:
        super().__init__("Models", parent)
        self._list = list_models
        self._download = download
        self._cancel = threading.Event()
        self._thread: threading.Thread | None = None
        self._relay = _Relay(self)
        self._relay.progress.connect(self._on_progress)
        self._relay.finished.connect(self._on_finished)
        self.table = QTableWidget(0, len(self.COLUMNS))
        self.table.setHorizontalHeaderLabels(list(self.COLUMNS))
        self.table.setAccessibleName("Models")
        self.table.verticalHeader().hide()
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.horizontalHeader().setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        self.download_button = QPushButton("&Download")
        self.cancel_button = QPushButton("Cancel download")
        self.cancel_button.setEnabled(False)
        self.progress = QProgressBar()
        self.progress.setRange(0, 100)
        self.status = QLabel("Models are checked against their published checksums; an interrupted download "
                             "resumes where it stopped. Or copy files into the data folder's models/.")
        self.status.setWordWrap(True)
        self.download_button.clicked.connect(self.start_download)
        self.cancel_button.clicked.connect(self._cancel.set)
        buttons = QHBoxLayout()
        buttons.addWidget(self.download_button)
        buttons.addWidget(self.cancel_button)
        buttons.addWidget(self.progress, 1)
        layout = QVBoxLayout(self)
        layout.addWidget(self.table)
        layout.addLayout(buttons)
        layout.addWidget(self.status)
        self.refresh()

    def refresh(self) -> None:
        self.models = self._list()
        self.table.setRowCount(len(self.models))
        for row, model in enumerate(self.models):
            state = "installed" if model["installed"] else "not downloaded"
            for column, text in enumerate((model["title"], _size(model["sizeBytes"]), state)):
                self.table.setItem(row, column, QTableWidgetItem(text))
        if self.models and not self.table.selectedItems():
            self.table.selectRow(0)

    def selected(self) -> str | None:
        rows = self.table.selectionModel().selectedRows()
        return str(self.models[rows[0].row()]["name"]) if rows else None

    def start_download(self) -> None:
        name = self.selected()
        if name is None or self._thread is not None:
            return
        self._cancel.clear()
        self.download_button.setEnabled(False)
        self.cancel_button.setEnabled(True)
        self.progress.setValue(0)
        self.status.setText(f"Downloading {name}…")
        relay = self._relay

        def work() -> None:
            try:
                self._download(name, relay.progress.emit, self._cancel.is_set)
            except Exception as exc:  # Cancelled, checksum_mismatch, network errors: all reported in words
                relay.finished.emit("canceled" if type(exc).__name__ == "Cancelled" else str(exc) or repr(exc))
                return
            relay.finished.emit("")

        self._thread = threading.Thread(target=work, daemon=True, name=f"download-{name}")
        self._thread.start()

    def _on_progress(self, fraction: float) -> None:
        self.progress.setValue(int(fraction * 100))

    def _on_finished(self, error: str) -> None:
        self._thread = None
        self.download_button.setEnabled(True)
        self.cancel_button.setEnabled(False)
        if not error:
            self.progress.setValue(100)
            self.status.setText("Downloaded and verified.")
        elif error == "canceled":
            self.status.setText("Download canceled; downloading again resumes where it stopped.")
        else:
            self.status.setText(f"The download failed: {error}")
        self.refresh()

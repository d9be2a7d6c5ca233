"""Model downloads in the Engines panel: progress, checksum (done by the service), cancel, resume."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

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

from desktop.threads import Background, Progress

# (model name, progress(fraction), cancelled()) -> None; raises when the download fails or is cancelled
Download = Callable[[str, Progress, Callable[[], bool]], None]


def _size(size: int | None) -> str:
    return f"{size / 1e6:.1f} MB" if size else "—"


class ModelsBox(QGroupBox):
    COLUMNS = ("Model", "Size", "Status")

    def __init__(self, list_models: Callable[[], list[dict[str, Any]]], download: Download,
                 parent: QWidget | None = None) -> None:
        super().__init__("Models", parent)
        self._list = list_models
        self._download = download
        self._cancel = threading.Event()  # read by the download's thread between chunks
        self._downloading = False
        self._background = Background(1, self)
        self.table = QTableWidget(0, len(self.COLUMNS))
        self.table.setHorizontalHeaderLabels(list(self.COLUMNS))
        self.table.setTabKeyNavigation(False)  # Tab leaves the table; the arrows move in it
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
        self.cancel_button.clicked.connect(self.cancel_download)
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
        if name is None or self._downloading:
            return
        self._downloading = True
        self._cancel.clear()
        self.download_button.setEnabled(False)
        self.cancel_button.setEnabled(True)
        self.progress.setValue(0)
        self.status.setText(f"Downloading {name}…")
        self._background.run_reporting(lambda progress: self._download(name, progress, self._cancel.is_set),
                                       self._on_progress, lambda _: self._on_finished(""), self._on_failed)

    def cancel_download(self) -> None:
        """Stop a running download at its next chunk (the partial file is kept, to resume from)."""
        self._cancel.set()

    def _on_progress(self, fraction: float) -> None:
        self.progress.setValue(int(fraction * 100))

    def _on_failed(self, exc: BaseException) -> None:
        # Cancelled, checksum_mismatch, network errors: all reported in words
        self._on_finished("canceled" if type(exc).__name__ == "Cancelled" else str(exc) or repr(exc))

    def _on_finished(self, error: str) -> None:
        """``error``: "" when the model is in place, "canceled", or what went wrong."""
        self._downloading = False
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

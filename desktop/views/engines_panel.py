"""The Engines panel: each engine and model set, its version, and whether it is there."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtWidgets import (
    QAbstractItemView,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from desktop.engines import EngineRow
from desktop.threads import Background

MODEL_FOLDERS = ("Model files you already have go in the data folder's models/ folder: tessdata/ for OCR "
                 "languages, whisper/ for transcription, background/ for background removal, llm/ for GGUF "
                 "language models (or use 'filekiln models import').")


class EnginesPanel(QWidget):
    """``gather`` reads engine states (it imports nothing heavy, but runs off the GUI thread anyway)."""

    COLUMNS = ("Engine", "Version", "Status", "Used for", "Where / how")

    def __init__(self, gather: Callable[[], list[EngineRow]], background: Background,
                 parent: QWidget | None = None, models: QWidget | None = None) -> None:
        super().__init__(parent)
        self._gather = gather
        self._background = background
        self.rows: list[EngineRow] = []
        self.table = QTableWidget(0, len(self.COLUMNS))
        self.table.setHorizontalHeaderLabels(list(self.COLUMNS))
        self.table.setTabKeyNavigation(False)  # Tab leaves the table; the arrows move in it
        self.table.setAccessibleName("Engines")
        self.table.verticalHeader().hide()
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(3, QHeaderView.ResizeMode.Interactive)
        header.setStretchLastSection(True)
        self.table.setWordWrap(True)
        self.refresh_button = QPushButton("&Refresh")
        self.refresh_button.clicked.connect(self.refresh)
        self.status = QLabel()
        self.models = models
        note = QLabel(MODEL_FOLDERS)
        note.setWordWrap(True)
        top = QHBoxLayout()
        top.addWidget(self.refresh_button)
        top.addWidget(self.status, 1)
        layout = QVBoxLayout(self)
        layout.addLayout(top)
        layout.addWidget(self.table, 1)
        if models is not None:
            layout.addWidget(models)
        layout.addWidget(note)
        self._loaded = False

    def showEvent(self, event: object) -> None:  # noqa: N802
        if not self._loaded:
            self.refresh()
        super().showEvent(event)  # type: ignore[arg-type]

    def refresh(self) -> None:
        self._loaded = True
        self.status.setText("Checking…")
        self.refresh_button.setEnabled(False)
        self._background.run(self._gather, self.show_rows, self._failed)

    def _failed(self, exc: BaseException) -> None:
        self.refresh_button.setEnabled(True)
        self.status.setText(f"Could not read the engines: {exc}")

    def show_rows(self, rows: list[EngineRow]) -> None:
        self.rows = rows
        self.refresh_button.setEnabled(True)
        ready = sum(1 for r in rows if r.available)
        self.status.setText(f"{ready} of {len(rows)} ready")
        self.table.setRowCount(len(rows))
        for i, row in enumerate(rows):
            mark = "✔ " if row.available else "✘ "
            for j, text in enumerate((row.name, row.version, mark + row.status, row.used_by, row.note)):
                item = QTableWidgetItem(text)
                item.setToolTip(text)
                self.table.setItem(i, j, item)
        self.table.setColumnWidth(3, 360)

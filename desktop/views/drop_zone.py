"""Where files come in: a drop zone with "Add files" / "Add folder" buttons, and a file list that takes drops too."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QDragEnterEvent, QDragMoveEvent, QDropEvent, QKeyEvent
from PySide6.QtWidgets import (
    QAbstractItemView,
    QFrame,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QTreeView,
    QVBoxLayout,
    QWidget,
)


class UrlLike(Protocol):
    def isLocalFile(self) -> bool: ...  # noqa: N802 - Qt's name

    def toLocalFile(self) -> str: ...  # noqa: N802 - Qt's name


class MimeLike(Protocol):
    def hasUrls(self) -> bool: ...  # noqa: N802 - Qt's name

    def urls(self) -> Sequence[UrlLike]: ...


def paths_from_mime_data(mime: MimeLike) -> list[Path]:
    """Local files and folders named by a drop (``QMimeData`` with URLs); remote URLs are ignored."""
    if not mime.hasUrls():
        return []
    paths: list[Path] = []
    for url in mime.urls():
        if url.isLocalFile() and url.toLocalFile():
            paths.append(Path(url.toLocalFile()))
    return paths


WAITING = "Drop files or folders here to start"


class DropZone(QFrame):
    """Accepts local files and folders dropped on it; says what it got through ``paths_dropped``."""

    paths_dropped = Signal(list)  # list[Path]
    add_files_clicked = Signal()
    add_folder_clicked = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setAcceptDrops(True)
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.setFrameShadow(QFrame.Shadow.Sunken)
        self.setMinimumHeight(96)
        self.setAccessibleName("Drop zone")
        self.label = QLabel(WAITING)
        self.label.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.label.setWordWrap(True)  # two lines in a narrow window, rather than a wider minimum
        font = self.label.font()
        font.setPointSizeF(font.pointSizeF() * 1.2)
        self.label.setFont(font)
        self.add_files_button = QPushButton("&Add files…")
        self.add_files_button.setToolTip("Add files (Ctrl+O)")
        self.add_folder_button = QPushButton("Add &folder…")
        self.add_files_button.clicked.connect(self.add_files_clicked)
        self.add_folder_button.clicked.connect(self.add_folder_clicked)
        buttons = QHBoxLayout()
        buttons.addStretch(1)
        buttons.addWidget(self.add_files_button)
        buttons.addWidget(self.add_folder_button)
        buttons.addStretch(1)
        layout = QVBoxLayout(self)
        layout.addWidget(self.label)
        layout.addLayout(buttons)

    def _highlight(self, on: bool) -> None:
        self.setFrameShadow(QFrame.Shadow.Raised if on else QFrame.Shadow.Sunken)
        self.setLineWidth(2 if on else 1)
        self.label.setText("Release to add" if on else WAITING)

    def dragEnterEvent(self, event: QDragEnterEvent) -> None:  # noqa: N802
        if paths_from_mime_data(event.mimeData()):
            event.acceptProposedAction()
            self._highlight(True)
        else:
            event.ignore()

    def dragMoveEvent(self, event: QDragMoveEvent) -> None:  # noqa: N802
        if event.mimeData().hasUrls():
            event.acceptProposedAction()

    def dragLeaveEvent(self, event: object) -> None:  # noqa: N802
        self._highlight(False)

    def dropEvent(self, event: QDropEvent) -> None:  # noqa: N802
        self._highlight(False)
        paths = paths_from_mime_data(event.mimeData())
        if paths:
            event.acceptProposedAction()
            self.paths_dropped.emit(paths)
        else:
            event.ignore()


class FileListView(QTreeView):
    """The file list: sortable columns, several rows selectable, Delete removes, drops add."""

    paths_dropped = Signal(list)
    remove_requested = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setRootIsDecorated(False)
        self.setUniformRowHeights(True)
        self.setAlternatingRowColors(True)
        self.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        self.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.setAcceptDrops(True)
        self.setDropIndicatorShown(True)
        self.setAccessibleName("Files to convert")
        self.header().setStretchLastSection(False)

    def setModel(self, model: object) -> None:  # noqa: N802
        super().setModel(model)  # type: ignore[arg-type]
        header = self.header()
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        header.setSectionResizeMode(1, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(2, QHeaderView.ResizeMode.ResizeToContents)

    def selected_rows(self) -> list[int]:
        return sorted({i.row() for i in self.selectionModel().selectedRows()}) if self.selectionModel() else []

    def keyPressEvent(self, event: QKeyEvent) -> None:  # noqa: N802
        if event.key() in (Qt.Key.Key_Delete, Qt.Key.Key_Backspace):
            self.remove_requested.emit()
            return
        super().keyPressEvent(event)

    def dragEnterEvent(self, event: QDragEnterEvent) -> None:  # noqa: N802
        if paths_from_mime_data(event.mimeData()):
            event.acceptProposedAction()
        else:
            event.ignore()

    def dragMoveEvent(self, event: QDragMoveEvent) -> None:  # noqa: N802
        if event.mimeData().hasUrls():
            event.acceptProposedAction()

    def dropEvent(self, event: QDropEvent) -> None:  # noqa: N802
        paths: list[Path] = paths_from_mime_data(event.mimeData())
        if paths:
            event.acceptProposedAction()
            self.paths_dropped.emit(paths)
        else:
            event.ignore()

"""A line of help over an empty table: what the table will hold and how to fill it."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, Qt
from PySide6.QtWidgets import QAbstractItemView, QLabel


class EmptyHint(QLabel):
    """Shown in ``view``'s viewport while its model has no rows; hidden as soon as one arrives."""

    def __init__(self, view: QAbstractItemView, text: str) -> None:
        super().__init__(text, view.viewport())
        self.view = view
        self.setWordWrap(True)
        self.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.setEnabled(False)  # the palette's disabled text: read as a hint, not as content
        self.setAttribute(Qt.WidgetAttribute.WA_TransparentForMouseEvents)
        model = view.model()
        for signal in (model.modelReset, model.rowsInserted, model.rowsRemoved, model.layoutChanged):
            signal.connect(self.update_shown)
        view.viewport().installEventFilter(self)
        self.update_shown()

    def update_shown(self, *_: object) -> None:
        self.setVisible(self.view.model().rowCount() == 0)
        self._fit()

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt's name
        if event.type() == QEvent.Type.Resize:
            self._fit()
        return False

    def _fit(self) -> None:
        area = self.view.viewport().rect()
        self.setGeometry(area.adjusted(24, 12, -24, -12))

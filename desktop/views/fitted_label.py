"""A label whose height does not follow its text, so the panes around it stay put as it changes."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QRect, QSize, Qt
from PySide6.QtWidgets import QLabel, QSizePolicy, QWidget

ELLIPSIS = "…"


class FittedLabel(QLabel):
    """``lines`` lines of word-wrapped text, always that high (hidden too: it keeps its place). Text
    that needs more lines is cut with "…" and shown whole as the tooltip. :meth:`text` is the whole
    text, as it was set."""

    def __init__(self, lines: int = 2, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._lines = lines
        self._full = ""
        self.setWordWrap(True)
        self.setAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop)
        policy = QSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Fixed)
        policy.setRetainSizeWhenHidden(True)
        self.setSizePolicy(policy)
        self._fix_height()

    def text(self) -> str:
        return self._full

    def shown_text(self) -> str:
        """What the label shows (the text, or its beginning and "…")."""
        return super().text()

    def setText(self, text: str) -> None:  # noqa: N802 - QLabel's name
        self._full = text
        self._fit()

    def minimumSizeHint(self) -> QSize:  # noqa: N802 - Qt's name
        return QSize(0, self.height())

    def sizeHint(self) -> QSize:  # noqa: N802 - Qt's name
        return QSize(super().sizeHint().width(), self.height())

    def resizeEvent(self, event: object) -> None:  # noqa: N802 - Qt's name
        super().resizeEvent(event)  # type: ignore[arg-type]
        self._fit()

    def changeEvent(self, event: QEvent) -> None:  # noqa: N802 - Qt's name
        super().changeEvent(event)
        if event.type() == QEvent.Type.FontChange:
            self._fix_height()
            self._fit()

    def _fix_height(self) -> None:
        margins = self.contentsMargins()
        self.setFixedHeight(self.fontMetrics().lineSpacing() * self._lines + margins.top() + margins.bottom() + 2)

    def _fits(self, text: str, width: int) -> bool:
        flags = int(Qt.TextFlag.TextWordWrap.value)
        needed = self.fontMetrics().boundingRect(QRect(0, 0, width, 100_000), flags, text).height()
        return needed <= self.contentsRect().height()

    def _fit(self) -> None:
        full = self._full
        width = self.contentsRect().width()
        shown = full
        if full and width > 0 and not self._fits(full, width):
            low, high = 0, len(full)  # the longest beginning that fits with "…" after it
            while low < high:
                middle = (low + high + 1) // 2
                if self._fits(full[:middle].rstrip() + ELLIPSIS, width):
                    low = middle
                else:
                    high = middle - 1
            shown = full[:low].rstrip() + ELLIPSIS
        super().setText(shown)
        self.setToolTip(full if shown != full else "")

"""One progress bar for the last Convert as a whole (each file's status is its row in the jobs list)."""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtWidgets import QLabel, QProgressBar, QVBoxLayout, QWidget

from desktop.controllers.batches import ProgressTracker
from desktop.models.jobs import JobRow
from localapi.core.states import JobStatus


class BatchProgress(QWidget):
    """The bar and its counts ("12 of 40 done, 1 failed"), fed with the last Convert's jobs or workflows."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.tracker: ProgressTracker | None = None
        self.bar = QProgressBar()
        self.bar.setRange(0, 100)
        self.bar.setAccessibleName("Progress of the last Convert")
        self.label = QLabel()
        self.label.setObjectName("convertProgress")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.bar)
        layout.addWidget(self.label)
        self.setVisible(False)

    def follow(self, batch: str, total: int, workflows: bool = False) -> None:
        """A new Convert of ``total`` jobs (or workflows): the bar follows it from now on."""
        self.tracker = ProgressTracker(batch, total, workflows=workflows)
        self.setVisible(True)
        self._show()

    def started(self, batch: str, ids: Sequence[str], workflows: bool) -> None:
        """The jobs (or workflows) a Convert made, once they are made."""
        if self.tracker is not None and self.tracker.batch == batch and self.tracker.workflows == workflows:
            self.tracker.started(ids)
            self._show()

    def ended(self, batch: str, unit_id: str, status: JobStatus) -> None:
        """A workflow of a Convert ended (its results saved, or it failed)."""
        if self.tracker is not None and self.tracker.batch == batch:
            self.tracker.ended(unit_id, status)
            self._show()

    def jobs_changed(self, rows: Sequence[JobRow]) -> None:
        if self.tracker is not None:
            self.tracker.update(rows)
            self._show()

    def hide_if_finished(self) -> None:
        """The finished rows were cleared: a finished Convert's bar goes with them."""
        if self.tracker is not None and self.tracker.progress.finished:
            self.tracker = None
            self.setVisible(False)

    def _show(self) -> None:
        if self.tracker is None:
            return
        progress = self.tracker.progress
        self.bar.setValue(progress.percent)
        # "Done" only when every file made it; a batch with failures has "Finished" (the counts say how)
        self.bar.setFormat(("Done" if not progress.failed and not progress.canceled else "Finished")
                           if progress.finished else "%p%")
        self.label.setText(progress.text)

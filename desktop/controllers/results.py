"""Copying a finished job's results out to where the user asked for them (its :class:`Delivery`)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QObject

from desktop.store.deliveries import DeliveryStore, copy_results, sizes_of
from desktop.threads import Background
from localapi.core.errors import ServiceError
from localapi.core.service import Service


class ResultCopier(QObject):
    """Copies results off the GUI thread, one job at a time, and records in the delivery store what was
    written, what was skipped, the sizes, or why it failed."""

    def __init__(self, service: Service, deliveries: DeliveryStore, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.service = service
        self.deliveries = deliveries
        self._copier = Background(1, self)
        self._copying: set[str] = set()

    def copying(self, job_id: str) -> bool:
        return job_id in self._copying

    def deliver(self, job_id: str, done: Callable[[], None]) -> None:
        """Copy ``job_id``'s results as its delivery says; ``done`` runs on the GUI thread afterwards."""
        delivery = self.deliveries.get(job_id)
        if delivery is None:
            return
        self._copying.add(job_id)

        def copy() -> None:
            inputs = [Path(p) for p in delivery.inputs]
            try:
                written, skipped = copy_results(self.service.result_paths(job_id), Path(delivery.folder),
                                                delivery.policy, protected=inputs, template=delivery.template,
                                                tool=delivery.tool)
            except (OSError, ServiceError) as exc:
                self.deliveries.finish(job_id, [], [], error=str(getattr(exc, "detail", None) or exc))
            else:
                self.deliveries.finish(job_id, written, skipped, output_bytes=sizes_of(written) if written else None,
                                       input_bytes=sizes_of(inputs) if inputs else None)

        def finished(_: object) -> None:
            self._copying.discard(job_id)
            done()

        self._copier.run(copy, finished, finished)

    def wait(self, msecs: int) -> None:
        self._copier.wait(msecs)

"""The workflows controller: run several steps on dropped files, and save the final results where asked.

A workflow's steps are ordinary jobs (the jobs table shows them, each saying which step it is); the
workflow itself ends with one ``workflow.*`` event on the service's event feed. When one made here
ends DONE, its final files (``service.workflows.result_paths``) are copied into the chosen folder,
named and guarded against clashes as a job's results are (:func:`~desktop.store.copy_results`).
Where each workflow's results go is kept in its own ``DeliveryStore`` file (keyed by workflow id),
so a workflow that ends while the app is closed is delivered at the next start.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from PySide6.QtCore import QObject, Signal

from desktop.controllers.errors import describe_service_error
from desktop.store.deliveries import Delivery, DeliveryStore, copy_results, folder_inside, sizes_of
from desktop.store.naming import default_template
from desktop.threads import Background, Relay
from localapi.core.errors import ServiceError
from localapi.core.jobs import Caller
from localapi.core.jobs.events import JobEvent
from localapi.core.service import Service
from localapi.core.states import JobStatus
from localapi.core.workflows.records import StepSpec, Workflow

log = logging.getLogger("filekiln.desktop")


@dataclass(frozen=True)
class WorkflowEnd:
    """How a workflow made in this app ended, once its results are saved (or it failed)."""

    workflow_id: str
    batch: str
    status: JobStatus
    message: str  # in words: what was saved, or what failed (the step and the file)
    outputs: tuple[str, ...] = ()


@dataclass
class FlowBatch:
    """The workflows one Convert started, to say how they went: each failure at once, the whole at the end."""

    batch: str
    title: str  # the preset's name, or the steps' tools
    count: int
    ends: list[WorkflowEnd] = field(default_factory=list)

    def add(self, end: WorkflowEnd) -> str | None:
        """What to tell after ``end`` (``None``: nothing yet)."""
        self.ends.append(end)
        if len(self.ends) < self.count:
            return None if end.status == JobStatus.DONE else f"{self.title}: {end.message}"
        done = sum(1 for e in self.ends if e.status == JobStatus.DONE)
        if self.count == 1:
            return f"{self.title}: {end.message}"
        if done == self.count:
            return f"{self.title}: {self.count} workflows done, results saved."
        failure = next(e.message for e in self.ends if e.status != JobStatus.DONE)
        return f"{self.title}: {done} of {self.count} done; {failure}"


class WorkflowsController(QObject):
    """Starts workflows for the Convert page and delivers their results."""

    submitted = Signal(str, list)  # batch id, the workflow ids made
    finished = Signal(object)  # WorkflowEnd, once per workflow made here
    failed = Signal(str, str)  # a workflow could not be started: what went wrong in words, details

    def __init__(self, service: Service, deliveries: DeliveryStore, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.service = service
        self.deliveries = deliveries
        self._worker = Background(1, self)
        self._copier = Background(1, self)
        self._relay = Relay(self._on_event, self)
        self._copying: set[str] = set()
        self._started = False

    def start(self) -> None:
        """Hear of workflows' ends from now on, and deliver those that ended while the app was closed."""
        if self._started:
            return
        self._started = True
        self.service.events.on_event(self._receive)
        self.service.events.start()
        self._catch_up(self.deliveries.job_ids())

    def stop(self) -> None:
        self._relay.close()
        for pool in (self._worker, self._copier):
            pool.wait(30_000)

    def _receive(self, event: JobEvent) -> None:
        """On the feed's thread: pass on the ends of workflows (their jobs are the jobs controller's)."""
        if event.workflow is not None:
            self._relay.send(event.workflow)

    def _on_event(self, workflow: Workflow) -> None:
        self._ended(workflow)

    def _catch_up(self, workflow_ids: Sequence[str]) -> None:
        """Look up workflows whose delivery is pending (off the GUI thread), and handle those that ended."""
        pending = [w for w in workflow_ids if (d := self.deliveries.get(w)) is not None and d.pending]
        if not pending:
            return

        def work() -> list[Workflow]:
            ended = []
            for workflow_id in pending:
                try:
                    workflow = self.service.workflows.get(workflow_id, Caller(any_owner=True))
                except ServiceError:
                    self.deliveries.remove([workflow_id])  # deleted meanwhile: nothing will come
                    continue
                if workflow.status.finished:
                    ended.append(workflow)
            return ended

        def done(ended: list[Workflow]) -> None:
            for workflow in ended:
                self._ended(workflow)

        self._worker.run(work, done, lambda exc: log.warning("reading workflows failed: %s", exc))

    # ---- running ----

    def run(self, groups: Sequence[Sequence[Path]], steps: Sequence[StepSpec], folder: Path | None, policy: str,
            name_template: str | None = None, preset: str | None = None,
            subfolders: Sequence[Path] | None = None) -> str:
        """Start one workflow per group (one file, or the files of one folder when a step merges its inputs).

        ``preset``: the preset's name when ``steps`` are that preset's as saved (the workflow records it).
        ``folder`` ``None`` puts each result next to its group's first input; ``subfolders`` (one per
        group) put each group's results in that folder inside ``folder``. Returns the batch id."""
        batch = uuid.uuid4().hex
        specs = list(steps)
        last = specs[-1].tool
        template = name_template or default_template(last)
        lists = [list(g) for g in groups]
        targets = [folder_inside(folder, sub) for sub in subfolders] if subfolders else [folder] * len(lists)

        def work() -> tuple[list[str], list[tuple[str, str]]]:
            made: list[str] = []
            errors: list[tuple[str, str]] = []
            for group, target_folder in zip(lists, targets, strict=True):
                try:
                    stored = [self.service.files.add(p, p.name, key_id=None, kind="upload", move=False)
                              for p in group]
                    if preset is not None:
                        workflow = self.service.workflows.create(Caller(), [f.id for f in stored], preset=preset)
                    else:
                        workflow = self.service.workflows.create(Caller(), [f.id for f in stored],
                                                                 steps=[s.to_json() for s in specs])
                except (ServiceError, OSError) as exc:
                    text, details = describe_service_error(exc)
                    errors.append((f"{group[0].name}: {text}", details))
                    continue
                target = target_folder if target_folder is not None else group[0].parent
                self.deliveries.add(Delivery(workflow.id, str(target), policy, batch, tuple(str(p) for p in group),
                                             tool=last, template=template))
                made.append(workflow.id)
            return made, errors

        def done(result: tuple[list[str], list[tuple[str, str]]]) -> None:
            made, errors = result
            self.submitted.emit(batch, made)
            for text, details in errors:
                self.failed.emit(text, details)
            self._catch_up(made)  # a workflow may have ended before its delivery was recorded

        self._worker.run(work, done, lambda exc: self.failed.emit(*describe_service_error(exc)))
        return batch

    def cancel_batch(self, batch: str) -> None:
        """Cancel the workflows of one Convert that have not ended (their running jobs stop with them)."""
        ids = [w for w in self.deliveries.job_ids() if (d := self.deliveries.get(w)) and d.batch == batch
               and d.pending]

        def work() -> None:
            for workflow_id in ids:
                try:
                    self.service.workflows.cancel(workflow_id, Caller())
                except ServiceError:
                    pass  # ended meanwhile

        if ids:
            self._worker.run(work, None, lambda exc: log.info("canceling workflows failed: %s", exc))

    # ---- ends ----

    def _ended(self, workflow: Workflow) -> None:
        """A workflow ended: save its results if it was made here and is DONE, else say why not."""
        delivery = self.deliveries.get(workflow.id)
        if delivery is None or not delivery.pending or workflow.id in self._copying:
            return  # not made here, or handled already
        if workflow.status != JobStatus.DONE:
            message = (workflow.error_message or "The workflow failed.") if workflow.status == JobStatus.FAILED \
                else "The workflow was canceled."
            self.deliveries.finish(workflow.id, [], [], error=message)
            self.finished.emit(WorkflowEnd(workflow.id, delivery.batch, workflow.status, message))
            return
        self._copying.add(workflow.id)

        def copy() -> WorkflowEnd:
            inputs = [Path(p) for p in delivery.inputs]
            try:
                written, skipped = copy_results(self.service.workflows.result_paths(workflow.id),
                                                Path(delivery.folder), delivery.policy, protected=inputs,
                                                template=delivery.template, tool=delivery.tool)
            except (OSError, ServiceError) as exc:
                error = str(getattr(exc, "detail", None) or exc)
                self.deliveries.finish(workflow.id, [], [], error=error)
                return WorkflowEnd(workflow.id, delivery.batch, JobStatus.FAILED,
                                   f"The results could not be saved: {error}")
            self.deliveries.finish(workflow.id, written, skipped, output_bytes=sizes_of(written) if written else None,
                                   input_bytes=sizes_of(inputs) if inputs else None)
            names = ", ".join(p.name for p in written) or "nothing new (the files exist)"
            return WorkflowEnd(workflow.id, delivery.batch, JobStatus.DONE, f"Saved {names}.",
                               tuple(str(p) for p in written))

        def done(end: WorkflowEnd) -> None:
            self._copying.discard(workflow.id)
            self.finished.emit(end)

        def failed(exc: BaseException) -> None:
            self._copying.discard(workflow.id)
            log.warning("saving the results of %s failed: %s", workflow.id, exc)

        self._copier.run(copy, done, failed)

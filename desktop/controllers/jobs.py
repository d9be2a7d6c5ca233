"""The jobs controller: submit, cancel, retry and remove jobs, and watch every job live.

Everything that touches the disk or the database runs in a background thread; results
come back as signals on the GUI thread. The job table is polled (a local SQLite read),
so jobs made by API clients appear as soon as they are created.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from PySide6.QtCore import QObject, QTimer, Signal

from desktop.models.jobs import JobRow, friendly_error
from desktop.store.deliveries import Delivery, DeliveryStore, copy_results
from desktop.threads import Background
from localapi.core.errors import Conflict, ServiceError
from localapi.core.jobs import Caller, Job
from localapi.core.service import Service
from localapi.core.states import JobStatus

log = logging.getLogger("filekiln.desktop")


def describe_service_error(exc: BaseException) -> tuple[str, str]:
    """(sentence for people, details) for an error raised by the service."""
    if isinstance(exc, ServiceError):
        details = [f"{exc.code}: {exc.detail}"]
        for name, messages in (exc.errors or {}).items():
            details.extend(f"{name}: {m}" for m in messages)
        text = exc.detail if exc.code in ("invalid_params", "unsupported_format") else None
        return text or friendly_error(exc.code, exc.detail), "\n".join(details)
    if isinstance(exc, OSError):
        return f"A file could not be read: {exc.strerror or exc}", repr(exc)
    return "Something went wrong.", repr(exc)


class JobsController(QObject):
    """Feeds the jobs table (``snapshot``) and carries out what the Convert page and the jobs view ask."""

    snapshot = Signal(list)  # list[JobRow], newest first
    submitted = Signal(str, list)  # batch id, job ids
    failed = Signal(str, str)  # what went wrong in words, details

    def __init__(self, service: Service, deliveries: DeliveryStore, tool_titles: dict[str, str],
                 poll_ms: int = 250, idle_poll_ms: int = 1000, limit: int = 200,
                 parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.service = service
        self.deliveries = deliveries
        self.tool_titles = dict(tool_titles)
        self.poll_ms = poll_ms
        self.idle_poll_ms = idle_poll_ms
        self.limit = limit
        self._poller = Background(1, self)
        self._worker = Background(2, self)
        self._copier = Background(1, self)
        self._timer = QTimer(self)
        self._timer.timeout.connect(self.poll_now)
        self._polling = False
        self._poll_again = False
        self._copying: set[str] = set()
        self._labels: dict[str, str] = {}  # job id -> file names; touched by the poll thread only
        self._key_names: dict[str, str] = {}
        self._polls = 0
        self.rows: list[JobRow] = []

    # ---- polling ----

    def start(self) -> None:
        self._timer.start(self.poll_ms)
        self.poll_now()

    def stop(self) -> None:
        self._timer.stop()
        for pool in (self._worker, self._copier, self._poller):
            pool.wait(30_000)

    def poll_now(self) -> None:
        if self._polling:
            self._poll_again = True
            return
        self._polling = True
        self._poller.run(self._collect, self._on_rows, self._on_poll_error)

    def _on_poll_error(self, exc: BaseException) -> None:
        self._polling = False
        log.warning("reading the jobs failed: %s", exc)

    def _on_rows(self, rows: list[JobRow]) -> None:
        self._polling = False
        self.rows = rows
        self.snapshot.emit(rows)
        for row in rows:
            if row.saving and row.id not in self._copying:
                self._deliver(row.id)
        busy = any(r.active or r.saving for r in rows) or self._worker.busy
        interval = self.poll_ms if busy else self.idle_poll_ms
        if self._timer.isActive() and self._timer.interval() != interval:
            self._timer.setInterval(interval)
        if self._poll_again:
            self._poll_again = False
            self.poll_now()

    def _collect(self) -> list[JobRow]:
        """Runs in the poll thread: read the newest jobs and name their files and keys."""
        page = self.service.jobs.page(Caller(), everyone=True, limit=self.limit)
        self._polls += 1
        if self._polls % 20 == 1 or any(j.key_id and j.key_id not in self._key_names for j in page.items):
            self._key_names = {k.id: k.name for k in self.service.keys.list()}
        if page.next_cursor is None:
            self._forget_deleted_jobs({j.id for j in page.items})
        return [self._row(job) for job in page.items]

    def _forget_deleted_jobs(self, listed: set[str]) -> None:
        """Drop deliveries of jobs that no longer exist (deleted through the API). A job missing from
        the page may just be newer than it, so each one is looked up before it is forgotten."""
        gone = []
        for job_id in self.deliveries.job_ids():
            if job_id in listed:
                continue
            try:
                self.service.jobs.get(job_id, Caller(any_owner=True))
            except ServiceError:
                gone.append(job_id)
        if gone:
            self.deliveries.remove(gone)

    def _row(self, job: Job) -> JobRow:
        label = self._labels.get(job.id)
        if label is None:
            label = self._labels[job.id] = self._files_label(job.input_file_ids)
        delivery = self.deliveries.get(job.id)
        from_app = job.key_id is None
        return JobRow(
            id=job.id, tool=job.tool, tool_title=self.tool_titles.get(job.tool, job.tool), files_label=label,
            source="This app" if from_app else f"API: {self._key_names.get(job.key_id or '', 'a key')}",
            status=JobStatus(job.status), progress=job.progress, created_at=job.created_at, started_at=job.started_at,
            finished_at=job.finished_at, error_code=job.error_code, error_message=job.error_message,
            notes=tuple(job.notes), from_app=from_app, params=dict(job.params), output_format=job.output_format,
            input_file_ids=tuple(job.input_file_ids),
            outputs=tuple(delivery.delivered or ()) if delivery else (),
            skipped=delivery.skipped if delivery else (),
            saving=bool(delivery and delivery.pending and job.status == JobStatus.DONE),
            delivery_error=delivery.error if delivery else None)

    def _files_label(self, file_ids: Sequence[str]) -> str:
        names = []
        for file_id in file_ids:
            try:
                names.append(self.service.files.get(file_id, any_owner=True, include_deleted=True).original_name)
            except ServiceError:
                names.append("(removed file)")
        if not names:
            return ""
        return names[0] if len(names) == 1 else f"{names[0]} + {len(names) - 1} more"

    # ---- results ----

    def _deliver(self, job_id: str) -> None:
        delivery = self.deliveries.get(job_id)
        if delivery is None:
            return
        self._copying.add(job_id)

        def copy() -> None:
            try:
                written, skipped = copy_results(self.service.result_paths(job_id), Path(delivery.folder),
                                                delivery.policy, protected=[Path(p) for p in delivery.inputs])
            except (OSError, ServiceError) as exc:
                self.deliveries.finish(job_id, [], [], error=str(getattr(exc, "detail", None) or exc))
            else:
                self.deliveries.finish(job_id, written, skipped)

        def done(_: object) -> None:
            self._copying.discard(job_id)
            self.poll_now()

        self._copier.run(copy, done, done)

    # ---- actions ----

    def submit(self, groups: Sequence[Sequence[Path]], tool_id: str, params: dict[str, Any],
               output_format: str | None, folder: Path | None, policy: str) -> str:
        """Queue one job per group (a group is one file, or all files for a tool that merges them).

        ``folder`` ``None`` puts each result next to its group's first input. Returns the batch id.
        """
        batch = uuid.uuid4().hex
        lists = [list(g) for g in groups]

        def work() -> tuple[list[str], list[tuple[list[Path], BaseException]]]:
            job_ids: list[str] = []
            errors: list[tuple[list[Path], BaseException]] = []
            for group in lists:
                try:
                    job = self.service.submit_local(group, tool_id, params, output_format)
                except (ServiceError, OSError) as exc:
                    errors.append((group, exc))
                    continue
                target = folder if folder is not None else group[0].parent
                self.deliveries.add(Delivery(job.id, str(target), policy, batch, tuple(str(p) for p in group)))
                job_ids.append(job.id)
            return job_ids, errors

        def done(result: tuple[list[str], list[tuple[list[Path], BaseException]]]) -> None:
            job_ids, errors = result
            self.submitted.emit(batch, job_ids)
            if errors:
                text, details = describe_service_error(errors[0][1])
                names = ", ".join(p.name for group, _ in errors for p in group)
                more = f" ({len(errors)} files could not be queued: {names})" if len(lists) > 1 else ""
                self.failed.emit(text + more, details)
            self.poll_now()

        self._worker.run(work, done, self._on_action_error)
        return batch

    def _on_action_error(self, exc: BaseException) -> None:
        text, details = describe_service_error(exc)
        self.failed.emit(text, details)
        self.poll_now()

    def cancel(self, job_ids: Sequence[str]) -> None:
        ids = list(job_ids)

        def work() -> None:
            for job_id in ids:
                try:
                    self.service.jobs.cancel(job_id, Caller(any_owner=True))
                except Conflict:
                    pass  # finished meanwhile

        self._worker.run(work, lambda _: self.poll_now(), self._on_action_error)

    def remove(self, job_ids: Sequence[str]) -> None:
        """Delete jobs (canceling running ones) and their stored results; copies on disk stay."""
        ids = list(job_ids)

        def work() -> None:
            for job_id in ids:
                try:
                    self.service.jobs.delete(job_id, Caller(any_owner=True))
                except ServiceError:
                    pass
            self.deliveries.remove(ids)

        self._worker.run(work, lambda _: self.poll_now(), self._on_action_error)

    def retry(self, row: JobRow) -> str:
        """Run a failed or canceled job of this app again, with the same inputs and choices."""
        batch = uuid.uuid4().hex
        previous = self.deliveries.get(row.id)

        def work() -> list[str]:
            job = self.service.jobs.create(Caller(), row.tool, list(row.input_file_ids), row.params,
                                           row.output_format)
            if previous is not None:
                self.deliveries.add(Delivery(job.id, previous.folder, previous.policy, batch, previous.inputs))
            return [job.id]

        def done(ids: list[str]) -> None:
            self.submitted.emit(batch, ids)
            self.poll_now()

        self._worker.run(work, done, self._on_action_error)
        return batch

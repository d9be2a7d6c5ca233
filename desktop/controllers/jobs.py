"""The jobs controller: submit, cancel, retry and remove jobs, and feed the jobs table.

What it is made of: :class:`~desktop.controllers.job_feed.JobFeed` follows every job live (the
service's job-event feed, and a read of the job table now and then); :class:`~desktop.controllers.job_rows.RowMaker`
turns jobs into the table's rows; :class:`~desktop.controllers.results.ResultCopier` copies the results
of this app's finished jobs to where the user asked for them. This module carries out what the Convert
page and the jobs view ask.

Files the service refuses before converting (damaged, password protected, too large ...) have no
job; they get a row of their own all the same (:class:`Refusal`), with the reason, Retry and, for a
password-protected PDF, a password to unlock it with (:meth:`JobsController.unlock`).

Everything that touches the disk or the database runs in a background thread.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from PySide6.QtCore import QObject, Signal

from desktop.controllers.errors import describe_service_error
from desktop.controllers.job_feed import JobFeed
from desktop.controllers.job_rows import UNLOCK_TOOL, JobNames, RowMaker, files_label
from desktop.controllers.results import ResultCopier
from desktop.models.jobs import JobRow
from desktop.store.deliveries import Delivery, DeliveryStore, folder_inside
from desktop.store.naming import default_template
from desktop.threads import Background
from localapi.core.errors import Conflict, ServiceError
from localapi.core.jobs import Caller, Job
from localapi.core.service import Service
from localapi.core.states import JobStatus


@dataclass(frozen=True)
class Refusal:
    """Files the service refused before converting: what was asked, to ask again (Retry, unlock)."""

    row: JobRow
    paths: tuple[Path, ...]
    params: dict[str, Any]
    output_format: str | None
    folder: Path | None  # None: next to the first input
    policy: str
    template: str
    batch: str


@dataclass(frozen=True)
class _Then:
    """What runs on the result of an unlock job once it is DONE: the job the password was given for."""

    tool: str
    params: dict[str, Any]
    output_format: str | None
    delivery: Delivery | None  # where its results go (job id filled in when it is made)


class JobsController(QObject):
    """Feeds the jobs table (``snapshot``) and carries out what the Convert page and the jobs view ask.

    The table is the feed's newest jobs and the rows of refused files, emitted after each batch of
    changes; the results of this app's jobs that are DONE are copied out as they show up there.
    """

    snapshot = Signal(list)  # list[JobRow], newest first, after each batch of changes
    submitted = Signal(str, list)  # batch id, job ids (and the ids of refused files' rows)
    failed = Signal(str, str)  # what went wrong in words, details
    replaced = Signal(str, str)  # a row's id, the id of the job made in its place (Retry, unlock)
    cleared = Signal()  # the finished rows were cleared from the list

    def __init__(self, service: Service, deliveries: DeliveryStore, tool_titles: dict[str, str],
                 coalesce_ms: int = 100, sweep_ms: int = 30_000, limit: int = 200,
                 parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.service = service
        self.deliveries = deliveries
        names = JobNames(service)
        self.feed = JobFeed(service, deliveries, names, coalesce_ms, sweep_ms, limit, self)
        self.feed.changed.connect(self._on_changed)
        self.row_maker = RowMaker(service, deliveries, names, tool_titles)
        self.copier = ResultCopier(service, deliveries, self)
        self._worker = Background(2, self)
        self._given: dict[str, dict[str, Any]] = {}  # params as given to jobs of this run, passwords included
        self._refusals: dict[str, Refusal] = {}  # refused files' rows, by row id
        self._then: dict[str, _Then] = {}  # unlock job id -> the job to make from its result
        self._feeds: dict[str, str] = {}  # unlock job id -> the job made from its result ("" while it is made)
        self.rows: list[JobRow] = []

    @property
    def coalesce_ms(self) -> int:
        return self.feed.coalesce_ms

    def start(self) -> None:
        """Follow the jobs: listen to the job-event feed, then read the newest jobs once."""
        self.feed.start()

    def stop(self) -> None:
        self.feed.stop()
        self._worker.wait(30_000)
        self.copier.wait(30_000)
        self.feed.wait(30_000)

    def sweep(self) -> None:
        """Read the newest jobs again, to notice jobs deleted by someone else."""
        self.feed.sweep()

    def _on_changed(self, jobs: list[Job]) -> None:
        for job in jobs:
            if job.id in self._then and job.status.finished:
                self._go_on(job)
        self._publish()

    def _publish(self) -> None:
        """Emit the table as it now stands, and copy out the results of this app's jobs that are DONE."""
        if not self.feed.listed:
            return
        rows = [self.row_maker.row(job) for job in self.feed.newest()]
        if self._refusals:
            rows = sorted([*rows, *(r.row for r in self._refusals.values())], key=lambda r: (r.created_at, r.id),
                          reverse=True)
        self.rows = rows
        self.snapshot.emit(rows)
        for row in rows:
            if row.saving and not self.copier.copying(row.id):
                self.copier.deliver(row.id, self._publish)

    def submit(self, groups: Sequence[Sequence[Path]], tool_id: str, params: dict[str, Any],
               output_format: str | None, folder: Path | None, policy: str, name_template: str | None = None,
               subfolders: Sequence[Path] | None = None) -> str:
        """Queue one job per group (a group is one file, or all files for a tool that merges them).

        ``folder`` ``None`` puts each result next to its group's first input; ``subfolders`` (one per
        group) put each group's results in that folder inside ``folder``, to keep a dropped folder's
        tree. ``name_template`` names the results (``None``: the tool's default). A group the service
        refuses gets a row saying why. Returns the batch id.
        """
        batch = uuid.uuid4().hex
        template = name_template or default_template(tool_id)
        lists = [list(g) for g in groups]
        targets = [folder_inside(folder, sub) for sub in subfolders] if subfolders else [folder] * len(lists)

        def work() -> tuple[list[str], list[Refusal]]:
            job_ids: list[str] = []
            refused: list[Refusal] = []
            for group, target in zip(lists, targets, strict=True):
                try:
                    job = self.service.submit_local(group, tool_id, params, output_format)
                except (ServiceError, OSError) as exc:
                    refused.append(self._refusal(group, tool_id, params, output_format, target, policy, template,
                                                 batch, exc))
                    continue
                self._given[job.id] = params  # passwords are not kept with the job: a retry needs them
                self.deliveries.add(self._delivery(job.id, group, target, policy, batch, tool_id, template))
                job_ids.append(job.id)
            return job_ids, refused

        def done(result: tuple[list[str], list[Refusal]]) -> None:
            job_ids, refused = result
            for refusal in refused:
                self._refusals[refusal.row.id] = refusal
            self.submitted.emit(batch, [*job_ids, *(r.row.id for r in refused)])
            self._publish()  # a job may have ended before its delivery was recorded

        self._worker.run(work, done, self._on_action_error)
        return batch

    @staticmethod
    def _delivery(job_id: str, group: Sequence[Path], folder: Path | None, policy: str, batch: str, tool_id: str,
                  template: str) -> Delivery:
        target = folder if folder is not None else group[0].parent
        return Delivery(job_id, str(target), policy, batch, tuple(str(p) for p in group), tool=tool_id,
                        template=template)

    def _refusal(self, group: Sequence[Path], tool_id: str, params: dict[str, Any], output_format: str | None,
                 folder: Path | None, policy: str, template: str, batch: str, exc: BaseException) -> Refusal:
        """Off the GUI thread: a row for files the service would not take, saying why."""
        text, details = describe_service_error(exc)
        code = exc.code if isinstance(exc, ServiceError) else "io_error"
        formats = []
        for path in group:
            try:
                formats.append(self.service.sniff(path) or "")
            except OSError:
                formats.append("")
        row = JobRow(
            id=f"refused_{uuid.uuid4().hex}", tool=tool_id, tool_title=self.row_maker.title(tool_id),
            files_label=files_label([p.name for p in group]),
            source="This app", status=JobStatus.FAILED, progress=0, created_at=time.time(), error_code=code,
            error_message=getattr(exc, "detail", None) or str(exc), refusal=text, details=details,
            can_unlock=self.row_maker.can_unlock(tool_id, code, formats))
        return Refusal(row, tuple(group), dict(params), output_format, folder, policy, template, batch)

    def _on_action_error(self, exc: BaseException) -> None:
        text, details = describe_service_error(exc)
        self.failed.emit(text, details)

    def cancel(self, job_ids: Sequence[str]) -> None:
        ids = [j for j in job_ids if j not in self._refusals]

        def work() -> None:
            for job_id in ids:
                try:
                    self.service.jobs.cancel(job_id, Caller(any_owner=True))
                except Conflict:
                    pass  # finished meanwhile

        self._worker.run(work, None, self._on_action_error)  # the feed tells how it went

    def cancel_all(self) -> list[str]:
        """Stop every job that is waiting or running (this app's and API clients'); returns their ids."""
        ids = [r.id for r in self.rows if r.active]
        if ids:
            self.cancel(ids)
        return ids

    def remove(self, job_ids: Sequence[str]) -> None:
        """Delete jobs (canceling running ones) and their stored results; copies on disk stay. An unlock
        job stays while the job made from its result has not finished: that job reads the result."""
        running = {"", *(r.id for r in self.rows if r.active)}
        job_ids = [j for j in job_ids if j not in self._feeds or self._feeds[j] not in running]
        ids = [j for j in job_ids if j not in self._refusals]
        dropped = [j for j in job_ids if self._refusals.pop(j, None) is not None]
        for job_id in job_ids:
            self._then.pop(job_id, None)  # a removed unlock job leads nowhere
        if dropped and not ids:
            self._publish()
            return

        def work() -> None:
            for job_id in ids:
                try:
                    self.service.jobs.delete(job_id, Caller(any_owner=True))
                except ServiceError:
                    pass
            self.deliveries.remove(ids)

        def done(_: object) -> None:
            self.feed.drop(ids)
            self._publish()

        self._worker.run(work, done, self._on_action_error)

    def clear_finished(self) -> None:
        """Take every finished row off the list (done, failed, canceled, refused); saved files stay."""
        ids = [r.id for r in self.rows if not r.active]
        if ids:
            self.remove(ids)
        self.cleared.emit()

    def retry(self, row: JobRow) -> str:
        """Run a failed or canceled job of this app again, with the same inputs and choices.

        The new job's id comes with :attr:`replaced`; a refused file's row gives way to it."""
        if row.id in self._refusals:
            return self._resubmit(self._refusals[row.id], None)
        return self._recreate(row, None)

    def unlock(self, row: JobRow, password: str) -> str:
        """Go on with a job that failed for want of a password: the same tool with ``password`` when it
        takes one, else pdf-unlock first and the job's own tool on the unlocked PDF. The row gives way
        to the new job. Returns the batch id."""
        if row.id in self._refusals:
            return self._resubmit(self._refusals[row.id], password)
        return self._recreate(row, password)

    def _recreate(self, row: JobRow, password: str | None) -> str:
        batch = uuid.uuid4().hex
        previous = self.deliveries.get(row.id)
        then = self._then.pop(row.id, None)
        params = dict(self._given.get(row.id, row.params))
        chain = password is not None and not self.row_maker.takes_password(row.tool)
        if password is not None and not chain:
            params["password"] = password

        def work() -> str:
            if chain:
                job = self.service.jobs.create(Caller(), UNLOCK_TOOL, list(row.input_file_ids),
                                               {"password": password}, None)
                self._given[job.id] = {"password": password}
                return job.id
            job = self.service.jobs.create(Caller(), row.tool, list(row.input_file_ids), params, row.output_format)
            self._given[job.id] = params
            if previous is not None:
                self.deliveries.add(replace(previous, job_id=job.id, batch=batch, delivered=None, skipped=(),
                                            error=None, output_bytes=None, input_bytes=None))
            return job.id

        def done(job_id: str) -> None:
            if chain:
                self._follow(job_id, _Then(row.tool, params, row.output_format, previous))
            elif then is not None:  # an unlock job again, with another password: the job after it still waits
                self._follow(job_id, then)
            self._after_replacing(row.id, job_id, batch, drop=password is not None)

        self._worker.run(work, done, self._on_action_error)
        return batch

    def _resubmit(self, refusal: Refusal, password: str | None) -> str:
        """Ask the service again for a refused file's row (after a change on disk, or with a password)."""
        batch = uuid.uuid4().hex
        row = refusal.row
        params = dict(refusal.params)
        chain = password is not None and not self.row_maker.takes_password(row.tool)
        if password is not None and not chain:
            params["password"] = password
        delivery = self._delivery("", refusal.paths, refusal.folder, refusal.policy, batch, row.tool,
                                  refusal.template)

        def work() -> str | Refusal:
            group = list(refusal.paths)
            tool, given = (UNLOCK_TOOL, {"password": password}) if chain else (row.tool, params)
            try:
                job = self.service.submit_local(group, tool, given, None if chain else refusal.output_format)
            except (ServiceError, OSError) as exc:
                return self._refusal(group, tool, given, None if chain else refusal.output_format, refusal.folder,
                                     refusal.policy, refusal.template, batch, exc)
            self._given[job.id] = given
            if not chain:
                self.deliveries.add(replace(delivery, job_id=job.id))
            return job.id

        def done(result: str | Refusal) -> None:
            self._refusals.pop(row.id, None)
            if isinstance(result, Refusal):
                if chain:  # pdf-unlock refused the file: say so, and keep what was asked for Retry
                    result = replace(result, row=replace(result.row, can_unlock=False))
                self._refusals[result.row.id] = result
                self._after_replacing(row.id, result.row.id, batch, drop=False)
                return
            if chain:
                self._follow(result, _Then(row.tool, params, refusal.output_format, delivery))
            self._after_replacing(row.id, result, batch, drop=False)

        self._worker.run(work, done, self._on_action_error)
        return batch

    def _after_replacing(self, old_id: str, new_id: str, batch: str, drop: bool) -> None:
        self.submitted.emit(batch, [new_id])
        self.replaced.emit(old_id, new_id)
        if drop:  # the password failure is answered: its row goes
            self.remove([old_id])
        else:
            self._publish()

    def _follow(self, unlock_id: str, then: _Then) -> None:
        """Once the unlock job ``unlock_id`` is DONE, make ``then``'s job from its result."""
        self._then[unlock_id] = then
        job = self.feed.job(unlock_id)
        if job is not None and job.status.finished:  # it ended before we got here
            self._go_on(job)

    def _go_on(self, unlock: Job) -> None:
        if unlock.status != JobStatus.DONE:
            return  # failed or canceled: its row says why (and asks for the password again when wrong)
        then = self._then.pop(unlock.id, None)
        if then is None:
            return
        self._feeds[unlock.id] = ""  # being made: the unlocked PDF must stay until then
        batch = uuid.uuid4().hex

        def work() -> str:
            job = self.service.jobs.create(Caller(), then.tool, list(unlock.result_file_ids), then.params,
                                           then.output_format)
            self._given[job.id] = then.params
            if then.delivery is not None:
                self.deliveries.add(replace(then.delivery, job_id=job.id, batch=batch))
            return job.id

        def done(job_id: str) -> None:
            self._feeds[unlock.id] = job_id
            self.submitted.emit(batch, [job_id])
            self.replaced.emit(unlock.id, job_id)
            self._publish()

        def failed(exc: BaseException) -> None:
            self._feeds.pop(unlock.id, None)
            self._on_action_error(exc)

        self._worker.run(work, done, failed)

"""A job as the jobs table shows it (:class:`~desktop.models.jobs.JobRow`): its files' names, who made it,
where its results went, and whether a password would let it go on.

Names come from the database; :class:`JobNames` reads them off the GUI thread, once per job, and the
GUI thread reads what it learned when it builds a row.
"""

from __future__ import annotations

from collections.abc import Sequence

from desktop.models.jobs import JobRow
from desktop.store.deliveries import DeliveryStore
from localapi.core.errors import ServiceError
from localapi.core.jobs import Caller, Job
from localapi.core.service import Service
from localapi.core.states import JobStatus

PASSWORD_CODES = ("password_protected", "wrong_password")
UNLOCK_TOOL = "pdf-unlock"


def files_label(names: Sequence[str]) -> str:
    """``a.pdf``, or ``a.pdf + 2 more``; empty without files."""
    if not names:
        return ""
    return names[0] if len(names) == 1 else f"{names[0]} + {len(names) - 1} more"


class JobNames:
    """What a row says of a job beyond the job itself: its files' names and formats, its key's name, how
    many steps its workflow has. :meth:`learn` runs off the GUI thread (it reads the database)."""

    def __init__(self, service: Service) -> None:
        self.service = service
        self._labels: dict[str, str] = {}  # job id -> its files' names
        self._key_names: dict[str, str] = {}
        self._formats: dict[str, tuple[str, ...]] = {}  # job id -> its inputs' formats
        self._step_counts: dict[str, int] = {}  # workflow id -> how many steps it has

    def learn(self, job: Job) -> None:
        """Off the GUI thread: remember the names of ``job``'s files and of its key."""
        if job.id not in self._labels:
            self._labels[job.id] = self._files_label(job.input_file_ids)
            self._formats[job.id] = self._input_formats(job.input_file_ids)
        if job.key_id and job.key_id not in self._key_names:
            self._key_names.update({k.id: k.name for k in self.service.keys.list()})
        if job.workflow_id and job.workflow_id not in self._step_counts:
            try:
                workflow = self.service.workflows.get(job.workflow_id, Caller(any_owner=True))
            except ServiceError:
                return
            self._step_counts[job.workflow_id] = len(workflow.steps)

    def label(self, job_id: str) -> str:
        return self._labels.get(job_id, "")

    def formats(self, job_id: str) -> tuple[str, ...]:
        return self._formats.get(job_id, ())

    def key_name(self, key_id: str | None) -> str:
        return self._key_names.get(key_id or "", "a key")

    def step_count(self, workflow_id: str | None) -> int:
        return self._step_counts.get(workflow_id or "", 0)

    def _input_formats(self, file_ids: Sequence[str]) -> tuple[str, ...]:
        formats = []
        for file_id in file_ids:
            try:
                formats.append(self.service.files.get(file_id, any_owner=True, include_deleted=True).format or "")
            except ServiceError:
                formats.append("")
        return tuple(formats)

    def _files_label(self, file_ids: Sequence[str]) -> str:
        names = []
        for file_id in file_ids:
            try:
                names.append(self.service.files.get(file_id, any_owner=True, include_deleted=True).original_name)
            except ServiceError:
                names.append("(removed file)")
        return files_label(names)


class RowMaker:
    """Builds the table's rows from jobs, with what :class:`JobNames` learned and the deliveries say."""

    def __init__(self, service: Service, deliveries: DeliveryStore, names: JobNames,
                 tool_titles: dict[str, str]) -> None:
        self.service = service
        self.deliveries = deliveries
        self.names = names
        self.tool_titles = dict(tool_titles)

    def title(self, tool_id: str) -> str:
        return self.tool_titles.get(tool_id, tool_id)

    def row(self, job: Job) -> JobRow:
        delivery = self.deliveries.get(job.id)
        from_app = job.key_id is None
        return JobRow(
            id=job.id, tool=job.tool, tool_title=self.title(job.tool), files_label=self.names.label(job.id),
            source="This app" if from_app else f"API: {self.names.key_name(job.key_id)}",
            status=JobStatus(job.status), progress=job.progress, created_at=job.created_at, started_at=job.started_at,
            finished_at=job.finished_at, error_code=job.error_code, error_message=job.error_message,
            notes=tuple(job.notes), from_app=from_app, params=dict(job.params), output_format=job.output_format,
            input_file_ids=tuple(job.input_file_ids),
            outputs=tuple(delivery.delivered or ()) if delivery else (),
            skipped=delivery.skipped if delivery else (),
            saving=bool(delivery and delivery.pending and job.status == JobStatus.DONE),
            delivery_error=delivery.error if delivery else None,
            output_bytes=delivery.output_bytes if delivery else None,
            input_bytes=delivery.input_bytes if delivery else None,
            can_unlock=from_app and job.status == JobStatus.FAILED and job.workflow_id is None
            and self.can_unlock(job.tool, job.error_code, self.names.formats(job.id)),
            workflow_id=job.workflow_id, step=job.step or 0, steps=self.names.step_count(job.workflow_id))

    def can_unlock(self, tool_id: str, code: str | None, formats: Sequence[str]) -> bool:
        """Whether a password would let a job of ``tool_id`` that failed with ``code`` go on: the tool
        takes a password itself, or its input is a PDF that pdf-unlock can open first."""
        if code not in PASSWORD_CODES:
            return False
        if self.takes_password(tool_id):
            return True
        pdfs = bool(formats) and all(f == "pdf" for f in formats)
        return pdfs and tool_id != UNLOCK_TOOL and self.service.catalogue.get(UNLOCK_TOOL) is not None

    def takes_password(self, tool_id: str) -> bool:
        tool = self.service.catalogue.get(tool_id)
        return tool is not None and "password" in tool.params.model_fields

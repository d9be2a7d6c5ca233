"""The one vocabulary of job states, shared by the core, the HTTP schemas, the runner and the desktop."""

from __future__ import annotations

from enum import StrEnum


class JobStatus(StrEnum):
    """Where a job is in its life. The values are the API's words (``Job.status``)."""

    QUEUED = "QUEUED"
    PROCESSING = "PROCESSING"
    DONE = "DONE"
    FAILED = "FAILED"
    CANCELED = "CANCELED"

    @property
    def finished(self) -> bool:
        """DONE, FAILED or CANCELED: nothing will change it again."""
        return self in FINISHED

    @property
    def active(self) -> bool:
        """QUEUED or PROCESSING: a worker has it or will."""
        return self in ACTIVE


FINISHED = frozenset({JobStatus.DONE, JobStatus.FAILED, JobStatus.CANCELED})
ACTIVE = frozenset({JobStatus.QUEUED, JobStatus.PROCESSING})

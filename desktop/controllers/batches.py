"""Which jobs were started together (one Convert), so the window can say once how a whole batch went."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from localapi.core.states import JobStatus


@dataclass(frozen=True)
class BatchSummary:
    batch: str
    done: int
    failed: int
    canceled: int

    @property
    def message(self) -> str:
        total = self.done + self.failed + self.canceled
        if self.failed == 0 and self.canceled == 0:
            return f"{total} file{'s' * (total != 1)} converted." if total != 1 else "Your file is converted."
        parts = [f"{self.done} done"]
        if self.failed:
            parts.append(f"{self.failed} failed")
        if self.canceled:
            parts.append(f"{self.canceled} canceled")
        return ", ".join(parts) + "."


class BatchTracker:
    """Knows which jobs were started together and says once when all of a batch are finished."""

    def __init__(self) -> None:
        self._batches: dict[str, list[str]] = {}
        self._seen: set[str] = set()

    def add(self, batch: str, job_ids: Sequence[str]) -> None:
        if job_ids:
            self._batches.setdefault(batch, []).extend(job_ids)

    def update(self, statuses: Mapping[str, JobStatus]) -> list[BatchSummary]:
        """``statuses``: job id -> status. A job missing from it counts as canceled (removed) once it was
        seen, and as waiting before that (a snapshot taken just before the job was made)."""
        finished = []
        for batch, job_ids in list(self._batches.items()):
            self._seen.update(j for j in job_ids if j in statuses)
            states = [statuses.get(j, JobStatus.CANCELED if j in self._seen else JobStatus.QUEUED) for j in job_ids]
            if all(s.finished for s in states):
                finished.append(BatchSummary(batch, states.count(JobStatus.DONE), states.count(JobStatus.FAILED),
                                             states.count(JobStatus.CANCELED)))
                del self._batches[batch]
                self._seen.difference_update(job_ids)
        return finished

"""Which jobs were started together (one Convert), so the window can say once how a whole batch went,
and how far the last one has got (one progress bar for all its jobs or workflows)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from desktop.models.jobs import JobRow
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


@dataclass(frozen=True)
class BatchProgress:
    """How far one Convert has got: its jobs (or workflows) in all, how many ended how, and the
    fraction of the work done (a running one counts by its progress)."""

    total: int
    done: int = 0
    failed: int = 0
    canceled: int = 0
    fraction: float = 0.0

    @property
    def finished(self) -> bool:
        return self.done + self.failed + self.canceled >= self.total

    @property
    def percent(self) -> int:
        return 100 if self.total and self.finished else int(self.fraction * 100)

    @property
    def text(self) -> str:
        """``12 of 40 done, 1 failed``."""
        parts = [f"{self.done} of {self.total} done"]
        if self.failed:
            parts.append(f"{self.failed} failed")
        if self.canceled:
            parts.append(f"{self.canceled} canceled")
        return ", ".join(parts)


class ProgressTracker:
    """The progress of one Convert, from the jobs controller's snapshots.

    A Convert of jobs counts each job as ended once it is finished and its results are saved. A
    Convert of workflows counts each workflow as ended when :meth:`ended` is told so (its results
    saved); a running workflow counts by the jobs of its steps. Units that could not start count as
    failed. Before the ids are known (:meth:`started`) nothing has moved.
    """

    def __init__(self, batch: str, total: int, workflows: bool = False) -> None:
        self.batch = batch
        self.workflows = workflows
        self._total = total
        self._ids: list[str] = []
        self._known = False
        self._seen: set[str] = set()
        self._shares: dict[str, float] = {}  # unit id -> fraction done (1.0 once ended)
        self._ends: dict[str, JobStatus] = {}  # unit id -> how it ended

    def started(self, ids: Sequence[str]) -> None:
        """The units this Convert made (jobs, refused files' rows, or workflows)."""
        self._ids.extend(ids)
        self._known = True

    def ended(self, unit_id: str, status: JobStatus) -> None:
        """A workflow ended (and its results are saved, when DONE)."""
        self._ends[unit_id] = status
        self._shares[unit_id] = 1.0

    def update(self, rows: Sequence[JobRow]) -> None:
        """Take in a snapshot of the jobs table."""
        if self.workflows:
            self._update_workflows(rows)
            return
        by_id = {r.id: r for r in rows}
        for job_id in self._ids:
            row = by_id.get(job_id)
            if row is None:
                if job_id in self._seen and job_id not in self._ends:  # removed from the list
                    self._ends[job_id] = JobStatus.CANCELED
                    self._shares[job_id] = 1.0
                continue
            self._seen.add(job_id)
            if row.status.finished and not row.saving:
                self._ends[job_id] = row.status
                self._shares[job_id] = 1.0
            elif job_id not in self._ends:
                self._shares[job_id] = 1.0 if row.status.finished else row.progress / 100

    def _update_workflows(self, rows: Sequence[JobRow]) -> None:
        steps: dict[str, list[JobRow]] = {}
        for row in rows:
            if row.workflow_id in self._ids and row.workflow_id not in self._ends:
                steps.setdefault(row.workflow_id, []).append(row)
        for workflow_id, jobs in steps.items():
            current = max(r.step for r in jobs)
            count = max(jobs[0].steps, current + 1)
            now = [r for r in jobs if r.step == current]
            part = sum(100 if r.status.finished else r.progress for r in now) / (100 * len(now))
            self._shares[workflow_id] = min((current + part) / count, 0.99)  # ended only when saved

    @property
    def progress(self) -> BatchProgress:
        if not self._known:
            return BatchProgress(self._total)
        ends = list(self._ends.values())
        missing = max(self._total - len(self._ids), 0)  # could not start: said why elsewhere
        fraction = (sum(self._shares.get(i, 0.0) for i in self._ids) + missing) / self._total if self._total else 1.0
        return BatchProgress(self._total, ends.count(JobStatus.DONE), ends.count(JobStatus.FAILED) + missing,
                             ends.count(JobStatus.CANCELED), min(fraction, 1.0))

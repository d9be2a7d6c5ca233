"""What a job is, as the core hands it around: the row, a page of rows, a result, and who asks."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from localapi.core.db import Row
from localapi.core.files import StoredFile
from localapi.core.keys import ApiKey
from localapi.core.states import JobStatus


@dataclass(frozen=True)
class Job:
    id: str
    key_id: str | None
    tool: str
    status: JobStatus
    progress: int
    output_format: str | None
    params: dict[str, Any]
    input_file_ids: list[str]
    result_file_ids: list[str]
    bundle_file_id: str | None
    error_code: str | None
    error_message: str | None
    notes: list[str]
    created_at: float
    started_at: float | None
    finished_at: float | None
    updated_at: float
    attempts: int
    webhook_url: str | None = None  # where this job's own webhook deliveries go, if anywhere
    tag: str | None = None  # the caller's label (GET /jobs?tag=)
    workflow_id: str | None = None  # the workflow this job is a step of
    step: int | None = None  # which step of it (0-based)

    @classmethod
    def from_row(cls, row: Row) -> Job:
        return cls(
            id=row["id"], key_id=row["key_id"], tool=row["tool"], status=JobStatus(row["status"]),
            progress=row["progress"], output_format=row["output_format"], params=json.loads(row["params"]),
            input_file_ids=json.loads(row["input_file_ids"]), result_file_ids=json.loads(row["result_file_ids"]),
            bundle_file_id=row["bundle_file_id"], error_code=row["error_code"],
            error_message=row["error_message"], notes=json.loads(row["notes"]), created_at=row["created_at"],
            started_at=row["started_at"], finished_at=row["finished_at"], updated_at=row["updated_at"],
            attempts=row["attempts"], webhook_url=row["webhook_url"], tag=row["tag"],
            workflow_id=row["workflow_id"], step=row["step"],
        )


@dataclass(frozen=True)
class JobPage:
    items: list[Job]
    next_cursor: str | None


@dataclass(frozen=True)
class Result:
    job: Job
    files: list[StoredFile]
    bundle: StoredFile | None


@dataclass
class Caller:
    """Who asks: a key, the local user (GUI/CLI, ``key=None``), or anyone holding a job id."""

    key: ApiKey | None = None
    any_owner: bool = False

    @property
    def key_id(self) -> str | None:
        return self.key.id if self.key else None

    def owns(self, key_id: str | None) -> bool:
        return self.any_owner or key_id == self.key_id


def quota_headers(limit: int | None, used: int) -> dict[str, str]:
    if limit is None:
        return {}
    return {"X-Quota-Limit": str(limit), "X-Quota-Remaining": str(max(limit - used, 0))}

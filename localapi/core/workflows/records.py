"""What a workflow is, as the core hands it around: its steps, their jobs, and how far it has got."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from localapi.core.states import JobStatus


@dataclass(frozen=True)
class StepSpec:
    """One step as asked for: a tool, its params and its output format (None: the tool's first)."""

    tool: str
    params: dict[str, Any] = field(default_factory=dict)
    output_format: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"tool": self.tool, "params": self.params, "outputFormat": self.output_format}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> StepSpec:
        return cls(tool=data["tool"], params=dict(data.get("params") or {}), output_format=data.get("outputFormat"))


@dataclass(frozen=True)
class StepState:
    """A step of a workflow as it stands: its spec, its jobs (in input order) and the status they add up to."""

    spec: StepSpec
    status: JobStatus
    job_ids: list[str]
    progress: int


@dataclass(frozen=True)
class Workflow:
    id: str
    key_id: str | None
    status: JobStatus
    progress: int
    steps: list[StepState]
    input_file_ids: list[str]
    result_file_ids: list[str]
    bundle_file_id: str | None
    preset: str | None
    tag: str | None
    webhook_url: str | None
    current_step: int
    error_code: str | None
    error_message: str | None
    error_step: int | None
    created_at: float
    started_at: float | None
    finished_at: float | None
    updated_at: float

    def snapshot(self) -> dict[str, Any]:
        """The workflow as JSON-ready data (the event feed's copy of it)."""
        return {
            "id": self.id, "key_id": self.key_id, "status": str(self.status), "progress": self.progress,
            "steps": [{"spec": s.spec.to_json(), "status": str(s.status), "job_ids": s.job_ids,
                       "progress": s.progress} for s in self.steps],
            "input_file_ids": self.input_file_ids, "result_file_ids": self.result_file_ids,
            "bundle_file_id": self.bundle_file_id, "preset": self.preset, "tag": self.tag,
            "webhook_url": self.webhook_url, "current_step": self.current_step, "error_code": self.error_code,
            "error_message": self.error_message, "error_step": self.error_step, "created_at": self.created_at,
            "started_at": self.started_at, "finished_at": self.finished_at, "updated_at": self.updated_at,
        }

    @classmethod
    def from_snapshot(cls, data: dict[str, Any]) -> Workflow:
        steps = [StepState(StepSpec.from_json(s["spec"]), JobStatus(s["status"]), list(s["job_ids"]), s["progress"])
                 for s in data["steps"]]
        return cls(**{**data, "status": JobStatus(data["status"]), "steps": steps})


@dataclass(frozen=True)
class WorkflowPage:
    items: list[Workflow]
    next_cursor: str | None


@dataclass(frozen=True)
class Preset:
    name: str
    description: str
    steps: list[StepSpec]
    builtin: bool
    created_at: float | None = None
    updated_at: float | None = None

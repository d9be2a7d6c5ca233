"""Request and response schemas of /v1, split by direction."""

from __future__ import annotations

import functools
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from converters.base import Tool
from localapi.core.jobs.records import Job
from localapi.core.states import JobStatus
from localapi.core.workflows.records import Preset, Workflow


@functools.cache
def params_schema(model: type[BaseModel]) -> dict[str, Any]:
    """A tool's params as JSON Schema: made once per process (pydantic takes milliseconds per model)."""
    return model.model_json_schema(by_alias=True)


def iso(ts: float | None) -> datetime | None:
    return datetime.fromtimestamp(ts, UTC) if ts is not None else None


class Problem(BaseModel):
    """RFC 9457 problem details, with a stable machine-readable ``code``."""

    type: str
    title: str
    status: int
    detail: str
    code: str
    errors: dict[str, list[str]] | None = None


class ToolOut(BaseModel):
    id: str
    category: str
    title: str
    description: str
    accepts: list[str]
    produces: list[str]
    maxInputSizeBytes: int
    mergesInputs: bool
    params: dict[str, Any] = Field(description="JSON Schema of the tool's params")
    available: bool
    unavailableReason: str | None = None

    @classmethod
    def of(cls, tool: Tool, available: bool, reason: str | None) -> ToolOut:
        """A tool as the API publishes it, with its availability here (``Switches.tool_status``)."""
        return cls(
            id=tool.id, category=tool.category, title=tool.title, description=tool.description,
            accepts=list(tool.accepts), produces=list(tool.produces), maxInputSizeBytes=tool.max_input_size_bytes,
            mergesInputs=tool.merges_inputs, params=params_schema(tool.params),
            available=available, unavailableReason=reason,
        )


class FileRefOut(BaseModel):
    id: str
    originalName: str
    mimeType: str
    sizeBytes: int
    format: str | None = Field(None, description="Format judged from the content")
    createdAt: datetime
    expiresAt: datetime




TAG = Field(None, min_length=1, max_length=100, pattern=r"^[^\x00-\x1f]*$",
            description="Your label, to find it again with ?tag=")


class JobCreate(BaseModel):
    model_config = ConfigDict(json_schema_extra={"example": {
        "tool": "image-convert", "inputFileIds": ["file_..."], "outputFormat": "webp", "params": {"quality": 80}}})

    tool: str | None = Field(None, min_length=1, max_length=100, description="required unless preset is given")
    preset: str | None = Field(None, min_length=1, max_length=80, description=(
        "a one-step preset's name instead of tool, params and outputFormat (GET /presets); a preset of "
        "several steps is run with POST /workflows"))
    inputFileIds: list[str] = Field(min_length=1, max_length=100)
    params: dict[str, Any] | None = None
    outputFormat: str | None = Field(None, max_length=20)
    tag: str | None = TAG
    webhookUrl: str | None = Field(None, max_length=2048, description=(
        "Where this job's job.created, job.done, job.failed and job.canceled go, signed with the key's "
        "job secret (GET /webhooks/job-secret)"))


class JobRetry(BaseModel):
    params: dict[str, Any] | None = Field(None, description=(
        "laid over the job's own params: give passwords again here, since a job does not keep them"))


class StepIn(BaseModel):
    tool: str = Field(min_length=1, max_length=100)
    params: dict[str, Any] | None = None
    outputFormat: str | None = Field(None, max_length=20)


class WorkflowCreate(BaseModel):
    model_config = ConfigDict(json_schema_extra={"example": {
        "inputFileIds": ["file_..."], "steps": [
            {"tool": "document-to-pdf"}, {"tool": "pdf-compress", "params": {"level": "recommended"}}]}})

    inputFileIds: list[str] = Field(min_length=1, max_length=100)
    steps: list[StepIn] | None = Field(None, min_length=1, max_length=20, description="required unless preset is given")
    preset: str | None = Field(None, min_length=1, max_length=80, description="a preset's name instead of steps")
    tag: str | None = TAG
    webhookUrl: str | None = Field(None, max_length=2048, description=(
        "Where workflow.done, workflow.failed and workflow.canceled go, signed with the key's job secret"))


class PresetIn(BaseModel):
    model_config = ConfigDict(json_schema_extra={"example": {
        "name": "Small WebP", "description": "1024 px WebP", "steps": [
            {"tool": "image-resize", "params": {"width": 1024}, "outputFormat": "webp"}]}})

    name: str = Field(min_length=1, max_length=80)
    description: str = Field("", max_length=500)
    steps: list[StepIn] = Field(min_length=1, max_length=20)


class PresetUpdate(BaseModel):
    description: str = Field("", max_length=500)
    steps: list[StepIn] = Field(min_length=1, max_length=20)


class ResultFileOut(BaseModel):
    id: str
    name: str
    mimeType: str
    sizeBytes: int
    downloadUrl: str


class ResultOut(BaseModel):
    downloadUrl: str
    expiresAt: datetime
    files: list[ResultFileOut]


class JobOut(BaseModel):
    id: str
    tool: str
    status: JobStatus
    progress: int = Field(ge=0, le=100)
    outputFormat: str | None
    errorMessage: str | None
    errorCode: str | None
    inputFileIds: list[str]
    params: dict[str, Any]
    notes: list[str]
    createdAt: datetime
    startedAt: datetime | None
    finishedAt: datetime | None
    tag: str | None = None
    workflowId: str | None = Field(None, description="the workflow this job is a step of, if any")
    result: ResultOut | None = Field(default=None, description=(
        "A DONE job's download links, as GET /jobs/{id}/result gives them, when the call asked for them "
        "with include=result; otherwise null"))

    @classmethod
    def of(cls, job: Job) -> JobOut:
        return cls(
            id=job.id, tool=job.tool, status=job.status, progress=job.progress, outputFormat=job.output_format,
            errorMessage=job.error_message, errorCode=job.error_code, inputFileIds=job.input_file_ids,
            params=job.params, notes=job.notes, createdAt=iso(job.created_at),  # type: ignore[arg-type]
            startedAt=iso(job.started_at), finishedAt=iso(job.finished_at), tag=job.tag, workflowId=job.workflow_id,
        )


class StepOut(BaseModel):
    tool: str
    params: dict[str, Any]
    outputFormat: str | None
    status: JobStatus = Field(description="from its jobs; QUEUED until it begins, CANCELED if it never will")
    progress: int = Field(ge=0, le=100)
    jobIds: list[str] = Field(description="its jobs, in the order of their inputs (GET /jobs/{id})")


class WorkflowOut(BaseModel):
    id: str
    status: JobStatus
    progress: int = Field(ge=0, le=100)
    steps: list[StepOut]
    inputFileIds: list[str]
    preset: str | None
    tag: str | None
    createdAt: datetime
    startedAt: datetime | None
    finishedAt: datetime | None
    errorCode: str | None
    errorMessage: str | None = Field(description="which step failed, on which file, and why")
    failedStep: int | None = Field(None, description="the step (1-based) that failed or was canceled")
    result: ResultOut | None = Field(default=None, description="with include=result, a DONE workflow's links")

    @classmethod
    def of(cls, wf: Workflow) -> WorkflowOut:
        return cls(
            id=wf.id, status=wf.status, progress=wf.progress,
            steps=[StepOut(tool=s.spec.tool, params=s.spec.params, outputFormat=s.spec.output_format, status=s.status,
                           progress=s.progress, jobIds=s.job_ids) for s in wf.steps],
            inputFileIds=wf.input_file_ids, preset=wf.preset, tag=wf.tag,
            createdAt=iso(wf.created_at), startedAt=iso(wf.started_at),  # type: ignore[arg-type]
            finishedAt=iso(wf.finished_at), errorCode=wf.error_code, errorMessage=wf.error_message,
            failedStep=wf.error_step + 1 if wf.error_step is not None else None,
        )


class WorkflowPageOut(BaseModel):
    items: list[WorkflowOut]
    nextCursor: str | None


class StepSpecOut(BaseModel):
    tool: str
    params: dict[str, Any]
    outputFormat: str | None


class PresetOut(BaseModel):
    name: str
    description: str
    builtin: bool = Field(description="shipped with FileKiln: cannot be changed or deleted, only copied")
    steps: list[StepSpecOut]

    @classmethod
    def of(cls, preset: Preset) -> PresetOut:
        return cls(name=preset.name, description=preset.description, builtin=preset.builtin,
                   steps=[StepSpecOut(tool=s.tool, params=s.params, outputFormat=s.output_format)
                          for s in preset.steps])


class PresetListOut(BaseModel):
    items: list[PresetOut]


class JobPageOut(BaseModel):
    items: list[JobOut]
    nextCursor: str | None


WebhookEvent = Literal["job.created", "job.done", "job.failed", "job.canceled", "workflow.done", "workflow.failed",
                       "workflow.canceled"]


class WebhookCreate(BaseModel):
    model_config = ConfigDict(json_schema_extra={"example": {
        "url": "http://127.0.0.1:9000/filekiln", "events": ["job.done", "job.failed"]}})

    url: str = Field(min_length=1, max_length=2048)
    events: list[WebhookEvent] = Field(min_length=1, max_length=7)


class WebhookOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: str
    url: str
    events: list[WebhookEvent]
    createdAt: datetime = Field(validation_alias="created_at")
    disabledAt: datetime | None = Field(None, validation_alias="disabled_at",
                                        description="set when the target answered 410 Gone; nothing is sent since")


class WebhookCreatedOut(WebhookOut):
    secret: str = Field(description="signs this hook's deliveries; shown only in this answer")


class WebhookListOut(BaseModel):
    items: list[WebhookOut]


class JobSecretOut(BaseModel):
    secret: str = Field(description="signs the deliveries to the webhookUrl of this key's jobs")
    createdAt: datetime


class WorkerProcessOut(BaseModel):
    """A process running workers on this install (``filekiln serve``, ``filekiln worker``, the desktop app)."""

    id: str = Field(description="host:pid:start-time; the `worker` its jobs record")
    host: str
    pid: int
    slots: int = Field(description="jobs it runs at once")
    startedAt: datetime
    lastSeenAt: datetime = Field(description="its last heartbeat; one older than a minute means it is gone")
    cannotRun: list[str] = Field(description="ids of the tools whose jobs it leaves to other workers: their "
                                             "engines or models are missing there, or they would run there only "
                                             "in part while another worker runs them in full")
    inPart: list[str] = Field(default_factory=list, description="ids of the tools it runs without an engine they "
                                                                "keep running (Document to PDF without LibreOffice)")


class BackendOut(BaseModel):
    kind: str = Field(description="sqlite or postgresql for the database; sqlite or redis for the queue; "
                                  "local or s3 for the file store")
    target: str = Field(description="the file, URL (without its password) or bucket")
    ok: bool
    error: str | None = Field(None, description="what is wrong, in words")


class PublicHealthOut(BaseModel):
    """``GET /health`` without a key: whether the service answers, its versions and engines. Where the
    install keeps its data, its hosts and processes are shown to a key only."""

    status: Literal["ok"]
    version: str
    apiVersion: str
    maintenance: bool
    engines: dict[str, dict[str, Any]]


class HealthOut(PublicHealthOut):
    """``GET /health`` with a key."""

    workers: bool = Field(description="whether this process runs workers")
    workerProcesses: list[WorkerProcessOut] = Field(
        default_factory=list, description="the alive processes running workers on this install, oldest first")
    waitingForWorker: dict[str, int] = Field(
        default_factory=dict, description="queued jobs, by tool, that no alive worker takes: they wait for a "
                                          "worker that can run them")
    queued: int
    brokenModules: dict[str, str] = Field(default_factory=dict, description="tool modules that failed to load")
    backends: dict[str, BackendOut] = Field(
        default_factory=dict, description="what the install runs on: database, queue and storage, each with its "
                                          "state (at most 5 s old)")
    eventListeners: int = Field(0, description="waiting requests and event streams open in this process")


class UsageOut(BaseModel):
    keyId: str
    name: str
    dailyJobQuota: int | None
    jobsToday: int
    remainingToday: int | None
    resetsAt: datetime

from __future__ import annotations

import asyncio
import time
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Header, Query, Request, Response
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from localapi.core.errors import InvalidParams
from localapi.core.files import StoredFile
from localapi.core.idempotency import request_hash
from localapi.core.jobs import Caller, Job, quota_headers
from localapi.core.jobs.events import TERMINAL_TYPES
from localapi.core.keys import ApiKey
from localapi.core.service import Service
from localapi.core.states import JobStatus
from localapi.http.deps import CallerDep, JobDep, KeyDep, OwnJobDep, ServiceDep
from localapi.http.problems import problems
from localapi.http.routes.downloads import content_disposition
from localapi.http.schemas import JobCreate, JobOut, JobPageOut, JobRetry, ResultFileOut, ResultOut, iso

router = APIRouter(prefix="/jobs", tags=["jobs"])

CURSOR_PATTERN = r"^[0-9]{1,12}(\.[0-9]{1,9})?~job_[0-9a-f]{32}$"  # strict: whatever matches, parses


MAX_WAIT_SECONDS = 60.0
WaitQuery = Annotated[float, Query(ge=0, description=(
    "Answer as soon as the job is DONE, FAILED or CANCELED, or after this many seconds (at most 60; "
    "more is taken as 60) with the job as it stands."))]
IncludeQuery = Annotated[Literal["result"] | None, Query(description=(
    "result: a DONE job's answer carries its download links in ``result`` (as GET /jobs/{id}/result "
    "gives them), so a script can create, wait and download without another call"))]


def job_out(job: Job) -> JobOut:
    return JobOut.of(job)


async def wait_for_end(service: Service, job: Job, seconds: float) -> Job:
    """``job`` once it has ended, or as it stands after ``seconds``; holds no thread while it waits."""
    seconds = min(seconds, MAX_WAIT_SECONDS)
    if seconds <= 0 or job.status.finished:
        return job
    listener = service.events.listen(job_id=job.id, types=TERMINAL_TYPES)
    try:
        # the job may have ended before the listener was in place; one indexed read, on the loop
        current = service.jobs.get(job.id, Caller(any_owner=True))
        if current.status.finished:
            return current
        try:
            event = await asyncio.wait_for(listener.queue.get(), timeout=seconds)
            if event is not None:
                return event.job
            return service.jobs.get(job.id, Caller(any_owner=True))  # the server is stopping: as it stands
        except TimeoutError:
            return service.jobs.get(job.id, Caller(any_owner=True))
    finally:
        service.events.unlisten(listener)


def job_answer(service: Service, request: Request, job: Job, include: str | None) -> JobOut:
    """The job, with its download links when asked for (``include=result``) and it is DONE."""
    out = job_out(job)
    if include == "result" and job.status == JobStatus.DONE:
        result = service.jobs.result_of(job)  # the job as it ended: no need to read it again
        out.result = links_out(service, request, result.files, result.bundle)
    return out


@router.post("", status_code=201, response_model=JobOut,
             responses=problems(400, 401, 402, 409, 413, 415, 422, 429, 503, 507))
async def create_job(body: JobCreate, request: Request, service: ServiceDep, key: KeyDep,
                     idempotency_key: Annotated[str | None, Header(max_length=255)] = None,
                     wait: WaitQuery = 0, include: IncludeQuery = None) -> Any:
    """Queue a job. With ``Idempotency-Key``, repeating the same request returns the first
    response (``Idempotent-Replayed: true``) instead of making a second job. With ``wait``, the
    answer (still 201) comes when the job has ended or the wait ran out, with the job as it then is;
    with ``include=result`` as well, a DONE job comes with its download links."""
    status, payload, headers, job = await run_in_threadpool(_create, body, service, key, idempotency_key)
    if job is not None and (wait > 0 or include):
        if wait > 0:
            job = await wait_for_end(service, job, wait)
        payload = job_answer(service, request, job, include).model_dump(mode="json")
    return JSONResponse(payload, status_code=status, headers=headers)


def _create(body: JobCreate, service: Service, key: ApiKey,
            idempotency_key: str | None) -> tuple[int, dict[str, Any], dict[str, str], Job | None]:
    """The answer's status, body and headers, and the new job (None for a replayed answer, which is
    given as it was the first time)."""
    caller = Caller(key=key)
    req_hash = request_hash("POST /jobs", body.model_dump(mode="json"))
    if idempotency_key:
        replay = service.idempotency.begin(key.id, idempotency_key, req_hash)
        if replay is not None:
            return replay.status_code, replay.body, {"Idempotent-Replayed": "true"}, None
    try:
        tool, params, output_format = job_request(service, body)
        job = service.jobs.create(caller, tool, body.inputFileIds, params, output_format,
                                  webhook_url=service.webhooks.check_url(body.webhookUrl, "webhookUrl"), tag=body.tag)
    except BaseException:
        if idempotency_key:
            service.idempotency.abandon(key.id, idempotency_key)
        raise
    payload = job_out(job).model_dump(mode="json")
    if idempotency_key:
        service.idempotency.complete(key.id, idempotency_key, 201, payload, req_hash)
    quota = key.daily_job_quota
    headers = {} if quota is None else quota_headers(quota, service.keys.jobs_today(key.id))
    return 201, payload, headers, job


def job_request(service: Service, body: JobCreate) -> tuple[str, dict[str, Any] | None, str | None]:
    """The tool, params and output format of a create request: its own, or its one-step preset's."""
    if body.preset is None:
        if body.tool is None:
            raise InvalidParams("Give a tool or a preset.", errors={"tool": ["required unless preset is given"]})
        return body.tool, body.params, body.outputFormat
    if body.tool is not None or body.params is not None or body.outputFormat is not None:
        raise InvalidParams("A preset brings its own tool, params and output format; give the preset alone.",
                            errors={"preset": ["not with tool, params or outputFormat"]})
    steps, _ = service.workflows.resolve(None, body.preset)
    if len(steps) > 1:
        raise InvalidParams(f"The preset {body.preset!r} has {len(steps)} steps: run it with POST /workflows.",
                            code="preset_has_steps", errors={"preset": ["several steps: use POST /workflows"]})
    return steps[0].tool, steps[0].params, steps[0].output_format


@router.get("", response_model=JobPageOut, responses=problems(400, 401, 422, 429))
def list_jobs(
    service: ServiceDep,
    caller: CallerDep,
    status: JobStatus | None = None,
    tool: Annotated[str | None, Query(max_length=100)] = None,
    tag: Annotated[str | None, Query(max_length=100)] = None,
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
    cursor: Annotated[str | None, Query(max_length=200, pattern=CURSOR_PATTERN)] = None,
) -> JobPageOut:
    """This key's jobs, newest first; follow ``nextCursor`` for the next page."""
    try:
        page = service.jobs.page(caller, status=status, tool=tool, tag=tag, limit=limit, cursor=cursor)
    except ValueError:
        raise InvalidParams("The cursor is not valid.", errors={"cursor": ["not a cursor from this API"]}) from None
    return JobPageOut(items=[job_out(j) for j in page.items], nextCursor=page.next_cursor)


@router.get("/{id}", response_model=JobOut, responses=problems(401, 404, 429))
async def get_job(job: JobDep, service: ServiceDep, request: Request, wait: WaitQuery = 0,
                  include: IncludeQuery = None) -> JobOut:
    """The job as it stands. With ``wait``, the answer comes as soon as it is DONE, FAILED or
    CANCELED (or when the wait runs out) instead of at once; with ``include=result``, a DONE job comes
    with its download links. Answers without a key."""
    return job_answer(service, request, await wait_for_end(service, job, wait), include)


@router.post("/{id}/cancel", response_model=JobOut, responses=problems(401, 404, 409, 429))
def cancel_job(job: OwnJobDep, service: ServiceDep, caller: CallerDep) -> JobOut:
    """Cancel a QUEUED or PROCESSING job: its process is killed and partial output removed."""
    return job_out(service.jobs.cancel(job.id, caller))


@router.post("/{id}/retry", status_code=201, response_model=JobOut,
             responses=problems(400, 401, 402, 404, 409, 410, 413, 415, 422, 429, 503))
def retry_job(job: OwnJobDep, service: ServiceDep, caller: CallerDep, body: JobRetry | None = None) -> JobOut:
    """Run a FAILED or CANCELED job again, as a new job with the same inputs (while they are kept),
    tool, params, output format and tag. A job does not keep its passwords: give them in ``params``."""
    return job_out(service.jobs.retry(job.id, caller, body.params if body else None))


@router.delete("/{id}", status_code=204, response_class=Response, responses=problems(401, 404, 409, 429))
def delete_job(job: OwnJobDep, service: ServiceDep, caller: CallerDep) -> Response:
    """Delete a job and its results (a running job is canceled first). Inputs are kept. A step of a
    workflow still running is refused (409 ``workflow_running``): cancel the workflow instead."""
    service.jobs.delete(job.id, caller)
    return Response(status_code=204)


def link_for(service: Service, request: Request, f: StoredFile, now: float) -> tuple[str, int]:
    """A download link that ends with the earlier of ``download_ttl_seconds`` and the file's retention: the
    API's own signed link, or the bucket's presigned URL (``s3_presigned_downloads``)."""
    expires = int(min(now + service.settings.download_ttl_seconds, f.expires_at))
    presigned = service.files.blobs.presign(f.id, expires - int(now), content_disposition(f.original_name),
                                            f.mime_type)
    if presigned is not None:
        return presigned, expires
    base = str(request.base_url).rstrip("/") + "/v1"
    return base + service.signer.path(f.id, f.original_name, expires), expires


@router.get("/{id}/result", response_model=ResultOut, responses=problems(401, 404, 409, 410, 429))
async def get_result(job: JobDep, service: ServiceDep, request: Request) -> ResultOut:
    """Signed download links of a DONE job's output: one file, or a ZIP of several."""
    # async: a few indexed reads and HMACs cost less on the event loop than a hop to a thread
    return result_out(service, request, job.id)


def result_out(service: Service, request: Request, job_id: str) -> ResultOut:
    result = service.jobs.result(job_id, Caller(any_owner=True))
    return links_out(service, request, result.files, result.bundle)


def links_out(service: Service, request: Request, files: list[StoredFile], bundle: StoredFile | None) -> ResultOut:
    """Signed links to each file, and the main link: the one file, or the ZIP of several."""
    now = time.time()
    shown = []
    for f in files:
        url, _ = link_for(service, request, f, now)
        shown.append(ResultFileOut(id=f.id, name=f.original_name, mimeType=f.mime_type, sizeBytes=f.size_bytes,
                                   downloadUrl=url))
    url, expires = link_for(service, request, bundle or files[0], now)
    return ResultOut(downloadUrl=url, expiresAt=iso(expires), files=shown)  # type: ignore[arg-type]

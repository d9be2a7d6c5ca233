"""Server-sent events: a job's changes as they happen, a workflow's jobs and its end, or every job and
workflow of the calling key.

Each event has ``id:`` (its place in the feed, for ``Last-Event-ID``), ``event:`` (``job.queued``,
``job.processing``, ``job.progress``, ``job.done``, ``job.failed``, ``job.canceled``) and the Job as
``data:``. Progress is coalesced to at most ``PROGRESS_PER_SECOND`` events a second per job, and what
a client sees is always in order and, for one job, ends with its terminal event.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Callable
from typing import Annotated, Any

from fastapi import APIRouter, Header, Path, Request
from fastapi.responses import StreamingResponse
from starlette.concurrency import run_in_threadpool

from localapi.core.jobs import Caller
from localapi.core.jobs.events import (
    PROGRESS,
    STREAMED_TYPES,
    TYPE_OF_STATUS,
    WORKFLOW_TYPES,
    JobEvent,
    Listener,
    of_workflow,
)
from localapi.core.service import Service
from localapi.core.workflows.service import WORKFLOW_TYPE_OF_STATUS
from localapi.http.deps import CallerDep, JobDep, KeyDep, ServiceDep, anonymous_caller, sent_key
from localapi.http.problems import problems
from localapi.http.schemas import JobOut, WorkflowOut

router = APIRouter(tags=["events"])

KEEP_ALIVE_SECONDS = 15.0
PROGRESS_PER_SECOND = 10
PROGRESS_INTERVAL = 1 / PROGRESS_PER_SECOND
SSE_HEADERS = {"Cache-Control": "no-store", "X-Accel-Buffering": "no"}
EVENT_STREAM: dict[int | str, dict[str, Any]] = {200: {"content": {"text/event-stream": {"schema": {"type": "string"}}},
                      "description": "A stream of server-sent events; `data` is the Job as JSON."}}
LastEventId = Annotated[str | None, Header(alias="Last-Event-ID", max_length=20, include_in_schema=False)]


def frame(event: JobEvent) -> bytes:
    workflow = event.workflow
    shown = WorkflowOut.of(workflow) if workflow is not None else JobOut.of(event.job)
    data = json.dumps(shown.model_dump(mode="json"), separators=(",", ":"))
    return f"id: {event.seq}\nevent: {event.type}\ndata: {data}\n\n".encode()


MAX_SEQ = 2**63 - 1  # the largest event number the database holds (a signed 64-bit integer)


def last_seq(header: str | None) -> int | None:
    """The event a client last saw: ``Last-Event-ID`` as a number between 0 and :data:`MAX_SEQ` (one past
    every event ever recorded means none is sent again), or None when it is absent or not a number."""
    try:
        return min(max(int(header), 0), MAX_SEQ) if header is not None else None
    except ValueError:
        return None


async def stream(service: Service, listener: Listener, backlog: list[JobEvent], request: Request,
                 until: Callable[[JobEvent], bool] | None) -> AsyncIterator[bytes]:
    """Send ``backlog``, then live events, coalescing progress; stop after the event ``until`` says is the last."""
    sent = 0  # the newest event sent: live events the backlog already had are skipped
    last_progress: dict[str, float] = {}
    held: dict[str, JobEvent] = {}  # the newest progress of a job, waiting for its turn
    pending = list(backlog)
    stopping = False  # the server is stopping: what is pending goes out, then the stream ends
    try:
        yield b": connected\n\n"
        while True:
            for event in pending:
                if event.seq and event.seq <= sent:
                    continue
                job_id = event.subject_id
                if event.type == PROGRESS and time.monotonic() - last_progress.get(job_id, 0.0) < PROGRESS_INTERVAL:
                    held[job_id] = event
                    continue
                held.pop(job_id, None)  # sent now, or superseded by a change of state
                if event.type == PROGRESS:
                    last_progress[job_id] = time.monotonic()
                sent = max(sent, event.seq)
                yield frame(event)
                if until is not None and until(event):
                    return
            if stopping:
                return
            pending = []
            timeout = KEEP_ALIVE_SECONDS if not held else PROGRESS_INTERVAL
            try:
                arrived: list[JobEvent | None] = [await asyncio.wait_for(listener.queue.get(), timeout=timeout)]
                while not listener.queue.empty():
                    arrived.append(listener.queue.get_nowait())
                stopping = None in arrived
                pending = [e for e in arrived[: arrived.index(None) if stopping else None] if e is not None]
            except TimeoutError:
                if held:
                    pending, held = sorted(held.values(), key=lambda e: e.seq), {}
                    for event in pending:
                        last_progress[event.subject_id] = 0.0
                elif await request.is_disconnected():
                    return
                else:
                    yield b": keep-alive\n\n"
    finally:
        service.events.unlisten(listener)


@router.get("/jobs/{id}/events", response_class=StreamingResponse,
            responses={**EVENT_STREAM, **problems(401, 404, 429)})
async def job_events(job: JobDep, service: ServiceDep, request: Request,
                     last_event_id: LastEventId = None) -> StreamingResponse:
    """This job's changes as server-sent events, ending after its terminal event (DONE, FAILED,
    CANCELED). Without ``Last-Event-ID`` the stream starts with the job as it stands; with it, every
    change after that event is sent first, and a job that has ended gives its end (again) at once, as a
    workflow does. Answers without a key, like ``GET /jobs/{id}``."""
    key = await sent_key(request)
    owner, limit = ((f"key:{key.id}", service.settings.max_event_streams_per_key) if key is not None
                    else (anonymous_caller(request), service.settings.max_event_streams_per_client))
    listener = service.events.listen(job_id=job.id, owner=owner, limit=limit)
    after = last_seq(last_event_id)
    if after is not None:
        backlog = await run_in_threadpool(service.events.since, after, job_id=job.id)
        backlog = [e for e in backlog if e.type in STREAMED_TYPES]
        if not any(ends_job(e) for e in backlog):
            now = await run_in_threadpool(_now_event, service, job.id)
            if ends_job(now):  # ended before the events it missed were kept, or at the event it last saw
                backlog.append(now)
    else:
        backlog = [await run_in_threadpool(_now_event, service, job.id)]
    return StreamingResponse(stream(service, listener, backlog, request, until=ends_job),
                             media_type="text/event-stream", headers=SSE_HEADERS)


def ends_job(event: JobEvent) -> bool:
    return event.terminal


def ends_workflow(event: JobEvent) -> bool:
    return event.type in WORKFLOW_TYPES


@router.get("/workflows/{id}/events", response_class=StreamingResponse,
            responses={**EVENT_STREAM, **problems(401, 404, 429)})
async def workflow_events(id: Annotated[str, Path(description="The workflow id", max_length=100)],
                          service: ServiceDep, caller: CallerDep, request: Request,
                          last_event_id: LastEventId = None) -> StreamingResponse:
    """The changes of this workflow's jobs (each step's, as they are made) and, last, its end:
    ``workflow.done``, ``workflow.failed`` or ``workflow.canceled`` with the Workflow as ``data``. A
    workflow that has ended already gives its end at once. ``Last-Event-ID`` resumes as for jobs."""
    workflow = service.workflows.get(id, caller)
    listener = service.events.listen(workflow_id=workflow.id, owner=f"key:{workflow.key_id}",
                                     limit=service.settings.max_event_streams_per_key)
    after = last_seq(last_event_id)
    backlog: list[JobEvent] = []
    if after is not None:
        backlog = [e for e in await run_in_threadpool(service.events.since, after, key_id=workflow.key_id)
                   if e.type in STREAMED_TYPES and of_workflow(e, workflow.id)]
    current = service.workflows.get(id, caller)
    if current.status.finished and not any(ends_workflow(e) for e in backlog):
        latest = service.events.latest(current.id)  # its end as the feed recorded it, while kept
        backlog.append(latest if latest is not None and ends_workflow(latest) else JobEvent(
            seq=0, type=WORKFLOW_TYPE_OF_STATUS[current.status], subject=current, created_at=current.updated_at))
    return StreamingResponse(stream(service, listener, backlog, request, until=ends_workflow),
                             media_type="text/event-stream", headers=SSE_HEADERS)


def _now_event(service: Service, job_id: str) -> JobEvent:
    """The job as it stands, as the event that made it so (the feed's latest for it, when still kept)."""
    for _ in range(3):  # the feed's latest first: a change between the two reads shows, and is read again
        latest = service.events.latest(job_id)
        job = service.jobs.get(job_id, Caller(any_owner=True))
        if latest is None or latest.job.status == job.status:
            break
    seq = latest.seq if latest is not None and latest.job.status == job.status else 0
    return JobEvent(seq=seq, type=TYPE_OF_STATUS[job.status], subject=job, created_at=job.updated_at)


@router.get("/events", response_class=StreamingResponse, responses={**EVENT_STREAM, **problems(401, 429)})
async def key_events(service: ServiceDep, key: KeyDep, request: Request,
                     last_event_id: LastEventId = None) -> StreamingResponse:
    """Every change of every job of the calling key, as server-sent events, with a keep-alive comment
    every 15 s. With ``Last-Event-ID``, the changes after that event are sent first."""
    listener = service.events.listen(key_id=key.id, owner=f"key:{key.id}",
                                     limit=service.settings.max_event_streams_per_key)
    after = last_seq(last_event_id)
    backlog: list[JobEvent] = []
    if after is not None:
        backlog = [e for e in await run_in_threadpool(service.events.since, after, key_id=key.id)
                   if e.type in STREAMED_TYPES]
    return StreamingResponse(stream(service, listener, backlog, request, until=None),
                             media_type="text/event-stream", headers=SSE_HEADERS)

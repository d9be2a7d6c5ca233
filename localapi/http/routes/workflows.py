"""Workflows: several steps, each run as ordinary jobs, the outputs of one the inputs of the next."""

from __future__ import annotations

import asyncio
from typing import Annotated, Any

from fastapi import APIRouter, Header, Path, Query, Request
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from localapi.core.errors import InvalidParams
from localapi.core.idempotency import request_hash
from localapi.core.jobs import Caller
from localapi.core.jobs.events import WORKFLOW_TYPES
from localapi.core.service import Service
from localapi.core.states import JobStatus
from localapi.core.workflows.records import Workflow
from localapi.http.deps import CallerDep, KeyDep, ServiceDep
from localapi.http.problems import problems
from localapi.http.routes.jobs import CURSOR_PATTERN, MAX_WAIT_SECONDS, IncludeQuery, WaitQuery, links_out
from localapi.http.schemas import ResultOut, WorkflowCreate, WorkflowOut, WorkflowPageOut

router = APIRouter(prefix="/workflows", tags=["workflows"])

WorkflowId = Annotated[str, Path(description="The workflow id", max_length=100)]
WORKFLOW_CURSOR = CURSOR_PATTERN.replace("job_", "wf_")


async def wait_for_workflow(service: Service, workflow: Workflow, caller: Caller, seconds: float) -> Workflow:
    """``workflow`` once it has ended, or as it stands after ``seconds``; holds no thread while it waits."""
    seconds = min(seconds, MAX_WAIT_SECONDS)
    if seconds <= 0 or workflow.status.finished:
        return workflow
    listener = service.events.listen(job_id=workflow.id, types=WORKFLOW_TYPES)
    try:
        current = service.workflows.get(workflow.id, caller)  # it may have ended before the listener was there
        if current.status.finished:
            return current
        try:
            await asyncio.wait_for(listener.queue.get(), timeout=seconds)
        except TimeoutError:
            pass
        return service.workflows.get(workflow.id, caller)
    finally:
        service.events.unlisten(listener)


def answer(service: Service, request: Request, workflow: Workflow, caller: Caller, include: str | None) -> WorkflowOut:
    out = WorkflowOut.of(workflow)
    if include == "result" and workflow.status == JobStatus.DONE:
        out.result = result_of(service, request, workflow.id, caller)
    return out


def result_of(service: Service, request: Request, workflow_id: str, caller: Caller) -> ResultOut:
    files, bundle = service.workflows.result_files(workflow_id, caller)
    return links_out(service, request, files, bundle)


@router.post("", status_code=201, response_model=WorkflowOut,
             responses=problems(400, 401, 402, 409, 413, 415, 422, 429, 503))
async def create_workflow(body: WorkflowCreate, request: Request, service: ServiceDep, key: KeyDep,
                          idempotency_key: Annotated[str | None, Header(max_length=255)] = None,
                          wait: WaitQuery = 0, include: IncludeQuery = None) -> Any:
    """Check every step (tool, params, output format, and that each step takes what the one before
    makes), then run the first. A merging tool (pdf-merge, image-to-pdf ...) takes all of a step's
    inputs at once; any other tool runs once per input. With ``wait``, the answer comes when the
    workflow has ended or the wait ran out. ``Idempotency-Key`` works as on POST /jobs."""
    caller = Caller(key=key)
    status, payload, headers, workflow = await run_in_threadpool(_create, body, service, caller, idempotency_key)
    if workflow is not None and (wait > 0 or include):
        workflow = await wait_for_workflow(service, workflow, caller, wait)
        payload = answer(service, request, workflow, caller, include).model_dump(mode="json")
    return JSONResponse(payload, status_code=status, headers=headers)


def _create(body: WorkflowCreate, service: Service, caller: Caller,
            idempotency_key: str | None) -> tuple[int, dict[str, Any], dict[str, str], Workflow | None]:
    """The answer's status, body and headers, and the new workflow (None for a replayed answer)."""
    assert caller.key is not None
    steps = [s.model_dump() for s in body.steps] if body.steps is not None else None
    if steps is None and body.preset is None:
        raise InvalidParams("Give steps or a preset.", errors={"steps": ["required unless preset is given"]})
    req_hash = request_hash("POST /workflows", body.model_dump(mode="json"))
    if idempotency_key:
        replay = service.idempotency.begin(caller.key.id, idempotency_key, req_hash)
        if replay is not None:
            return replay.status_code, replay.body, {"Idempotent-Replayed": "true"}, None
    try:
        workflow = service.workflows.create(caller, body.inputFileIds, steps, body.preset, body.tag,
                                            service.webhooks.check_url(body.webhookUrl, "webhookUrl"))
    except BaseException:
        if idempotency_key:
            service.idempotency.abandon(caller.key.id, idempotency_key)
        raise
    payload = WorkflowOut.of(workflow).model_dump(mode="json")
    if idempotency_key:
        service.idempotency.complete(caller.key.id, idempotency_key, 201, payload, req_hash)
    return 201, payload, {}, workflow


@router.get("", response_model=WorkflowPageOut, responses=problems(400, 401, 422, 429))
def list_workflows(
    service: ServiceDep,
    caller: CallerDep,
    status: JobStatus | None = None,
    tag: Annotated[str | None, Query(max_length=100)] = None,
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
    cursor: Annotated[str | None, Query(max_length=200, pattern=WORKFLOW_CURSOR)] = None,
) -> WorkflowPageOut:
    """This key's workflows, newest first; follow ``nextCursor`` for the next page."""
    page = service.workflows.page(caller, status=status, tag=tag, limit=limit, cursor=cursor)
    return WorkflowPageOut(items=[WorkflowOut.of(w) for w in page.items], nextCursor=page.next_cursor)


@router.get("/{id}", response_model=WorkflowOut, responses=problems(401, 404, 429))
async def get_workflow(id: WorkflowId, service: ServiceDep, caller: CallerDep, request: Request,
                       wait: WaitQuery = 0, include: IncludeQuery = None) -> WorkflowOut:
    """The workflow as it stands, each step with its jobs; with ``wait``, once it has ended."""
    workflow = await wait_for_workflow(service, service.workflows.get(id, caller), caller, wait)
    return answer(service, request, workflow, caller, include)


@router.get("/{id}/result", response_model=ResultOut, responses=problems(401, 404, 409, 410, 429))
def get_workflow_result(id: WorkflowId, service: ServiceDep, caller: CallerDep, request: Request) -> ResultOut:
    """Signed download links of a DONE workflow's outputs (its last step's): one file, or a ZIP of several."""
    return result_of(service, request, id, caller)


@router.post("/{id}/cancel", response_model=WorkflowOut, responses=problems(401, 404, 409, 429))
def cancel_workflow(id: WorkflowId, service: ServiceDep, caller: CallerDep) -> WorkflowOut:
    """Cancel the running jobs and every step not begun."""
    return WorkflowOut.of(service.workflows.cancel(id, caller))

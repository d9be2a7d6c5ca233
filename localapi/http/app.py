"""The app factory. Nothing is built at import time: the caller chooses the service."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
from fastapi import APIRouter, FastAPI
from fastapi.openapi.utils import get_openapi
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from localapi import API_VERSION
from localapi.core.idempotency import HEARTBEAT_SECONDS, IdempotencyStore
from localapi.core.jobs.records import Job
from localapi.core.service import Service
from localapi.core.workflows.records import Workflow
from localapi.http import problems
from localapi.http.middleware import JsonBodyGate, LocalOnlyMiddleware
from localapi.http.problems import PROBLEM_MEDIA_TYPE, problem_response
from localapi.http.routes import downloads, events, files, jobs, presets, system, tools, webhooks, workflows
from localapi.http.schemas import JobOut, WorkflowOut

log = logging.getLogger("filekiln.http")

DESCRIPTION = """FileKiln's local conversion API. Upload a file (`POST /files`), create a job
(`POST /jobs`), poll it (`GET /jobs/{id}`) and fetch the signed download link
(`GET /jobs/{id}/result`). Send your key as `X-API-Key: <key>` or `Authorization: Bearer <key>`;
keys are made in the app's Keys panel or with `filekiln keys create`. Errors are
`application/problem+json` with a stable `code`."""


def render_subject(subject: Job | Workflow) -> dict[str, Any]:
    """A job or a workflow as a webhook delivery carries it: as the API shows it."""
    shown = JobOut.of(subject) if isinstance(subject, Job) else WorkflowOut.of(subject)
    return shown.model_dump(mode="json")


def create_app(service: Service) -> FastAPI:
    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        service.events.start()  # waiting requests and event streams are woken by the feed
        # webhook bodies carry the job as GET /jobs/{id} shows it
        service.webhooks.start(render=render_subject)
        holding = asyncio.create_task(hold_claims(service.idempotency, service.settings.idempotency_heartbeat_seconds))
        yield
        holding.cancel()
        # the requests that held them were cancelled with the server: their keys are free to retry
        await anyio.to_thread.run_sync(service.idempotency.release)
        service.webhooks.stop()

    app = FastAPI(
        lifespan=lifespan,
        title="FileKiln API", version=API_VERSION, description=DESCRIPTION,
        openapi_url="/v1/openapi.json", docs_url=None, redoc_url=None,  # docs: routes/system.py, no CDN
        generate_unique_id_function=lambda route: route.name,  # operationId = the route function's name
    )
    app.state.service = service
    v1 = APIRouter(prefix="/v1")
    for module in (tools, files, jobs, workflows, presets, events, downloads, system, webhooks):
        v1.include_router(module.router)
    app.include_router(v1)
    problems.install(app)
    app.add_middleware(JsonBodyGate, api=app, service=service)
    app.add_middleware(LocalOnlyMiddleware, enforce_host=service.settings.loopback_only, port=service.settings.port)
    app.add_middleware(AnswerWhenStopping)

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = get_openapi(title=app.title, version=app.version, description=app.description,
                                 routes=app.routes)
            schema["components"].setdefault("securitySchemes", {}).update({
                "apiKey": {"type": "apiKey", "in": "header", "name": "X-API-Key"},
                "bearer": {"type": "http", "scheme": "bearer"},
            })
            schema["security"] = [{"apiKey": []}, {"bearer": []}]
            _problem_content_types(schema)
            _links(schema)
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
    return app


async def hold_claims(store: IdempotencyStore, every: float = HEARTBEAT_SECONDS) -> None:
    """Mark this process's Idempotency-Key claims as held every ``every`` seconds for as long as it serves
    (the ``idempotency_heartbeat_seconds`` setting): other processes on the database take over the claims
    of one that stopped marking them."""
    while True:
        await asyncio.sleep(every)
        try:
            await anyio.to_thread.run_sync(store.heartbeat)
        except Exception:  # a busy or full disk: the next beat tries again, well before the claims go stale
            log.warning("could not mark this process's Idempotency-Key claims as held", exc_info=True)


class AnswerWhenStopping:
    """uvicorn cancels the requests still running when its graceful shutdown runs out (an upload that
    stalls, say). Such a request is answered 503 ``shutting_down`` with ``Retry-After``, instead of the
    cancel escaping as a 500 with a traceback; one whose answer had begun is cut off as before."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def watched(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, receive, watched)
        except asyncio.CancelledError:
            if started:
                raise
            log.info("stopping: %s %s was cut off before its answer", scope["method"], scope["path"])
            response = problem_response(503, "shutting_down", "FileKiln is stopping; send the request again.",
                                        title="Shutting down", headers={"Retry-After": "5", "Connection": "close"})
            await response(scope, receive, send)


def _links(schema: dict[str, Any]) -> None:
    """OpenAPI links: what a client can do next with the id a creation returned."""
    paths = schema["paths"]
    from_id = {"id": "$response.body#/id"}
    paths["/v1/files"]["post"]["responses"]["201"]["links"] = {
        "GetFile": {"operationId": "get_file", "parameters": from_id},
        "DeleteFile": {"operationId": "delete_file", "parameters": from_id},
    }
    paths["/v1/jobs"]["post"]["responses"]["201"]["links"] = {
        "GetJob": {"operationId": "get_job", "parameters": from_id},
        "GetResult": {"operationId": "get_result", "parameters": from_id},
        "CancelJob": {"operationId": "cancel_job", "parameters": from_id},
        "DeleteJob": {"operationId": "delete_job", "parameters": from_id},
        "RetryJob": {"operationId": "retry_job", "parameters": from_id},
    }
    paths["/v1/workflows"]["post"]["responses"]["201"]["links"] = {
        "GetWorkflow": {"operationId": "get_workflow", "parameters": from_id},
        "GetWorkflowResult": {"operationId": "get_workflow_result", "parameters": from_id},
        "CancelWorkflow": {"operationId": "cancel_workflow", "parameters": from_id},
    }


# operations that answer without a key (the contract's machine-readable description); "{}" = anonymous
ANONYMOUS_OK = {("/v1/jobs/{id}", "get"), ("/v1/jobs/{id}/result", "get"), ("/v1/health", "get")}
NO_AUTH = {("/v1/downloads/{file_id}/{name}", "get")}


def _problem_content_types(schema: dict[str, Any]) -> None:
    """Error responses are problem+json with the Problem schema (FastAPI's default 422 included);
    operations that need no key say so."""
    components = schema.setdefault("components", {}).setdefault("schemas", {})
    components.pop("HTTPValidationError", None)
    components.pop("ValidationError", None)
    problem = {"schema": {"$ref": "#/components/schemas/Problem"}}
    for path, item in schema.get("paths", {}).items():
        for method, operation in item.items():
            for status, response in operation.get("responses", {}).items():
                if status.isdigit() and int(status) >= 400:
                    response["content"] = {PROBLEM_MEDIA_TYPE: problem}
            if (path, method) in ANONYMOUS_OK:
                operation["security"] = [{}, {"apiKey": []}, {"bearer": []}]
            elif (path, method) in NO_AUTH:
                operation["security"] = []

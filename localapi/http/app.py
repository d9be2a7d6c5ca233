"""The app factory. Nothing is built at import time: the caller chooses the service."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import APIRouter, FastAPI
from fastapi.openapi.utils import get_openapi

from localapi import API_VERSION
from localapi.core.service import Service
from localapi.http import problems
from localapi.http.middleware import LocalOnlyMiddleware
from localapi.http.problems import PROBLEM_MEDIA_TYPE
from localapi.http.routes import downloads, events, files, jobs, system, tools, webhooks
from localapi.http.schemas import JobOut

DESCRIPTION = """FileKiln's local conversion API. Upload a file (`POST /files`), create a job
(`POST /jobs`), poll it (`GET /jobs/{id}`) and fetch the signed download link
(`GET /jobs/{id}/result`). Send your key as `X-API-Key: <key>` or `Authorization: Bearer <key>`;
keys are made in the app's Keys panel or with `filekiln keys create`. Errors are
`application/problem+json` with a stable `code`."""


def create_app(service: Service) -> FastAPI:
    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        service.events.start()  # waiting requests and event streams are woken by the feed
        # webhook bodies carry the job as GET /jobs/{id} shows it
        service.webhooks.start(render=lambda job: JobOut.of(job).model_dump(mode="json"))
        yield
        service.webhooks.stop()

    app = FastAPI(
        lifespan=lifespan,
        title="FileKiln API", version=API_VERSION, description=DESCRIPTION,
        openapi_url="/v1/openapi.json", docs_url="/v1/docs", redoc_url=None,
        generate_unique_id_function=lambda route: route.name,  # operationId = the route function's name
    )
    app.state.service = service
    v1 = APIRouter(prefix="/v1")
    for module in (tools, files, jobs, events, downloads, system, webhooks):
        v1.include_router(module.router)
    app.include_router(v1)
    problems.install(app)
    app.add_middleware(LocalOnlyMiddleware, enforce_host=service.settings.loopback_only, port=service.settings.port)

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

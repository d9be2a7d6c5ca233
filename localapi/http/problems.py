"""One place that turns every error into ``application/problem+json``."""

from __future__ import annotations

import errno
import logging
import sqlite3
from typing import Any

import fastapi.routing
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from localapi.core.errors import ServiceError
from localapi.http.schemas import Problem

log = logging.getLogger("filekiln.http")

PROBLEM_MEDIA_TYPE = "application/problem+json"

_TITLES = {400: "Malformed request", 401: "API key missing or invalid", 403: "Forbidden", 404: "Not found",
           405: "Method not allowed", 408: "Request timeout", 409: "Conflict", 410: "Gone",
           413: "Request too large", 415: "Unsupported format", 422: "Invalid parameters", 429: "Too many requests",
           431: "Request headers too large",
           500: "Internal error", 503: "Service unavailable", 507: "Insufficient storage"}
# the code of an HTTPException raised by FastAPI or Starlette themselves; a 400 from them is a body
# they could not read (a number of 5000 digits, nesting 5000 deep, bytes that are not UTF-8)
_CODES = {400: "malformed_request", 404: "not_found", 405: "method_not_allowed", 413: "file_too_large",
          500: "internal_error"}


def problem_body(status: int, code: str, detail: str, *, title: str | None = None,
                 errors: dict[str, list[str]] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"type": f"urn:filekiln:problem:{code}", "title": title or _TITLES.get(status, "Error"),
                            "status": status, "detail": detail, "code": code}
    if errors:
        body["errors"] = errors
    return body


def problem_response(status: int, code: str, detail: str, *, title: str | None = None,
                     errors: dict[str, list[str]] | None = None, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse(problem_body(status, code, detail, title=title, errors=errors), status_code=status,
                        headers=headers, media_type=PROBLEM_MEDIA_TYPE)


def problems(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI ``responses`` entries for the problem statuses an operation can return."""
    return {s: {"model": Problem, "description": _TITLES.get(s, "Error")} for s in statuses}


def disk_full(exc: BaseException) -> bool:
    if isinstance(exc, OSError) and exc.errno == errno.ENOSPC:
        return True
    return isinstance(exc, sqlite3.OperationalError) and "disk is full" in str(exc)


def routes_in_order(app: FastAPI) -> list[Any]:
    """Every route with its full path, in the order requests are matched: newer FastAPI keeps an included
    router as one wrapper, which ``iter_route_contexts`` unfolds; older FastAPI copied the routes in."""
    unfold = getattr(fastapi.routing, "iter_route_contexts", None)
    return list(unfold(app.router.routes)) if unfold is not None else list(app.router.routes)


def allowed_methods(app: FastAPI, request: Request) -> list[str]:
    """The methods of the resource the path names (Starlette names only one route's): those of the first
    route whose path matches, and of the others with its path template. A literal path such as
    /webhooks/job-secret is its own resource, not also one of /webhooks/{id}."""
    path = request.scope["path"].removeprefix(request.scope.get("root_path", ""))  # as routes match it
    matching = [route for route in routes_in_order(app)
                if getattr(route, "path_regex", None) is not None and route.path_regex.match(path)]
    if not matching:
        return []
    template = matching[0].path_format
    return sorted({method for route in matching if route.path_format == template for method in route.methods or ()})


def install(app: FastAPI) -> None:
    @app.exception_handler(ServiceError)
    async def service_error(request: Request, exc: ServiceError) -> JSONResponse:
        return problem_response(exc.status, exc.code, exc.detail, title=exc.title, errors=exc.errors,
                                headers=exc.headers)

    @app.exception_handler(RequestValidationError)
    async def validation_error(request: Request, exc: RequestValidationError) -> JSONResponse:
        errors: dict[str, list[str]] = {}
        malformed = False
        for err in exc.errors():
            if err.get("type") in ("json_invalid", "model_attributes_type") or tuple(err.get("loc", ())) == ("body",):
                malformed = True
            loc = [str(p) for p in err.get("loc", ()) if p not in ("body", "query", "path", "header")]
            errors.setdefault(".".join(loc) or "body", []).append(str(err.get("msg")))
        if malformed:
            return problem_response(400, "malformed_request", "The request body is not valid JSON of the expected "
                                    "shape.", errors=errors)
        return problem_response(422, "invalid_params", "The request is not valid.", errors=errors)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = _CODES.get(exc.status_code, "error")
        detail = exc.detail if isinstance(exc.detail, str) else _TITLES.get(exc.status_code, "Error")
        headers = dict(getattr(exc, "headers", None) or {})
        if exc.status_code == 405:
            headers["Allow"] = ", ".join(allowed_methods(app, request))
        return problem_response(exc.status_code, code, detail, headers=headers)

    @app.exception_handler(Exception)
    async def unexpected(request: Request, exc: Exception) -> JSONResponse:
        if disk_full(exc):
            log.error("disk full on %s %s", request.method, request.url.path)
            return problem_response(507, "disk_full", "The disk holding FileKiln's data is full; free some space.",
                                    title="Insufficient storage", headers={"Retry-After": "60"})
        log.exception("unexpected error on %s %s", request.method, request.url.path)
        return problem_response(500, "internal_error", "Something went wrong inside FileKiln; the log has details.")

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import fastapi_offline
from fastapi import APIRouter
from fastapi.responses import FileResponse, HTMLResponse, PlainTextResponse, Response

from localapi import API_VERSION, __version__
from localapi.core.errors import NotFound
from localapi.core.jobs.registry import health_view
from localapi.core.metrics import CONTENT_TYPE as METRICS_CONTENT_TYPE
from localapi.core.metrics import render as render_metrics
from localapi.http.deps import KeyDep, OptionalKeyDep, ServiceDep
from localapi.http.problems import problems
from localapi.http.schemas import HealthOut, PublicHealthOut, UsageOut, WorkerProcessOut, iso

router = APIRouter(tags=["system"])

# Swagger UI's own files, as the fastapi-offline package ships them: the docs work offline, and no script
# from another origin runs in the API's, where its requests would pass for the API's own.
SWAGGER_UI = Path(fastapi_offline.__file__).parent / "static"
DOCS_ASSETS = {"swagger-ui-bundle.js": "text/javascript", "swagger-ui.css": "text/css", "favicon.png": "image/png"}

# Relative addresses: the page is /v1/docs, its files /v1/docs/..., the document /v1/openapi.json.
DOCS_PAGE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>FileKiln API</title>
<link rel="icon" href="docs/favicon.png">
<link rel="stylesheet" href="docs/swagger-ui.css">
</head>
<body>
<div id="swagger-ui"></div>
<script src="docs/swagger-ui-bundle.js"></script>
<script src="docs/start.js"></script>
</body>
</html>
"""
# In a file of its own, not inline, so that the policy allows no inline script at all.
DOCS_START = """window.ui = SwaggerUIBundle({
  url: "openapi.json", dom_id: "#swagger-ui", deepLinking: true, showExtensions: true,
  showCommonExtensions: true, validatorUrl: null, layout: "BaseLayout",
  presets: [SwaggerUIBundle.presets.apis],
});
"""
# Scripts, styles, images and requests from this origin only (Swagger UI's stylesheet draws some icons from
# data: URLs); no framing, no <base>, no forms. Checked in Chromium: no violation reported with the page open,
# an operation expanded, the Authorize dialog, and a request tried out.
DOCS_POLICY = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
               "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'")


class DocsPageResponse(HTMLResponse):
    """An HTML page of this server: it cannot be framed (clickjacking) and runs only this origin's scripts."""

    def __init__(self, content: str) -> None:
        super().__init__(content, headers={"Content-Security-Policy": DOCS_POLICY, "X-Frame-Options": "DENY",
                                           "X-Content-Type-Options": "nosniff", "Cache-Control": "no-cache"})


@router.get("/health", response_model=HealthOut | PublicHealthOut, responses=problems(401, 429))
def health(service: ServiceDep, key: OptionalKeyDep) -> HealthOut | PublicHealthOut:
    """Version, engines and their availability, with no key. With a key, also what the install runs
    on (database, queue and storage, with their locations), its worker processes (host and pid), the
    queue, and the tool modules that failed to load."""
    if key is None:
        return PublicHealthOut(status="ok", version=__version__, apiVersion=API_VERSION,
                               maintenance=service.switches.maintenance, engines=service.engines())
    processes, waiting = worker_processes(service)
    return HealthOut(status="ok", version=__version__, apiVersion=API_VERSION, **service.health(),
                     workerProcesses=processes, waitingForWorker=waiting)


# the worker processes change at their heartbeats (seconds apart): read at most once per WORKERS_TTL
WORKERS_TTL = 1.0
_workers_read: dict[str, tuple[float, list[WorkerProcessOut], dict[str, int]]] = {}


def worker_processes(service: Any) -> tuple[list[WorkerProcessOut], dict[str, int]]:
    """``workerProcesses`` and ``waitingForWorker`` of ``GET /health`` (jobs/registry.py), at most a second old."""
    known = _workers_read.get(service.db.target)  # per install: every service on it reads the same
    if known is not None and time.monotonic() - known[0] < WORKERS_TTL:
        return known[1], known[2]
    view = health_view(service.db, service.catalogue)
    processes = [WorkerProcessOut(**{**w, "startedAt": iso(w["startedAt"]), "lastSeenAt": iso(w["lastSeenAt"])})
                 for w in view["workerProcesses"]]
    _workers_read[service.db.target] = (time.monotonic(), processes, view["waitingForWorker"])
    return processes, view["waitingForWorker"]


@router.get("/usage", response_model=UsageOut, responses=problems(401, 429))
def usage(service: ServiceDep, key: KeyDep) -> UsageOut:
    """Today's job count and quota for the calling key (days are UTC)."""
    used = service.keys.jobs_today(key.id)
    tomorrow = (datetime.now(UTC) + timedelta(days=1)).replace(hour=0, minute=0, second=0, microsecond=0)
    remaining = None if key.daily_job_quota is None else max(key.daily_job_quota - used, 0)
    return UsageOut(keyId=key.id, name=key.name, dailyJobQuota=key.daily_job_quota, jobsToday=used,
                    remainingToday=remaining, resetsAt=tomorrow)


@router.get("/metrics", response_class=PlainTextResponse, responses={
    200: {"content": {"text/plain": {"schema": {"type": "string"}}},
          "description": "Prometheus text format (version 0.0.4)"}, **problems(401, 429)})
def metrics(service: ServiceDep, key: KeyDep) -> PlainTextResponse:
    """Jobs and workflows by state, jobs by tool, queue depth, job durations by tool (a histogram) and
    this process's workers, in the Prometheus text format. Needs a key (``Authorization: Bearer``); the
    job and workflow figures are that key's own, or every key's with the ``metrics_all_keys`` setting."""
    shown = None if service.settings.metrics_all_keys else key.id
    return PlainTextResponse(render_metrics(service, shown), media_type=METRICS_CONTENT_TYPE)


@router.get("/docs", include_in_schema=False)
def docs_page() -> DocsPageResponse:
    """The interactive docs (Swagger UI) of this API."""
    return DocsPageResponse(DOCS_PAGE)


@router.get("/docs/{name}", include_in_schema=False)
def docs_asset(name: str) -> Response:
    """A file of the docs page, from the installed package (or the page's start script)."""
    headers = {"X-Content-Type-Options": "nosniff", "Cache-Control": "public, max-age=86400"}
    if name == "start.js":
        return Response(DOCS_START, media_type="text/javascript", headers=headers)
    if name not in DOCS_ASSETS:
        raise NotFound(f"The docs have no file {name!r}.")
    return FileResponse(SWAGGER_UI / name, media_type=DOCS_ASSETS[name], headers=headers)

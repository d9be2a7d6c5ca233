"""A Python client for a running FileKiln: ``FileKiln(...).convert(path, tool=...)`` and the calls under it.

    from filekiln.client import FileKiln

    with FileKiln(key="fk_...") as kiln:          # or FILEKILN_URL / FILEKILN_API_KEY
        paths = kiln.convert("photo.png", tool="image-convert", to="webp")

What it takes care of:

- **Uploads and downloads stream**: a file is never read into memory; a download goes to a hidden
  ``.part`` file beside its target and is renamed into place, never over an existing file (``name-2.ext``
  as ``filekiln convert`` does). A download cut off part way resumes with a ``Range`` request.
- **Retries**: ``429`` and ``503`` are waited out for as long as ``Retry-After`` says (up to
  ``max_retry_wait`` seconds each time, ``retries`` times), and so is a ``409 idempotency_in_flight``.
  A connection that fails is retried for idempotent requests; every POST carries an
  ``Idempotency-Key`` (a uuid4, the same on each attempt), so a retried upload or job creation never
  makes a second file or job. A tool switched off or missing its engine (``503 tool_disabled``,
  ``tool_unavailable``) is not retried: waiting does not change it.
- **Errors** are :class:`FileKilnError` subclasses carrying the problem+json fields; a job that ends
  FAILED or CANCELED raises :class:`JobFailed` with its ``errorCode`` and ``errorMessage``, a workflow
  :class:`WorkflowFailed` (its ``errorMessage`` names the step and the file).
- **Workflows**: ``run_workflow(paths, steps=[...])`` or ``run_workflow(paths, preset="Web images")``
  runs several steps on the server, the outputs of one the inputs of the next, and downloads the last
  step's files.
- **Webhooks**: :func:`verify_webhook` checks a delivery's ``FileKiln-Signature``.
"""

from __future__ import annotations

import contextlib
import email.utils
import hashlib
import hmac
import json
import os
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any
from urllib.parse import urlsplit

import httpx

__all__ = [
    "DEFAULT_URL", "ConnectionFailed", "FileKiln", "FileKilnError", "Gone", "InvalidRequest", "JobFailed",
    "NotFound", "QuotaExceeded", "RateLimited", "Unauthorized", "Unavailable", "WorkflowFailed", "verify_webhook",
]

DEFAULT_URL = "http://127.0.0.1:8741/v1"
TERMINAL_EVENTS = frozenset({"job.done", "job.failed", "job.canceled"})
FINISHED = frozenset({"DONE", "FAILED", "CANCELED"})
IDEMPOTENT_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "PUT", "DELETE"})
NOT_WORTH_WAITING = frozenset({"tool_disabled", "tool_unavailable"})  # a person's decision or a missing engine
CHUNK = 256 * 1024

JobDict = dict[str, Any]
WorkflowDict = dict[str, Any]
Progress = Callable[[float], None]


# --------------------------------------------------------------------------- errors


class FileKilnError(Exception):
    """A request FileKiln refused, or a job that did not end DONE.

    ``status``, ``code``, ``title``, ``detail`` and ``errors`` are the problem+json fields; for an
    answer that is not problem+json (a proxy's page, say) ``code`` is ``http_<status>`` and ``detail``
    the start of the body. ``retry_after`` is the ``Retry-After`` header in seconds, when sent.
    """

    def __init__(self, status: int | None, code: str, title: str, detail: str,
                 errors: Mapping[str, list[str]] | None = None, retry_after: float | None = None) -> None:
        super().__init__(f"{code}: {detail}")
        self.status = status
        self.code = code
        self.title = title
        self.detail = detail
        self.errors: dict[str, list[str]] = dict(errors or {})
        self.retry_after = retry_after


class InvalidRequest(FileKilnError):
    """400, 413, 415, 422: the request itself will not do (unknown tool, bad params, unsupported input)."""


class Unauthorized(FileKilnError):
    """401: the API key is missing, unknown or revoked."""


class QuotaExceeded(FileKilnError):
    """402: the key's daily job quota is used up."""


class NotFound(FileKilnError):
    """404: no such job, file or tool (or it belongs to another key)."""


class Gone(FileKilnError):
    """410: a file, result or download link that retention or time has removed."""


class RateLimited(FileKilnError):
    """429 still, after the retries."""


class Unavailable(FileKilnError):
    """503: maintenance, or a tool switched off or missing its engine."""


class ConnectionFailed(FileKilnError):
    """The server could not be reached, or the connection broke, after the retries."""


class JobFailed(FileKilnError):
    """A job that ended FAILED or CANCELED; ``job`` is the Job as FileKiln last reported it."""

    def __init__(self, job: JobDict) -> None:
        canceled = job.get("status") == "CANCELED"
        self.job = job
        self.job_id: str = job.get("id", "")
        self.error_code: str | None = job.get("errorCode")
        self.error_message: str | None = job.get("errorMessage")
        super().__init__(None, self.error_code or ("canceled" if canceled else "failed"),
                         "Job canceled" if canceled else "Job failed",
                         self.error_message or ("The job was canceled." if canceled else "The job failed."))


class WorkflowFailed(FileKilnError):
    """A workflow that ended FAILED or CANCELED; ``workflow`` is the Workflow as FileKiln last reported it.
    ``failed_step`` is the step (1-based) that failed or was canceled, when FileKiln said."""

    def __init__(self, workflow: WorkflowDict) -> None:
        canceled = workflow.get("status") == "CANCELED"
        self.workflow = workflow
        self.workflow_id: str = workflow.get("id", "")
        self.error_code: str | None = workflow.get("errorCode")
        self.error_message: str | None = workflow.get("errorMessage")
        self.failed_step: int | None = workflow.get("failedStep")
        super().__init__(None, self.error_code or ("canceled" if canceled else "failed"),
                         "Workflow canceled" if canceled else "Workflow failed",
                         self.error_message or ("The workflow was canceled." if canceled else "The workflow failed."))


_BY_STATUS: dict[int, type[FileKilnError]] = {400: InvalidRequest, 401: Unauthorized, 402: QuotaExceeded,
                                              404: NotFound, 410: Gone, 413: InvalidRequest, 415: InvalidRequest,
                                              422: InvalidRequest, 429: RateLimited, 503: Unavailable}


def error_from(response: httpx.Response) -> FileKilnError:
    """The typed error for a 4xx/5xx answer (its body must have been read)."""
    status = response.status_code
    cls = _BY_STATUS.get(status, FileKilnError)
    retry = retry_after_seconds(response)
    try:
        body = response.json() if "json" in response.headers.get("content-type", "") else None
    except ValueError:
        body = None
    if isinstance(body, dict) and isinstance(body.get("code"), str):
        errors = body.get("errors") if isinstance(body.get("errors"), dict) else None
        return cls(status, body["code"], str(body.get("title") or response.reason_phrase),
                   str(body.get("detail") or ""), errors, retry)
    text = response.text.strip()[:500] or response.reason_phrase
    return cls(status, f"http_{status}", response.reason_phrase or f"HTTP {status}", text, None, retry)


def retry_after_seconds(response: httpx.Response) -> float | None:
    """``Retry-After`` as seconds: a number of seconds or an HTTP date."""
    value = response.headers.get("retry-after")
    if not value:
        return None
    try:
        return max(float(value), 0.0)
    except ValueError:
        pass
    try:
        return max(email.utils.parsedate_to_datetime(value).timestamp() - time.time(), 0.0)
    except (TypeError, ValueError):
        return None


# --------------------------------------------------------------------------- the client


class FileKiln:
    """A connection to one FileKiln server (``base_url`` ends in ``/v1``; a bare host gets it added).

    ``base_url`` and ``key`` default to the ``FILEKILN_URL`` and ``FILEKILN_API_KEY`` environment
    variables, then to ``http://127.0.0.1:8741/v1`` and no key. ``timeout`` bounds connecting and each
    read (a waiting request gets its wait on top). ``transport`` is handed to httpx (tests, proxies).
    The underlying ``httpx.Client`` is ``.http``.
    """

    def __init__(self, base_url: str | None = None, key: str | None = None, *, timeout: float = 30.0,
                 retries: int = 5, max_retry_wait: float = 120.0,
                 transport: httpx.BaseTransport | None = None) -> None:
        self.base_url = with_api_path(base_url or os.environ.get("FILEKILN_URL") or DEFAULT_URL)
        key = key if key is not None else os.environ.get("FILEKILN_API_KEY") or None
        self.timeout = timeout
        self.retries = retries
        self.max_retry_wait = max_retry_wait
        headers = {"User-Agent": "filekiln-client"}
        if key:
            headers["X-API-Key"] = key
        self.http = httpx.Client(base_url=self.base_url, headers=headers, timeout=timeout, transport=transport)

    def __enter__(self) -> FileKiln:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        self.http.close()

    # ---- the whole conversion

    def convert(self, path: str | os.PathLike[str] | Sequence[str | os.PathLike[str]], *, tool: str,
                to: str | None = None, params: Mapping[str, Any] | None = None,
                out: str | os.PathLike[str] | None = None, progress: Progress | None = None,
                wait: float = 1.0) -> list[Path]:
        """Convert ``path`` (or several paths, as one job) with ``tool`` and return the files written.

        The inputs are uploaded, the job created with ``wait`` seconds of create-and-wait (most small
        conversions end within it), then followed over its event stream until it ends, calling
        ``progress(fraction)`` with increasing fractions, the last 1.0. Each output file is
        downloaded on its own into ``out`` (default: the first input's folder) — never the ZIP of a
        multi-output job — under its own name, made free (``name-2.ext``) rather than overwriting.
        Raises :class:`JobFailed` if the job ends FAILED or CANCELED.
        """
        paths = [Path(path)] if isinstance(path, str | os.PathLike) else [Path(p) for p in path]
        job = self.run_job(paths, tool=tool, to=to, params=params, progress=progress, wait=wait)
        return self.download_result(job["id"], Path(out) if out is not None else paths[0].parent,
                                    result=job.get("result"))

    def run_job(self, paths: Sequence[Path], *, tool: str, to: str | None = None,
                params: Mapping[str, Any] | None = None, progress: Progress | None = None,
                wait: float = 1.0) -> JobDict:
        """Upload ``paths``, run one job on them and return it DONE (``convert`` without the download).

        Interrupted by Ctrl-C (``KeyboardInterrupt``) while it waits, the job is canceled on the server."""
        for p in paths:
            if not p.is_file():
                raise FileNotFoundError(f"No file {p}.")
        if not paths:
            raise ValueError("run_job needs at least one input file")
        file_ids = [self.upload(p, tool=tool)["id"] for p in paths]
        job = self.create_job(tool, file_ids, params=params, output_format=to, wait=wait)
        report = _Reporter(progress)
        try:
            report(job)
            if job["status"] not in FINISHED:
                for _type, latest, _id in self.events(job["id"]):
                    job = latest
                    report(job)
        except KeyboardInterrupt:
            with contextlib.suppress(FileKilnError):
                self.cancel(job["id"])
            raise
        if job["status"] != "DONE":
            raise JobFailed(job)
        return job

    def download_result(self, job_id: str, out: Path, result: Mapping[str, Any] | None = None) -> list[Path]:
        """Download each output file of a DONE job into the folder ``out``; the paths written, in order.
        ``result`` is the job's ``result`` when an answer carried it (else it is asked for)."""
        out.mkdir(parents=True, exist_ok=True)
        files = (result or self.result(job_id))["files"]
        return [self.download(f["downloadUrl"], out / safe_name(f.get("name"), f.get("id", "output")))
                for f in files]

    def run_workflow(self, paths: Sequence[str | os.PathLike[str]], steps: Sequence[Mapping[str, Any]] | None = None,
                     preset: str | None = None, out: str | os.PathLike[str] | None = None,
                     progress: Progress | None = None, tag: str | None = None, wait: float = 1.0) -> list[Path]:
        """Run a workflow on ``paths`` and return the files written into ``out`` (default: the first
        input's folder), the last step's outputs, each under its own name made free (``name-2.ext``).

        ``steps`` is a list of ``{"tool", "params"?, "outputFormat"?}``; or give the name of a ``preset``.
        A merging tool (pdf-merge, image-to-pdf ...) takes all of a step's inputs in one job; any other
        tool runs once per input. ``progress(fraction)`` is called with increasing fractions, the last 1.0.
        Raises :class:`WorkflowFailed` if it ends FAILED or CANCELED; interrupted by Ctrl-C
        (``KeyboardInterrupt``) while it waits, the workflow is canceled on the server.
        """
        files = [Path(p) for p in paths]
        if not files:
            raise ValueError("run_workflow needs at least one input file")
        for p in files:
            if not p.is_file():
                raise FileNotFoundError(f"No file {p}.")
        first_tool = steps[0].get("tool") if steps else None  # its size limit applies while uploading
        file_ids = [self.upload(p, tool=first_tool if isinstance(first_tool, str) else None)["id"] for p in files]
        workflow = self.create_workflow(file_ids, steps=steps, preset=preset, tag=tag, wait=wait)
        report = _Reporter(progress)
        try:
            report(workflow)
            while workflow["status"] not in FINISHED:
                workflow = self.workflow(workflow["id"], wait=30)
                report(workflow)
        except KeyboardInterrupt:
            with contextlib.suppress(FileKilnError):
                self.cancel_workflow(workflow["id"])
            raise
        if workflow["status"] != "DONE":
            raise WorkflowFailed(workflow)
        target = Path(out) if out is not None else files[0].parent
        target.mkdir(parents=True, exist_ok=True)
        result = workflow.get("result") or self.workflow_result(workflow["id"])
        return [self.download(f["downloadUrl"], target / safe_name(f.get("name"), f.get("id", "output")))
                for f in result["files"]]

    # ---- the calls under it

    def tools(self) -> list[dict[str, Any]]:
        """Every tool, available or not (``GET /tools``)."""
        tools: list[dict[str, Any]] = self._send("GET", "/tools").json()
        return tools

    def upload(self, path: str | os.PathLike[str], *, tool: str | None = None,
               idempotency_key: str | None = None) -> dict[str, Any]:
        """Upload one file, streamed from disk; the FileRef. With ``tool``, its size limit applies while sending."""
        path = Path(path)
        params = {"tool": tool} if tool else None
        headers = {"Idempotency-Key": idempotency_key or str(uuid.uuid4())}
        ref: dict[str, Any] = self._send("POST", "/files", params=params, headers=headers, upload=path).json()
        return ref

    def create_job(self, tool: str, file_ids: Sequence[str], params: Mapping[str, Any] | None = None,
                   output_format: str | None = None, wait: float | None = None,
                   idempotency_key: str | None = None) -> JobDict:
        """Queue a job (``POST /jobs``); with ``wait`` (seconds, at most 60) the answer comes when it has
        ended or the wait ran out, a DONE job with its ``result`` (download links).
        ``idempotency_key`` defaults to a new uuid4, kept across retries."""
        body: dict[str, Any] = {"tool": tool, "inputFileIds": list(file_ids)}
        if params:
            body["params"] = dict(params)
        if output_format:
            body["outputFormat"] = output_format
        headers = {"Idempotency-Key": idempotency_key or str(uuid.uuid4())}
        job: JobDict = self._send("POST", "/jobs", json_body=body, headers=headers, **self._waiting(wait)).json()
        return job

    def job(self, job_id: str, wait: float | None = None) -> JobDict:
        """The job as it stands (a DONE job with its ``result``); with ``wait``, as soon as it has ended or
        after ``wait`` seconds."""
        job: JobDict = self._send("GET", f"/jobs/{job_id}", **self._waiting(wait)).json()
        return job

    def events(self, job_id: str, last_event_id: str | None = None) -> Iterator[tuple[str, JobDict, str | None]]:
        """The job's server-sent events as ``(event type, Job, event id)``, ending after the terminal one.

        Without ``last_event_id`` the first event is the job as it stands. A stream that drops is
        opened again with ``Last-Event-ID`` (the last event seen), so nothing is missed or repeated.
        """
        failures = 0
        while True:
            headers = {"Accept": "text/event-stream"}
            if last_event_id and last_event_id != "0":  # 0: the job's state had no feed entry to resume from
                headers["Last-Event-ID"] = last_event_id
            timeout = httpx.Timeout(self.timeout, read=max(self.timeout, 45.0))  # keep-alives come every 15 s
            try:
                with contextlib.closing(self._send("GET", f"/jobs/{job_id}/events", headers=headers,
                                                   timeout=timeout, stream=True)) as response:
                    for event_type, data, event_id in parse_sse(response.iter_lines()):
                        failures = 0
                        last_event_id = event_id or last_event_id
                        yield event_type, json.loads(data), event_id
                        if event_type in TERMINAL_EVENTS:
                            return
            except httpx.TransportError as exc:  # dropped part way (a refused or unreachable start raises)
                if failures >= self.retries:
                    raise ConnectionFailed(None, "connection_failed", "Connection failed", str(exc)) from exc
            failures += 1  # dropped, or ended before the job did: open it again from the last event
            time.sleep(backoff(failures))

    def result(self, job_id: str) -> dict[str, Any]:
        """A DONE job's result: ``downloadUrl`` (the file, or a ZIP of several), ``expiresAt``, ``files``."""
        result: dict[str, Any] = self._send("GET", f"/jobs/{job_id}/result").json()
        return result

    def download(self, url: str, dest: str | os.PathLike[str]) -> Path:
        """Stream ``url`` into ``dest`` — or, when that exists, the first free ``dest-2.ext``, ``dest-3.ext``
        … — through a ``.part`` file beside it; the path written. A cut-off transfer resumes with ``Range``."""
        dest = Path(dest)
        fd, tmp_name = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=".part", dir=dest.parent)
        tmp = Path(tmp_name)
        try:
            with os.fdopen(fd, "wb") as sink:
                self._fetch_into(url, sink)
            return place(tmp, dest)
        finally:
            tmp.unlink(missing_ok=True)

    def presets(self) -> list[dict[str, Any]]:
        """The built-in presets, then the saved ones by name (``GET /presets``): name, description, builtin, steps."""
        items: list[dict[str, Any]] = self._send("GET", "/presets").json()["items"]
        return items

    def create_workflow(self, file_ids: Sequence[str], steps: Sequence[Mapping[str, Any]] | None = None,
                        preset: str | None = None, tag: str | None = None, wait: float | None = None,
                        idempotency_key: str | None = None) -> WorkflowDict:
        """Queue a workflow (``POST /workflows``) on uploaded files, with ``steps`` or a ``preset``'s name;
        every step is checked before anything runs. With ``wait`` (seconds, at most 60) the answer comes
        when it has ended or the wait ran out, a DONE workflow with its ``result``."""
        body: dict[str, Any] = {"inputFileIds": list(file_ids)}
        if steps is not None:
            body["steps"] = [dict(s) for s in steps]
        if preset is not None:
            body["preset"] = preset
        if tag is not None:
            body["tag"] = tag
        headers = {"Idempotency-Key": idempotency_key or str(uuid.uuid4())}
        workflow: WorkflowDict = self._send("POST", "/workflows", json_body=body, headers=headers,
                                            **self._waiting(wait)).json()
        return workflow

    def workflow(self, workflow_id: str, wait: float | None = None) -> WorkflowDict:
        """The workflow as it stands, each step with its jobs (a DONE one with its ``result``); with
        ``wait``, as soon as it has ended or after ``wait`` seconds."""
        workflow: WorkflowDict = self._send("GET", f"/workflows/{workflow_id}", **self._waiting(wait)).json()
        return workflow

    def workflow_result(self, workflow_id: str) -> dict[str, Any]:
        """A DONE workflow's result (its last step's files): ``downloadUrl``, ``expiresAt``, ``files``."""
        result: dict[str, Any] = self._send("GET", f"/workflows/{workflow_id}/result").json()
        return result

    def cancel_workflow(self, workflow_id: str) -> WorkflowDict:
        """Cancel a running workflow (its running jobs, and the steps not begun); ``409 workflow_finished``
        (a :class:`FileKilnError`) once it has ended."""
        workflow: WorkflowDict = self._send("POST", f"/workflows/{workflow_id}/cancel").json()
        return workflow

    def cancel(self, job_id: str) -> JobDict:
        """Cancel a QUEUED or PROCESSING job; ``409 job_finished`` (a :class:`FileKilnError`) once it has ended."""
        job: JobDict = self._send("POST", f"/jobs/{job_id}/cancel").json()
        return job

    # ---- plumbing

    def _waiting(self, wait: float | None) -> dict[str, Any]:
        """A single job's (or workflow's) query: its download links once DONE, and the wait with its longer
        read timeout."""
        if not wait:
            return {"params": {"include": "result"}}
        return {"params": {"wait": wait, "include": "result"},
                "timeout": httpx.Timeout(self.timeout, read=self.timeout + min(wait, 60.0))}

    def _fetch_into(self, url: str, sink: Any) -> None:
        written, failures = 0, 0
        while True:
            headers = {"Range": f"bytes={written}-"} if written else {}
            try:
                with contextlib.closing(self._send("GET", url, headers=headers, stream=True)) as response:
                    if written and response.status_code != 206:  # the server sent the whole file again
                        sink.seek(0)
                        sink.truncate()
                        written = 0
                    for chunk in response.iter_bytes(CHUNK):
                        sink.write(chunk)
                        written += len(chunk)
                        failures = 0
                    return
            except httpx.TransportError as exc:
                failures += 1
                if failures > self.retries:
                    raise ConnectionFailed(None, "connection_failed", "Connection failed", str(exc)) from exc
                time.sleep(backoff(failures))

    def _send(self, method: str, url: str, *, params: Mapping[str, Any] | None = None, json_body: Any = None,
              headers: Mapping[str, str] | None = None, upload: Path | None = None,
              timeout: httpx.Timeout | None = None, stream: bool = False) -> httpx.Response:
        """One request with the retries; the response (open, when ``stream``) or the typed error."""
        headers = dict(headers or {})
        idempotent = method in IDEMPOTENT_METHODS or "Idempotency-Key" in headers
        attempt = 0
        while True:
            try:
                with contextlib.ExitStack() as stack:
                    files = None
                    if upload is not None:  # opened again on each attempt; httpx sends it in chunks
                        files = {"file": (upload.name, stack.enter_context(upload.open("rb")))}
                    request = self.http.build_request(method, url, params=params, json=json_body,
                                                      headers=headers, files=files,
                                                      timeout=timeout or httpx.USE_CLIENT_DEFAULT)
                    if request.url.netloc != self.http.base_url.netloc:  # a link elsewhere gets no key
                        request.headers.pop("X-API-Key", None)
                    response = self.http.send(request, stream=stream)
            except httpx.TransportError as exc:
                # a request that never reached the server is safe to send again, whatever it was
                unsent = isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout)
                if attempt >= self.retries or not (idempotent or unsent):
                    raise ConnectionFailed(None, "connection_failed", "Connection failed",
                                           f"{method} {url if '://' in url else self.base_url + url}: "
                                           f"{exc or type(exc).__name__}") from exc
                attempt += 1
                time.sleep(backoff(attempt))
                continue
            if response.status_code < 400:
                return response
            response.read()
            response.close()
            error = error_from(response)
            pause = self._pause_before_retry(error, idempotent)
            if pause is None or attempt >= self.retries:
                raise error
            attempt += 1
            time.sleep(pause)

    def _pause_before_retry(self, error: FileKilnError, idempotent: bool) -> float | None:
        """Seconds to wait before sending a refused request again, or None to give up."""
        in_flight = error.code == "idempotency_in_flight"  # our own earlier attempt, still being handled
        if error.status not in (429, 503) and not (error.status == 409 and in_flight and idempotent):
            return None
        if error.code in NOT_WORTH_WAITING:
            return None
        pause = error.retry_after if error.retry_after is not None else 1.0
        return pause if pause <= self.max_retry_wait else None


class _Reporter:
    """Calls ``progress`` with the job's (or workflow's) fraction whenever it grows, and 1.0 when it is DONE."""

    def __init__(self, progress: Progress | None) -> None:
        self.progress = progress
        self.last = -1.0

    def __call__(self, job: JobDict) -> None:
        fraction = 1.0 if job.get("status") == "DONE" else min(float(job.get("progress") or 0) / 100, 0.99)
        if self.progress is not None and fraction > self.last:
            self.last = fraction
            self.progress(fraction)


# --------------------------------------------------------------------------- helpers


def with_api_path(url: str) -> str:
    """``url`` without a trailing slash; a bare ``http://host:port`` gets ``/v1``."""
    url = url.rstrip("/")
    return url + "/v1" if urlsplit(url).path in ("", "/") else url


def backoff(attempt: int) -> float:
    """Seconds before retry ``attempt`` (1, 2, ...) after a connection failure: 0.25, 0.5, 1 ... at most 4."""
    return float(min(0.25 * 2 ** (attempt - 1), 4.0))


def safe_name(name: str | None, fallback: str) -> str:
    """A server-given file name as one plain name in the output folder (no folders, no dot names)."""
    plain = Path((name or "").replace("\\", "/")).name.strip().lstrip(".")  # no hidden files either
    return plain or fallback


def place(tmp: Path, dest: Path) -> Path:
    """Move the finished ``tmp`` to ``dest`` or the first free name after it, never replacing a file."""
    from converters.base import free_name

    while True:
        target = free_name(dest)
        try:
            os.link(tmp, target)  # fails if the name was taken meanwhile, where a rename would replace it
        except FileExistsError:
            continue
        except OSError:  # no hard links here (some file systems): rename, the name was free a moment ago
            tmp.rename(target)
            return target
        tmp.unlink()
        return target


def parse_sse(lines: Iterator[str]) -> Iterator[tuple[str, str, str | None]]:
    """``(event, data, id)`` for each event of a text/event-stream, given its lines."""
    event, event_id = "message", None
    data: list[str] = []
    for line in lines:
        if not line:
            if data:
                yield event, "\n".join(data), event_id
            event, data = "message", []
            continue
        if line.startswith(":"):  # a comment: the server's "connected" and keep-alives
            continue
        field, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if field == "event":
            event = value
        elif field == "data":
            data.append(value)
        elif field == "id":
            event_id = value


# --------------------------------------------------------------------------- webhooks


def verify_webhook(secret: str, headers: Mapping[str, str], body: bytes, tolerance: float = 300) -> bool:
    """Whether a webhook delivery is FileKiln's: its ``FileKiln-Signature`` (``t=<unix>,v1=<hex>``) is the
    HMAC-SHA256, keyed with ``secret``, of ``"<t>." + body`` (the raw body, as received), and ``t`` is
    within ``tolerance`` seconds of now. Compared in constant time; several ``v1`` values are accepted."""
    header = next((v for k, v in headers.items() if k.lower() == "filekiln-signature"), None)
    if not header:
        return False
    stamps, signatures = [], []
    for part in header.split(","):
        name, _, value = part.strip().partition("=")
        if name == "t":
            stamps.append(value)
        elif name == "v1":
            signatures.append(value.encode("utf-8", "replace"))
    if len(stamps) != 1 or not stamps[0].isdigit() or not signatures:
        return False
    if abs(time.time() - int(stamps[0])) > tolerance:
        return False
    expected = hmac.new(secret.encode("utf-8"), stamps[0].encode() + b"." + body, hashlib.sha256).hexdigest().encode()
    return any(hmac.compare_digest(expected, given) for given in signatures)

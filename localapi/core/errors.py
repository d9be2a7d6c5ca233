"""Domain errors. The HTTP face turns each into an RFC 9457 problem with its ``code``."""

from __future__ import annotations


class ServiceError(Exception):
    status = 400
    code = "bad_request"
    title = "Bad request"

    def __init__(
        self,
        detail: str,
        *,
        errors: dict[str, list[str]] | None = None,
        headers: dict[str, str] | None = None,
        code: str | None = None,
    ) -> None:
        super().__init__(detail)
        self.detail = detail
        self.errors = errors
        self.headers = headers or {}
        if code is not None:
            self.code = code


def _error(name: str, status: int, code: str, title: str) -> type[ServiceError]:
    return type(name, (ServiceError,), {"status": status, "code": code, "title": title})


BadRequest = _error("BadRequest", 400, "bad_request", "Malformed request")
InvalidApiKey = _error("InvalidApiKey", 401, "invalid_api_key", "API key missing or invalid")
QuotaExceeded = _error("QuotaExceeded", 402, "quota_exceeded", "Daily job quota reached")
Forbidden = _error("Forbidden", 403, "forbidden", "Forbidden")
InvalidSignature = _error("InvalidSignature", 403, "invalid_signature", "Download link is not valid")
NotFound = _error("NotFound", 404, "not_found", "Not found")
JobNotFound = _error("JobNotFound", 404, "job_not_found", "Job not found")
FileNotFound = _error("FileNotFound", 404, "file_not_found", "File not found")
ToolNotFound = _error("ToolNotFound", 404, "tool_not_found", "Tool not found")
WorkflowNotFound = _error("WorkflowNotFound", 404, "workflow_not_found", "Workflow not found")
PresetNotFound = _error("PresetNotFound", 404, "preset_not_found", "Preset not found")
WatchFolderNotFound = _error("WatchFolderNotFound", 404, "watch_folder_not_found", "Watch folder not found")
Conflict = _error("Conflict", 409, "conflict", "Conflict")
JobNotFinished = _error("JobNotFinished", 409, "job_not_finished", "Job not finished")
Gone = _error("Gone", 410, "expired", "Expired")
FileTooLarge = _error("FileTooLarge", 413, "file_too_large", "File too large")
UnsupportedFormat = _error("UnsupportedFormat", 415, "unsupported_format", "Unsupported input format")
InvalidParams = _error("InvalidParams", 422, "invalid_params", "Invalid parameters")
RateLimited = _error("RateLimited", 429, "rate_limited", "Too many requests")
InsufficientStorage = _error("InsufficientStorage", 507, "disk_full", "Insufficient storage")
Unavailable = _error("Unavailable", 503, "tool_unavailable", "Service unavailable")


class StorageUnavailable(ServiceError, OSError):
    """The file store (a bucket) cannot be reached, or refused a request: a 503 from the API, and a job
    that fails with this code in a worker. An OSError too, as a disk that fails is."""

    status = 503
    code = "storage_unavailable"
    title = "Service unavailable"

    def __init__(self, detail: str) -> None:
        super().__init__(detail, headers={"Retry-After": "30"})

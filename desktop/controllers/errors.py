"""An error the service raised, told in words for people, with the details for a report."""

from __future__ import annotations

from desktop.models.jobs import friendly_error
from localapi.core.errors import ServiceError


def describe_service_error(exc: BaseException) -> tuple[str, str]:
    """(sentence for people, details) for an error raised by the service."""
    if isinstance(exc, ServiceError):
        details = [f"{exc.code}: {exc.detail}"]
        for name, messages in (exc.errors or {}).items():
            details.extend(f"{name}: {m}" for m in messages)
        text = exc.detail if exc.code in ("invalid_params", "unsupported_format") else None
        return text or friendly_error(exc.code, exc.detail), "\n".join(details)
    if isinstance(exc, OSError):
        return f"A file could not be read: {exc.strerror or exc}", repr(exc)
    return "Something went wrong.", repr(exc)

"""Localhost safety: refuse DNS-rebinding Hosts and cross-site browser requests."""

from __future__ import annotations

from urllib.parse import urlsplit

from starlette.types import ASGIApp, Receive, Scope, Send

from localapi.config import is_loopback_host
from localapi.http.problems import problem_response

UNSAFE_METHODS = {"POST", "PUT", "PATCH", "DELETE"}


def host_of(value: str) -> str:
    """``host`` from a Host header value (``host``, ``host:port``, ``[v6]:port``)."""
    if value.startswith("["):
        return value[1:].split("]", 1)[0]
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


class LocalOnlyMiddleware:
    def __init__(self, app: ASGIApp, *, enforce_host: bool, port: int) -> None:
        self.app = app
        self.enforce_host = enforce_host
        self.port = port

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        reason = self.refusal(scope["method"], headers)
        if reason is not None:
            code, detail = reason
            response = problem_response(403, code, detail, title="Forbidden")
            await response(scope, receive, send)
            return
        await self.app(scope, receive, send)

    def refusal(self, method: str, headers: dict[str, str]) -> tuple[str, str] | None:
        if self.enforce_host:
            host = headers.get("host", "")
            if not host or not is_loopback_host(host_of(host)):
                return "host_not_allowed", "FileKiln answers only requests addressed to localhost."
        if method in UNSAFE_METHODS:
            site = headers.get("sec-fetch-site")
            if site in ("cross-site", "same-site"):
                return "cross_site_request", "Requests from other web sites are refused."
            origin = headers.get("origin")
            if origin is not None and not self.own_origin(origin):
                return "cross_site_request", "Requests from other web sites are refused."
        return None

    def own_origin(self, origin: str) -> bool:
        try:
            parts = urlsplit(origin)
            port = parts.port or (443 if parts.scheme == "https" else 80)
        except ValueError:
            return False
        if not self.enforce_host:
            return False  # on a public bind, browsers have no business posting here at all
        return parts.scheme in ("http", "https") and is_loopback_host(parts.hostname or "") and port == self.port

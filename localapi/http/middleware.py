"""Requests refused before the app reads them: DNS-rebinding Hosts, cross-site browser requests, and
JSON bodies from callers without a key or too large to hold."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from fastapi import FastAPI
from fastapi.dependencies.models import Dependant
from starlette.datastructures import Headers
from starlette.routing import Match
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from localapi.config import is_loopback_host
from localapi.core.errors import InvalidApiKey
from localapi.core.service import Service
from localapi.http.deps import KEY_SCOPE, key_for, required_key, secret_from
from localapi.http.problems import problem_response, routes_in_order

UNSAFE_METHODS = {"POST", "PUT", "PATCH", "DELETE"}
MAX_JSON_BYTES = 1024 * 1024


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


class JsonBodyGate:
    """FastAPI reads a route's JSON body whole, and parses it, before any dependency runs: the key check
    included, so a caller without a key could make the server hold any amount. Here, before a JSON body
    is read, the caller's key must be valid (if not, the route sees no body and answers 401 as it would
    anyway), and the body must fit in ``MAX_JSON_BYTES`` (``413 request_too_large`` otherwise: at once
    from ``Content-Length``, else as soon as a chunked body passes it). Uploads are not JSON routes: they
    stream their body to disk after the key check, under a limit of their own."""

    def __init__(self, app: ASGIApp, *, api: FastAPI, service: Service) -> None:
        self.app = app
        self.api = api
        self.service = service
        self._json_routes: list[Any] | None = None
        self._keyed: dict[int, bool] = {}  # id(route) -> whether it needs a key

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not _has_body(scope) or (route := self._json_route(scope)) is None:
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        keyed = self._keyed.get(id(route))
        if keyed is None:
            keyed = self._keyed[id(route)] = _needs_key(route.dependant)
        if keyed and not await self._authenticate(scope, headers):
            await self.app(scope, _replaying(b"", receive), send)
            return
        declared = headers.get("content-length")
        body = None if declared is not None and int(declared) > MAX_JSON_BYTES else await _read(receive)
        if body is None:
            response = problem_response(413, "request_too_large",
                                        f"A JSON body may be at most {MAX_JSON_BYTES} bytes.")
            await response(scope, receive, send)
            return
        await self.app(scope, _replaying(body, receive), send)

    def _json_route(self, scope: Scope) -> Any | None:
        """The route that will take this request, if it is one whose body FastAPI reads as JSON."""
        if self._json_routes is None:
            self._json_routes = [route for route in routes_in_order(self.api)
                                 if getattr(route, "body_field", None) is not None]
        return next((route for route in self._json_routes if route.matches(scope)[0] is Match.FULL), None)

    async def _authenticate(self, scope: Scope, headers: Headers) -> bool:
        """Whether the request carries a valid key; the key is left in the scope for the route's own check."""
        try:
            secret = secret_from(headers.get("x-api-key"), headers.get("authorization"))
        except InvalidApiKey:
            return False
        if secret is None:
            return False
        key = await key_for(self.service, secret)
        scope[KEY_SCOPE] = key
        return key is not None


def _has_body(scope: Scope) -> bool:
    for name, value in scope["headers"]:
        if name == b"transfer-encoding" or name == b"content-length" and value != b"0":
            return True
    return False


def _needs_key(dependant: Dependant) -> bool:
    return any(sub.call is required_key or _needs_key(sub) for sub in dependant.dependencies)


async def _read(receive: Receive) -> bytes | None:
    """The whole body, or ``None`` once it passes ``MAX_JSON_BYTES``."""
    body = bytearray()
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return bytes(body)  # the client left: the app sees a short body, then the disconnect
        body += message.get("body", b"")
        if len(body) > MAX_JSON_BYTES:
            return None
        if not message.get("more_body", False):
            return bytes(body)


def _replaying(body: bytes, receive: Receive) -> Receive:
    """``receive`` for the app: ``body`` whole, then what the client does next (it may leave)."""
    delivered = False

    async def replay() -> Message:
        nonlocal delivered
        if not delivered:
            delivered = True
            return {"type": "http.request", "body": body, "more_body": False}
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return message

    return replay

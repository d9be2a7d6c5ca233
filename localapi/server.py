"""Run the /v1 API in a background thread (the desktop app's way of serving)."""

from __future__ import annotations

import socket
import threading
import time
from typing import Any

import uvicorn

from localapi.core.service import Service
from localapi.http.app import create_app
from localapi.http.protocol import http_protocol


def port_free(host: str, port: int) -> bool:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


def uvicorn_config(service: Service, **options: Any) -> uvicorn.Config:
    """How FileKiln is served, the same by ``filekiln serve`` and the desktop app; ``options`` add
    uvicorn's own (log level, access log, grace period). What the HTTP layer refuses is answered as
    problem+json too (:mod:`localapi.http.protocol`); the API has no WebSocket, so an upgrade request
    is served as plain HTTP rather than by a WebSocket library's own plain-text answers.
    The event loop is asyncio's, even where uvloop is installed: the bench showed no gain from it.

    uvicorn believes ``X-Forwarded-For`` from loopback by default, which on a loopback server lets any
    client name the address it is counted under; only the ``trusted_proxies`` setting turns it on."""
    settings = service.settings
    proxies = list(settings.trusted_proxies)
    return uvicorn.Config(create_app(service), host=settings.host, port=settings.port, server_header=False,
                          log_config=None, proxy_headers=bool(proxies), forwarded_allow_ips=proxies or None,
                          http=http_protocol(settings.http_parser, settings.request_head_seconds,
                                             settings.request_body_idle_seconds),
                          ws="none", loop="asyncio", **options)


class Server(uvicorn.Server):
    """uvicorn's server, whose shutdown first ends the event streams and waiting requests: uvicorn waits
    for open responses (its grace period, 5 s for ``filekiln serve``) and then cancels them, so one open
    ``/events`` stream held every stop for those seconds and was cut off mid-stream, with a traceback in
    the log. Ended, a stream's client reconnects with ``Last-Event-ID`` when FileKiln is back."""

    def __init__(self, config: uvicorn.Config, service: Service) -> None:
        super().__init__(config)
        self.service = service

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        self.service.events.end_listeners()
        await super().shutdown(sockets)


class ApiServer:
    """uvicorn on a thread; ``start`` reports why it could not listen (e.g. port in use)."""

    def __init__(self, service: Service) -> None:
        self.service = service
        self._server: Server | None = None
        self._thread: threading.Thread | None = None
        self.error: str | None = None

    @property
    def running(self) -> bool:
        return self._server is not None and self._server.started and not self._server.should_exit

    def start(self, timeout: float = 10.0) -> bool:
        settings = self.service.settings
        if self.running:
            return True
        if not port_free(settings.host, settings.port):
            self.error = f"Port {settings.port} on {settings.host} is in use by another program."
            return False
        server = Server(uvicorn_config(self.service, log_level="warning"), self.service)
        # uvicorn installs no signal handlers off the main thread
        self._server = server
        self._thread = threading.Thread(target=server.run, daemon=True, name="filekiln-api")
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not server.started and self._thread.is_alive() and time.monotonic() < deadline:
            time.sleep(0.02)
        if not server.started:
            self.error = f"The API could not start on {settings.base_url}."
            self.stop()
            return False
        self.error = None
        return True

    def stop(self, timeout: float = 5.0) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout)
        self._server = None
        self._thread = None

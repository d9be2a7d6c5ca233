"""The API server's state for the API panel and the tray: start, stop, port, maintenance."""

from __future__ import annotations

import socket
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, Signal

from desktop.threads import Background
from localapi.core.service import Service

if TYPE_CHECKING:
    from localapi.server import ApiServer


def find_free_port(host: str = "127.0.0.1") -> int:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.bind((host.strip("[]"), 0))
        return int(s.getsockname()[1])


class ApiController(QObject):
    """Owns the :class:`ApiServer`. Starting waits for uvicorn, so it runs off the GUI thread."""

    changed = Signal()

    def __init__(self, service: Service, server: ApiServer | None = None, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.service = service
        self._server = server
        self._background = Background(1, self)
        self.state = "running" if server is not None and server.running else "stopped"
        self.error: str | None = server.error if server is not None else None

    @property
    def running(self) -> bool:
        return self.state == "running"

    @property
    def base_url(self) -> str:
        return self.service.settings.base_url

    @property
    def docs_url(self) -> str:
        return f"{self.base_url}/docs"

    @property
    def port(self) -> int:
        return self.service.settings.port

    @property
    def host(self) -> str:
        return self.service.settings.host

    @property
    def maintenance(self) -> bool:
        return bool(self.service.switches.maintenance)

    def set_maintenance(self, on: bool) -> None:
        self.service.switches.set_maintenance(on)
        self.changed.emit()

    def set_address(self, host: str | None = None, port: int | None = None) -> None:
        """Use another address; a running server is restarted on it."""
        was_running = self.running
        self.service.settings = self.service.settings.with_overrides(host=host, port=port)
        self.changed.emit()
        if was_running:
            self.stop(then_start=True)

    def _make_server(self) -> ApiServer:
        if self._server is None:
            from localapi.server import ApiServer  # FastAPI is imported only when the API starts

            self._server = ApiServer(self.service)
        return self._server

    def start(self) -> None:
        if self.state in ("starting", "running"):
            return
        self.state = "starting"
        self.error = None
        self.changed.emit()

        def work() -> tuple[bool, str | None]:
            server = self._make_server()
            ok = server.start()
            return ok, server.error

        self._background.run(work, self._started, self._start_failed)

    def _started(self, result: tuple[bool, str | None]) -> None:
        ok, error = result
        self.state = "running" if ok else "error"
        self.error = None if ok else (error or "The API could not start.")
        self.changed.emit()

    def _start_failed(self, exc: BaseException) -> None:
        self.state = "error"
        self.error = f"The API could not start: {exc}"
        self.changed.emit()

    def stop(self, then_start: bool = False) -> None:
        if self._server is None or self.state == "stopping":
            if then_start:
                self.start()
            return
        self.state = "stopping"
        self.changed.emit()
        server = self._server

        def done(_: object) -> None:
            self.state = "stopped"
            self.changed.emit()
            if then_start:
                self.start()

        self._background.run(server.stop, done, done)

    def shutdown(self) -> None:
        """Stop now, from the GUI thread (when quitting)."""
        self._background.wait(15_000)
        if self._server is not None:
            self._server.stop()
        self.state = "stopped"

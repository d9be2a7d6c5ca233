"""A loopback HTTP listener for the hostile tests: whatever connects to it is recorded, so that a test
can show that an input's references (URLs in SVG, HTML, models, playlists ...) were never followed."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from typing import Any


class Listener(http.server.ThreadingHTTPServer):
    """A loopback HTTP server that records every connection made to it (and each request line, if any)."""

    def __init__(self) -> None:
        self.hits: list[str] = []
        hits = self.hits

        class Handler(http.server.BaseHTTPRequestHandler):
            def parse_request(self) -> bool:  # any method: GET, HEAD, WebDAV's OPTIONS and PROPFIND ...
                ok = super().parse_request()
                hits.append(self.requestline)
                return ok

            def do_GET(self) -> None:  # noqa: N802
                self.send_error(404)

            def log_message(self, *args: object) -> None:
                pass

        super().__init__(("127.0.0.1", 0), Handler)

    def verify_request(self, request: Any, client_address: Any) -> bool:
        self.hits.append(f"connection from {client_address}")
        return True

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


def listening() -> Iterator[Listener]:
    """Body of a ``listener`` fixture: a :class:`Listener` serving on a thread for the fixture's scope."""
    srv = Listener()
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield srv
    srv.shutdown()
    srv.server_close()

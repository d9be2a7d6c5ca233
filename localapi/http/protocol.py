"""HTTP/1.1 on the wire: uvicorn's protocols, with timeouts on clients that stall, answering what
never reaches the app as problem+json.

Two parsers serve the same behaviour: httptools (llhttp, in C: the fast one, used when installed) and
h11 (pure Python, always there). The ``http_parser`` setting picks one (``auto``: httptools when it
can be imported).

A request the parser cannot read (two Host headers, a path that is not ASCII, a header block over
16 KiB, a TLS hello on the plain port) never becomes an ASGI request, so the app's error handlers
never see it; uvicorn answers it with a plain-text ``400 Invalid HTTP request received.``. These
protocols answer it like every other error of the API.

uvicorn also waits for ever on a client that sends half a request and stops, so a few hundred such
connections stay open as long as their sender likes. Here the request line and headers must arrive
within ``request_head_seconds`` (10 by default), and a body may pause at most ``request_body_idle_seconds``
(20) between two reads: a
per-read limit, so an upload of any size or speed goes on as long as it keeps moving. A pause of the
server's own (the app busy, not reading) is not counted.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any, Literal

import h11
from uvicorn.protocols.http.h11_impl import STATUS_PHRASES, H11Protocol

from localapi.http.problems import PROBLEM_MEDIA_TYPE, problem_body

try:
    import httptools
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    HAVE_HTTPTOOLS = True
except ImportError:  # h11 serves alone
    HAVE_HTTPTOOLS = False

log = logging.getLogger("filekiln.http")

# the request line and headers together; what h11 takes by default, said out loud
MAX_HEAD_BYTES = 16 * 1024
HEAD_SECONDS = 10.0
BODY_IDLE_SECONDS = 20.0

# what a stalled connection owes: the head of a request, the rest of a body, or nothing
Owed = Literal["head", "body", "nothing"]


class _Watched:
    """The stall timers and the problem answers, over a protocol that says what the client owes
    (:meth:`owed`) and whether the app's answer has begun (:meth:`answer_begun`)."""

    head_seconds = HEAD_SECONDS  # the settings' values in the class :func:`http_protocol` gives
    body_idle_seconds = BODY_IDLE_SECONDS

    transport: asyncio.Transport
    loop: asyncio.AbstractEventLoop
    server_state: Any
    client: tuple[str, int] | None
    cycle: Any
    flow: Any
    stall_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)  # type: ignore[misc]
        self.watch()

    def on_response_complete(self) -> None:
        super().on_response_complete()  # type: ignore[misc]  # may start a pipelined request already received
        self.watch()

    def connection_lost(self, exc: Exception | None) -> None:
        self.stop_timer()
        super().connection_lost(exc)  # type: ignore[misc]

    def owed(self) -> Owed:
        raise NotImplementedError

    def head_begun(self) -> bool:
        """Some of a request's head has arrived (not a connection that has sent nothing yet)."""
        raise NotImplementedError

    def answer_begun(self) -> bool:
        raise NotImplementedError

    def watch(self) -> None:
        """Time what the client owes: the head of a request (one deadline from its first byte, or from
        the connection's start), or the rest of a body (a deadline from each read). After the last
        response, uvicorn's keep-alive timeout closes an idle connection."""
        owed = self.owed()
        if self.transport.is_closing():
            self.stop_timer()
        elif owed == "body":
            self.start_timer(self.body_idle_seconds)
        elif owed == "head":
            if self.stall_timer is None:
                self.start_timer(self.head_seconds)
        else:
            self.stop_timer()

    def start_timer(self, seconds: float) -> None:
        self.stop_timer()
        self.stall_timer = self.loop.call_later(seconds, self.stalled)

    def stop_timer(self) -> None:
        if self.stall_timer is not None:
            self.stall_timer.cancel()
            self.stall_timer = None

    def stalled(self) -> None:
        """The client owed the server data for too long: ``408 request_timeout`` and close (a connection
        on which no request was begun is closed without a word)."""
        self.stall_timer = None
        if self.transport.is_closing():
            return
        owed = self.owed()
        if owed == "body" and (self.flow.read_paused or self.cycle.waiting_for_100_continue):
            self.start_timer(self.body_idle_seconds)  # the pause is the server's: the app is not reading yet
        elif owed == "body":
            log.info("closed a request from %s: its body paused for %g s", self.client_text, self.body_idle_seconds)
            self.answer_and_close(408, "request_timeout",
                                  f"The request body paused for more than {self.body_idle_seconds:g} seconds.")
        elif owed == "head" and self.head_begun():
            log.info("closed a request from %s: its headers took over %g s", self.client_text, self.head_seconds)
            self.answer_and_close(408, "request_timeout",
                                  f"The request line and headers took more than {self.head_seconds:g} seconds.")
        elif owed == "head":
            self.transport.close()

    @property
    def client_text(self) -> str:
        return f"{self.client[0]}:{self.client[1]}" if self.client else "?"

    def refuse(self, too_large: bool) -> None:
        """What the parser refused: ``431`` for a head over the limit, ``400 malformed_request`` for
        anything else (h11 hints 501 for a transfer coding it does not know; the client sent it, so it
        is the client's mistake)."""
        if too_large:
            self.answer_and_close(431, "request_too_large",
                                  f"The request line and headers may be at most {MAX_HEAD_BYTES} bytes.")
        else:
            self.answer_and_close(400, "malformed_request", "The request is not valid HTTP/1.1.")

    def answer_and_close(self, status: int, code: str, detail: str) -> None:
        """Answer with a problem, unless the app's answer has begun, and close. The app, if it is still
        handling the request, sees the client gone from then on, and what it sends is dropped."""
        begun = self.answer_begun()
        if self.cycle is not None:
            self.cycle.disconnected = True
            self.cycle.message_event.set()
        if not begun:
            self.transport.write(self.problem_bytes(status, code, detail))
        self.transport.close()

    def problem_bytes(self, status: int, code: str, detail: str) -> bytes:
        body = json.dumps(problem_body(status, code, detail), separators=(",", ":")).encode()
        headers = [*self.server_state.default_headers, (b"content-type", PROBLEM_MEDIA_TYPE.encode()),
                   (b"content-length", str(len(body)).encode()), (b"connection", b"close")]
        lines = [f"HTTP/1.1 {status} {STATUS_PHRASES[status].decode()}\r\n".encode()]
        lines += [name + b": " + value + b"\r\n" for name, value in headers]
        return b"".join([*lines, b"\r\n", body])


class _Connection(h11.Connection):
    """h11's connection, keeping the error it raised on what the client sent: uvicorn answers every
    such error without looking at it, and the error is what tells a request too large from a
    malformed one."""

    refusal: h11.RemoteProtocolError | None = None

    def next_event(self) -> Any:
        try:
            return super().next_event()
        except h11.RemoteProtocolError as exc:
            self.refusal = exc
            raise


class ProblemH11Protocol(_Watched, H11Protocol):
    """uvicorn's h11 protocol whose own answers are problem+json (see the module's docstring)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.conn = self.recording = _Connection(h11.SERVER, MAX_HEAD_BYTES)
        self.stall_timer = None

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        self.watch()

    def owed(self) -> Owed:
        state = self.conn.their_state
        if state is h11.SEND_BODY:
            return "body"
        if state is h11.IDLE and (self.cycle is None or self.conn.trailing_data[0]):
            return "head"
        return "nothing"

    def head_begun(self) -> bool:
        return bool(self.conn.trailing_data[0])

    def answer_begun(self) -> bool:
        return self.conn.our_state not in (h11.IDLE, h11.SEND_RESPONSE)

    def send_400_response(self, msg: str) -> None:
        """What uvicorn calls when h11 refuses the request."""
        refusal = self.recording.refusal
        self.refuse(refusal is not None and refusal.error_status_hint == 431)


if HAVE_HTTPTOOLS:

    class ProblemHttpToolsProtocol(_Watched, HttpToolsProtocol):
        """uvicorn's httptools protocol whose own answers are problem+json, with h11's checks that
        llhttp does not make: at most ``MAX_HEAD_BYTES`` of head, and one Host header. An upgrade
        request (the API has no WebSocket) is answered as plain HTTP, and the connection closes after."""

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.stall_timer = None
            self.in_head = False  # a request's first byte has arrived, its headers not all
            self.in_body = False  # its headers have arrived, its body not all
            self.head_bytes = 0  # the request line and headers as parsed
            self.head_read = 0  # the bytes read while the head was incomplete: llhttp keeps them until it is
            self.too_large = False
            self.upgraded = False

        def data_received(self, data: bytes) -> None:
            self._unset_keepalive_if_required()
            if self.upgraded:
                return  # what follows an upgrade is not HTTP; the connection closes after the answer
            if self.in_head:
                self.head_read += len(data)
                if self.head_read > MAX_HEAD_BYTES:
                    self.refuse(too_large=True)
                    return
            try:
                self.parser.feed_data(data)
            except httptools.HttpParserUpgrade:
                self.upgraded = True
                if self.cycle is not None and not self.cycle.response_complete:
                    self.cycle.keep_alive = False
                else:
                    self.transport.close()
            except httptools.HttpParserError:
                self.refuse(self.too_large)
                return
            self.watch()

        def on_message_begin(self) -> None:
            super().on_message_begin()
            self.in_head, self.in_body, self.head_bytes, self.head_read = True, False, 0, 0

        def on_url(self, url: bytes) -> None:
            self.count(len(url))
            super().on_url(url)

        def on_header(self, name: bytes, value: bytes) -> None:
            self.count(len(name) + len(value) + 4)
            if name.lower() == b"host" and any(n == b"host" for n, _ in self.headers):
                raise ValueError("two Host headers")  # the parser turns it into HttpParserCallbackError
            super().on_header(name, value)

        def count(self, size: int) -> None:
            self.head_bytes += size
            if self.head_bytes > MAX_HEAD_BYTES:
                self.too_large = True
                raise ValueError("request head too large")

        def on_headers_complete(self) -> None:
            self.in_head, self.in_body = False, True
            version = self.parser.get_http_version()
            if version not in ("1.0", "1.1"):  # llhttp reads HTTP/0.9's bare request line too
                raise ValueError(f"HTTP/{version}")
            if version == "1.1" and not any(n == b"host" for n, _ in self.headers):
                raise ValueError("HTTP/1.1 without a Host header")
            super().on_headers_complete()

        def on_message_complete(self) -> None:
            self.in_body = False
            super().on_message_complete()

        def owed(self) -> Owed:
            if self.in_body:
                return "body"
            if self.in_head or self.cycle is None:
                return "head"
            return "nothing"

        def head_begun(self) -> bool:
            return self.in_head

        def answer_begun(self) -> bool:
            return self.cycle is not None and self.cycle.response_started and not self.cycle.response_complete

        def send_400_response(self, msg: str) -> None:
            self.refuse(self.too_large)


def http_protocol(parser: str, head_seconds: float = HEAD_SECONDS,
                  body_idle_seconds: float = BODY_IDLE_SECONDS) -> type[asyncio.Protocol]:
    """The protocol class for the ``http_parser`` setting (``httptools``, ``h11``, or ``auto``: httptools
    when installed), timing stalled clients by ``request_head_seconds`` and ``request_body_idle_seconds``."""
    base: type[asyncio.Protocol] = (ProblemHttpToolsProtocol if parser != "h11" and HAVE_HTTPTOOLS
                                    else ProblemH11Protocol)
    if (head_seconds, body_idle_seconds) == (HEAD_SECONDS, BODY_IDLE_SECONDS):
        return base
    return type(base.__name__, (base,), {"head_seconds": head_seconds, "body_idle_seconds": body_idle_seconds})

"""HTTP/1.1 on the wire: uvicorn's h11 protocol, with timeouts on clients that stall, answering what
never reaches the app as problem+json.

A request h11 cannot parse (two Host headers, a path that is not ASCII, a header block over 16 KiB,
a TLS hello on the plain port) never becomes an ASGI request, so the app's error handlers never see
it; uvicorn answers it with a plain-text ``400 Invalid HTTP request received.``. This protocol answers
it like every other error of the API.

uvicorn also waits for ever on a client that sends half a request and stops, so a few hundred such
connections stay open as long as their sender likes. Here the request line and headers must arrive
within ``HEAD_SECONDS``, and a body may pause at most ``BODY_IDLE_SECONDS`` between two reads: a
per-read limit, so an upload of any size or speed goes on as long as it keeps moving. A pause of the
server's own (the app busy, not reading) is not counted.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import STATUS_PHRASES, H11Protocol

from localapi.http.problems import PROBLEM_MEDIA_TYPE, problem_body

log = logging.getLogger("filekiln.http")

# the request line and headers together; what h11 takes by default, said out loud
MAX_HEAD_BYTES = 16 * 1024
HEAD_SECONDS = 10.0
BODY_IDLE_SECONDS = 20.0


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


class ProblemH11Protocol(H11Protocol):
    """uvicorn's h11 protocol whose own answers are problem+json (see the module's docstring)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.conn = self.recording = _Connection(h11.SERVER, MAX_HEAD_BYTES)
        self.stall_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self.watch()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        self.watch()

    def on_response_complete(self) -> None:
        super().on_response_complete()  # may start a pipelined request already received
        self.watch()

    def connection_lost(self, exc: Exception | None) -> None:
        self.stop_timer()
        super().connection_lost(exc)

    def watch(self) -> None:
        """Time what the client owes: the head of a request (one deadline from its first byte, or from
        the connection's start), or the rest of a body (a deadline from each read). After the last
        response, uvicorn's keep-alive timeout closes an idle connection."""
        state = self.conn.their_state
        if self.transport.is_closing() or state not in (h11.IDLE, h11.SEND_BODY):
            self.stop_timer()
        elif state is h11.SEND_BODY:
            self.start_timer(BODY_IDLE_SECONDS)
        elif self.stall_timer is None and (self.cycle is None or self.conn.trailing_data[0]):
            self.start_timer(HEAD_SECONDS)

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
        state = self.conn.their_state
        if self.transport.is_closing():
            return
        if state is h11.SEND_BODY and (self.flow.read_paused or self.cycle.waiting_for_100_continue):
            self.start_timer(BODY_IDLE_SECONDS)  # the pause is the server's: the app is not reading yet
        elif state is h11.SEND_BODY:
            log.info("closed a request from %s: its body paused for %.0f s", self.client_text, BODY_IDLE_SECONDS)
            self.answer_and_close(408, "request_timeout",
                                  f"The request body paused for more than {BODY_IDLE_SECONDS:.0f} seconds.")
        elif state is h11.IDLE and self.conn.trailing_data[0]:
            log.info("closed a request from %s: its headers took over %.0f s", self.client_text, HEAD_SECONDS)
            self.answer_and_close(408, "request_timeout",
                                  f"The request line and headers took more than {HEAD_SECONDS:.0f} seconds.")
        elif state is h11.IDLE:
            self.transport.close()

    @property
    def client_text(self) -> str:
        return f"{self.client[0]}:{self.client[1]}" if self.client else "?"

    def send_400_response(self, msg: str) -> None:
        """What uvicorn calls when h11 refuses the request: ``431`` for a head over the limit,
        ``400 malformed_request`` for anything else (h11 hints 501 for a transfer coding it does not
        know; the client sent it, so it is the client's mistake)."""
        refusal = self.recording.refusal
        if refusal is not None and refusal.error_status_hint == 431:
            self.answer_and_close(431, "request_too_large",
                                  f"The request line and headers may be at most {MAX_HEAD_BYTES} bytes.")
        else:
            self.answer_and_close(400, "malformed_request", "The request is not valid HTTP/1.1.")

    def answer_and_close(self, status: int, code: str, detail: str) -> None:
        """Answer with a problem, unless the app's answer has begun, and close. The app, if it is still
        handling the request, sees the client gone from then on, and what it sends is dropped."""
        if self.cycle is not None:
            self.cycle.disconnected = True
            self.cycle.message_event.set()
        if self.conn.our_state in (h11.IDLE, h11.SEND_RESPONSE):
            body = json.dumps(problem_body(status, code, detail), separators=(",", ":")).encode()
            headers = [*self.server_state.default_headers, (b"content-type", PROBLEM_MEDIA_TYPE.encode()),
                       (b"content-length", str(len(body)).encode()), (b"connection", b"close")]
            for event in (h11.Response(status_code=status, headers=headers, reason=STATUS_PHRASES[status]),
                          h11.Data(data=body), h11.EndOfMessage()):
                self.transport.write(self.conn.send(event) or b"")
        self.transport.close()

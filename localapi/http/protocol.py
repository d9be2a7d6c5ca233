"""HTTP/1.1 on the wire: uvicorn's h11 protocol, answering what never reaches the app as problem+json.

A request h11 cannot parse (two Host headers, a path that is not ASCII, a header block over 16 KiB,
a TLS hello on the plain port) never becomes an ASGI request, so the app's error handlers never see
it; uvicorn answers it with a plain-text ``400 Invalid HTTP request received.``. This protocol answers
it like every other error of the API.
"""

from __future__ import annotations

import json
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import STATUS_PHRASES, H11Protocol

from localapi.http.problems import PROBLEM_MEDIA_TYPE, problem_body

# the request line and headers together; what h11 takes by default, said out loud
MAX_HEAD_BYTES = 16 * 1024


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
            body = json.dumps(problem_body(status, code, detail)).encode()
            headers = [*self.server_state.default_headers, (b"content-type", PROBLEM_MEDIA_TYPE.encode()),
                       (b"content-length", str(len(body)).encode()), (b"connection", b"close")]
            for event in (h11.Response(status_code=status, headers=headers, reason=STATUS_PHRASES[status]),
                          h11.Data(data=body), h11.EndOfMessage()):
                self.transport.write(self.conn.send(event) or b"")
        self.transport.close()

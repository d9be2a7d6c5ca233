"""Streaming multipart upload: parsed as it arrives, written to the data dir, cut off at the limit.

FastAPI's ``UploadFile`` spools the whole body to a temp file before the route
runs; here the body goes straight into the store's temp dir, is hashed on the
way, and the request is refused the moment it passes the limit.
"""

from __future__ import annotations

import asyncio
import errno
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import anyio
from python_multipart.exceptions import FormParserError
from python_multipart.multipart import MultipartParser, parse_options_header
from starlette.requests import ClientDisconnect, Request

from localapi.core.errors import BadRequest, FileTooLarge, InsufficientStorage
from localapi.core.files import FileStore, UploadSink

MAX_PARTS = 16
MAX_FIELD_BYTES = 64 * 1024
WRITE_BATCH = 1024 * 1024
MULTIPART_OVERHEAD = 64 * 1024


@dataclass
class _Part:
    name: str = ""
    filename: str | None = None
    header_field: bytes = b""
    headers: dict[bytes, bytes] = field(default_factory=dict)


@dataclass
class Upload:
    sink: UploadSink
    filename: str
    fields: dict[str, str]
    kept: Any = None  # what ``keep`` returned


async def receive_upload(request: Request, store: FileStore, limit: int,
                         keep: Callable[[UploadSink, str], Any] | None = None, *, hashed: bool = False) -> Upload:
    """Read a multipart body with one file part named ``file``; raise problems on bad input.
    ``hashed``: take the file's SHA-256 on the way (``upload.sink.sha256``).

    ``keep(sink, filename)`` (e.g. taking the file into the store) runs on the thread that writes the
    last bytes, right after them: a small upload costs one hop off the event loop, not three."""
    content_type = request.headers.get("content-type", "")
    ctype, options = parse_options_header(content_type)
    boundary = options.get(b"boundary")
    if ctype != b"multipart/form-data" or not boundary:
        raise BadRequest("Send the file as multipart/form-data with a part named 'file'.", code="malformed_request")
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit + MULTIPART_OVERHEAD:
        raise FileTooLarge(f"The file is larger than the limit of {limit} bytes.")

    sink: UploadSink | None = None
    filename = ""
    parts = 0
    fields: dict[str, str] = {}
    current = _Part()
    field_value = bytearray()
    pending = bytearray()
    errors: list[Exception] = []

    def on_part_begin() -> None:
        nonlocal current, parts
        parts += 1
        if parts > MAX_PARTS:
            raise BadRequest("Too many parts in the multipart body.", code="malformed_request")
        current = _Part()
        field_value.clear()

    def on_header_field(data: bytes, start: int, end: int) -> None:
        current.header_field += data[start:end]

    def on_header_value(data: bytes, start: int, end: int) -> None:
        key = current.header_field.lower()
        current.headers[key] = current.headers.get(key, b"") + data[start:end]

    def on_header_end() -> None:
        current.header_field = b""

    def on_headers_finished() -> None:
        nonlocal sink, filename
        _, disp = parse_options_header(current.headers.get(b"content-disposition", b""))
        current.name = disp.get(b"name", b"").decode("utf-8", "replace")
        raw_filename = disp.get(b"filename")
        current.filename = raw_filename.decode("utf-8", "replace") if raw_filename is not None else None
        if current.name == "file":
            if sink is not None:
                raise BadRequest("Send exactly one part named 'file'.", code="malformed_request")
            sink = store.new_sink(limit, hashed=hashed)
            filename = current.filename or "upload"

    def on_part_data(data: bytes, start: int, end: int) -> None:
        if current.name == "file":
            pending.extend(memoryview(data)[start:end])  # one copy, not two
        else:
            field_value.extend(data[start:end])
            if len(field_value) > MAX_FIELD_BYTES:
                raise BadRequest("A form field is too large.", code="malformed_request")

    def on_part_end() -> None:
        if current.name != "file" and current.name:
            fields[current.name] = field_value.decode("utf-8", "replace")

    try:
        parser = MultipartParser(boundary, callbacks={
            "on_part_begin": on_part_begin, "on_header_field": on_header_field, "on_header_value": on_header_value,
            "on_header_end": on_header_end, "on_headers_finished": on_headers_finished,
            "on_part_data": on_part_data, "on_part_end": on_part_end,
        }, max_header_count=8, max_header_size=8192)
    except FormParserError:  # a boundary it will not take (over 256 characters): the client's mistake
        raise BadRequest("The multipart boundary is too long.", code="malformed_request") from None

    # The disk write and the hash of one batch run on a thread while the next batch is read and
    # parsed here: one batch in flight at a time, so memory stays at two batches whatever the size.
    in_flight: asyncio.Future[None] | None = None

    async def flush() -> None:
        nonlocal pending, in_flight
        if in_flight is not None:
            await in_flight
            in_flight = None
        if sink is not None and pending:
            chunk, pending = pending, bytearray()
            in_flight = asyncio.get_running_loop().run_in_executor(None, sink.write, chunk)

    def last(part: UploadSink, chunk: bytearray) -> Any:
        part.write(chunk)
        part.finish()
        return keep(part, filename) if keep is not None else None

    try:
        async for chunk in request.stream():
            try:
                parser.write(chunk)
            except (BadRequest, FileTooLarge):
                raise
            except Exception as exc:  # the parser's own errors: a malformed body
                errors.append(exc)
                raise BadRequest("The multipart body is malformed.", code="malformed_request") from None
            if len(pending) >= WRITE_BATCH:
                await flush()
        parser.finalize()
        if in_flight is not None:
            await in_flight
            in_flight = None
        kept = None
        if sink is not None:
            rest, pending = pending, bytearray()
            kept = await anyio.to_thread.run_sync(last, sink, rest)
    except OSError as exc:
        await _settle(in_flight)
        if sink is not None:
            sink.discard()
        if exc.errno == errno.ENOSPC:
            raise InsufficientStorage("The disk holding FileKiln's data is full.") from None
        raise
    except ClientDisconnect:
        await _settle(in_flight)
        if sink is not None:
            sink.discard()
        raise BadRequest("The upload was interrupted.", code="upload_interrupted") from None
    except BaseException:
        await _settle(in_flight)
        if sink is not None:
            sink.discard()
        raise
    if sink is None:
        raise BadRequest("The multipart body has no part named 'file'.", code="malformed_request",
                         errors={"file": ["required"]})
    return Upload(sink=sink, filename=filename, fields=fields, kept=kept)


async def _settle(write: asyncio.Future[None] | None) -> None:
    """Let a batch still being written finish (or fail) before its file is removed."""
    if write is not None:
        try:
            await asyncio.shield(write)
        except BaseException:  # its own error, or a cancel of this request: the file goes either way
            pass

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import IO, Annotated
from urllib.parse import quote

import anyio
from fastapi import APIRouter, Depends, Header, Path, Query, Request, Response
from fastapi.responses import StreamingResponse

from localapi.core.errors import Gone, InvalidSignature, ServiceError
from localapi.core.files import FileStore, StoredFile
from localapi.http.deps import ServiceDep
from localapi.http.problems import problems

router = APIRouter(prefix="/downloads", tags=["downloads"])

CHUNK = 256 * 1024
SMALL = 256 * 1024  # a file this small is read in the same hop that opens it, and sent in one piece
_RANGE = re.compile(r"^bytes=(\d*)-(\d*)$")


def content_disposition(name: str) -> str:
    ascii_name = "".join(c if 32 <= ord(c) < 127 and c not in '"\\;' else "_" for c in name) or "download"
    return f"attachment; filename=\"{ascii_name}\"; filename*=UTF-8''{quote(name, safe='')}"


def parse_range(header: str | None, size: int) -> tuple[int, int] | None:
    """One ``bytes=a-b`` range as (start, end inclusive); None for the whole file."""
    if not header:
        return None
    m = _RANGE.match(header.strip())
    if not m or (not m.group(1) and not m.group(2)):
        return None  # several ranges or another unit: answer with the whole file
    if m.group(1):
        start = int(m.group(1))
        end = int(m.group(2)) if m.group(2) else size - 1
    else:
        start, end = max(size - int(m.group(2)), 0), size - 1
    end = min(end, size - 1)
    if start > end or start >= size:
        raise ServiceError("The requested range is outside the file.", code="range_not_satisfiable",
                           headers={"Content-Range": f"bytes */{size}"})
    return start, end


async def _stream(f: IO[bytes], start: int, length: int) -> AsyncIterator[bytes]:
    try:
        await anyio.to_thread.run_sync(f.seek, start)
        remaining = length
        while remaining > 0:
            chunk = await anyio.to_thread.run_sync(f.read, min(CHUNK, remaining))
            if not chunk:
                break
            remaining -= len(chunk)
            yield chunk
    finally:
        f.close()


class RangeNotSatisfiable(ServiceError):
    status = 416
    code = "range_not_satisfiable"
    title = "Range not satisfiable"


@dataclass
class OpenedLink:
    """A checked download link's file, open at the answer's first byte, and the answer's status and
    headers; ``body`` holds the whole file already when it is small (the file is then closed)."""

    file: IO[bytes]
    start: int
    length: int
    status: int
    media_type: str
    headers: dict[str, str]
    body: bytes | None = None


def _open(files: FileStore, stored: StoredFile, read_small: bool) -> tuple[IO[bytes], bytes | None]:
    """The file, opened before anything else (a purge that unlinks it now cannot truncate this
    download), and its bytes when it is small and they are wanted."""
    f = files.open(stored.id)
    if read_small and stored.size_bytes <= SMALL:
        with f:
            return f, f.read(SMALL + 1)
    return f, None


async def open_link(
    service: ServiceDep,
    request: Request,
    file_id: Annotated[str, Path(pattern=r"^file_[0-9a-f]{32}$")],
    name: Annotated[str, Path(max_length=400)],
    expires: Annotated[int, Query(ge=0, le=2**40)],
    signature: Annotated[str, Query(max_length=128)],
    range: Annotated[str | None, Header(max_length=200)] = None,
) -> OpenedLink:
    """Check the link's signature and expiry, then open its file: GET and HEAD answer alike."""
    verdict = service.signer.check(file_id, expires, signature)
    if verdict == "tampered":
        raise InvalidSignature("The download link was altered or is not from this FileKiln.")
    if verdict == "expired":
        raise Gone("The download link has expired; ask GET /jobs/{id}/result for a new one.", code="link_expired")
    stored = service.files.get(file_id, any_owner=True, include_deleted=True)  # one indexed read, on the loop
    if stored.deleted_at is not None:  # a link to a file that was there: 410, whoever removed it
        if stored.expires_at <= stored.deleted_at:
            raise Gone("The file was purged when its retention ended.", code="file_expired")
        raise Gone("The file was deleted.", code="file_deleted")
    try:
        f, data = await anyio.to_thread.run_sync(_open, service.files, stored, request.method == "GET")
    except FileNotFoundError:
        raise Gone("The file was purged.", code="file_expired") from None
    size = len(data) if data is not None else stored.size_bytes
    try:
        requested = parse_range(range, size)
    except ServiceError as exc:
        f.close()
        raise RangeNotSatisfiable(exc.detail, headers=exc.headers) from None
    start, end = requested if requested else (0, size - 1)
    length = max(end - start + 1, 0)
    headers = {
        "Content-Disposition": content_disposition(stored.original_name),
        "X-Content-Type-Options": "nosniff",
        "Accept-Ranges": "bytes",
        "Content-Length": str(length),
        "Cache-Control": "private, no-store",
    }
    if requested:
        headers["Content-Range"] = f"bytes {start}-{end}/{size}"
    body = data[start:start + length] if data is not None else None
    return OpenedLink(f, start, length, 206 if requested else 200, stored.mime_type, headers, body)


LinkDep = Annotated[OpenedLink, Depends(open_link)]


@router.get("/{file_id}/{name}", response_class=StreamingResponse,
            responses={**problems(403, 404, 410, 416),
                       200: {"content": {"application/octet-stream": {"schema": {"type": "string",
                                                                                  "format": "binary"}}},
                             "description": "The file"},
                       206: {"description": "Part of the file (Range)"}})
async def download(link: LinkDep) -> Response:
    """A signed link from ``GET /jobs/{id}/result``; needs no key. Supports HTTP Range."""
    if link.body is not None:
        return Response(link.body, status_code=link.status, media_type=link.media_type, headers=link.headers)
    return StreamingResponse(_stream(link.file, link.start, link.length), status_code=link.status,
                             media_type=link.media_type, headers=link.headers)


# HEAD is GET without the body (RFC 9110, 9.3.2), not an operation of its own in the OpenAPI document
@router.head("/{file_id}/{name}", include_in_schema=False)
async def download_head(link: LinkDep) -> Response:
    """What GET would answer, status and headers, without reading the file."""
    link.file.close()
    return Response(status_code=link.status, media_type=link.media_type, headers=link.headers)

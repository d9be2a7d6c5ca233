from __future__ import annotations

from typing import Annotated, Any

import anyio
from fastapi import APIRouter, Header, Query, Request, Response
from fastapi.responses import JSONResponse

from localapi.core.errors import Conflict, ToolNotFound
from localapi.core.files import StoredFile, UploadSink, display_name
from localapi.core.idempotency import request_hash
from localapi.core.service import Service
from localapi.http.deps import KeyDep, ServiceDep
from localapi.http.problems import problems
from localapi.http.schemas import FileRefOut, iso
from localapi.http.upload import receive_upload

router = APIRouter(prefix="/files", tags=["files"])

UPLOAD_BODY = {
    "requestBody": {
        "required": True,
        "content": {"multipart/form-data": {"schema": {
            "type": "object", "required": ["file"],
            "properties": {"file": {"type": "string", "format": "binary"}},
        }}},
    }
}


def file_out(f: StoredFile) -> FileRefOut:
    return FileRefOut(id=f.id, originalName=f.original_name, mimeType=f.mime_type, sizeBytes=f.size_bytes,
                      format=f.format, createdAt=iso(f.created_at), expiresAt=iso(f.expires_at))  # type: ignore[arg-type]


def upload_hash(sha256: str | None, sent_name: str) -> str:
    """What makes two uploads the same request: their content and the name the store keeps of the one
    sent (``display_name``), so that a name it cut or cleaned is the same name in a retry."""
    assert sha256 is not None, "an idempotent upload is received hashed"
    return request_hash("POST /files", [sha256, display_name(sent_name)])


def upload_limit(service: Service, tool_id: str | None) -> int:
    limit = service.settings.max_upload_bytes
    if tool_id:
        tool = service.catalogue.get(tool_id)
        if tool is None:
            raise ToolNotFound(f"No tool {tool_id!r}.", code="unknown_tool")
        limit = min(limit, tool.max_input_size_bytes)
    return limit


@router.post("", status_code=201, response_model=FileRefOut, openapi_extra=UPLOAD_BODY,
             responses=problems(400, 401, 404, 409, 413, 422, 429, 507))
async def upload_file(
    request: Request,
    service: ServiceDep,
    key: KeyDep,
    tool: Annotated[str | None, Query(description="Apply this tool's size limit while uploading",
                                      max_length=100)] = None,
    idempotency_key: Annotated[str | None, Header(max_length=255)] = None,
) -> Any:
    """Upload one file (multipart part ``file``). It is streamed to disk and never held in memory;
    an upload over the limit is cut off with 413 and its partial file removed."""
    limit = upload_limit(service, tool)
    if idempotency_key:
        replay = await _run_blocking(service.idempotency.lookup, key.id, idempotency_key)
        if replay is None:
            replay = await _run_blocking(service.idempotency.begin, key.id, idempotency_key, None)
        if replay is not None:
            upload = await receive_upload(request, service.files, limit, hashed=True)
            upload.sink.discard()
            service.idempotency.check_same(replay, upload_hash(upload.sink.sha256, upload.filename))
            return JSONResponse(replay.body, status_code=replay.status_code, headers={"Idempotent-Replayed": "true"})
    def keep(sink: UploadSink, filename: str) -> StoredFile:
        return service.files.add(sink.path, filename, key_id=key.id, kind="upload", sha256=sink.sha256)

    try:
        upload = await receive_upload(request, service.files, limit, keep, hashed=bool(idempotency_key))
        stored: StoredFile = upload.kept
    except BaseException:
        if idempotency_key:
            await _run_blocking(service.idempotency.abandon, key.id, idempotency_key)
        raise
    body = file_out(stored).model_dump(mode="json")
    if idempotency_key:
        await _run_blocking(service.idempotency.complete, key.id, idempotency_key, 201, body,
                            upload_hash(upload.sink.sha256, upload.filename))
    return JSONResponse(body, status_code=201)


async def _run_blocking(fn: Any, *args: Any) -> Any:
    return await anyio.to_thread.run_sync(lambda: fn(*args))


@router.get("/{id}", response_model=FileRefOut, responses=problems(401, 404, 410, 429))
def get_file(id: str, service: ServiceDep, key: KeyDep) -> FileRefOut:
    return file_out(service.files.get(id, key_id=key.id))


@router.delete("/{id}", status_code=204, response_class=Response, responses=problems(401, 404, 409, 410, 429))
def delete_file(id: str, service: ServiceDep, key: KeyDep) -> Response:
    """Delete an uploaded file or a result now, before retention would."""
    f = service.files.get(id, key_id=key.id)
    if f.kind == "upload" and service.jobs.inputs_in_use(f.id):
        raise Conflict("The file is an input of a job that has not finished.", code="file_in_use")
    service.files.delete(f.id)
    return Response(status_code=204)


"""A bare FastAPI app on uvicorn: the floor that FileKiln's own request costs are measured against.

- ``GET /v1/ping`` (and ``/v1/health``): one small JSON answer, the floor of a single call;
- ``POST /v1/files``, ``POST /v1/jobs``, ``GET /v1/downloads/...``: a script's small job as FastAPI does
  it with nothing else around it: the upload written to a file, the conversion run in this process,
  two at a time (no child process, no database, no keys, no queue, no events), the output served.
  The throughput of these three calls is what any FastAPI server could give on this machine with the
  same clients.

    python -m bench._bare PORT WORK_DIR
"""

from __future__ import annotations

import shutil
import sys
import threading
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import uvicorn  # noqa: E402
from fastapi import FastAPI, Request, UploadFile  # noqa: E402
from fastapi.responses import FileResponse  # noqa: E402

from tests.converters.runtool import run_tool  # noqa: E402

app = FastAPI()
WORK = Path()  # the WORK_DIR argument, set below
WORKERS = threading.BoundedSemaphore(2)  # conversions two at a time, as on FileKiln's two workers


@app.get("/v1/ping")
def ping() -> dict[str, str]:
    return {"id": "job_0123456789abcdef0123456789abcdef", "status": "DONE"}


@app.get("/v1/health")  # what the bench's clients open their connection with
def health() -> dict[str, str]:
    return {"status": "ok"}


@app.post("/v1/files")
def upload(file: UploadFile) -> dict[str, str]:
    file_id = uuid.uuid4().hex
    with open(WORK / file_id, "wb") as out:
        shutil.copyfileobj(file.file, out)
    return {"id": file_id}


@app.post("/v1/jobs")
def create(body: dict[str, Any], request: Request) -> dict[str, Any]:
    """The job converted before the answer, which carries its download link (as ``wait`` with
    ``include=result`` does)."""
    file_id = uuid.UUID(body["inputFileIds"][0]).hex  # a name this app gave, never a path
    out = WORK / f"{file_id}.out"
    with WORKERS:
        result = run_tool(body["tool"], [WORK / file_id], out, output_format=body["outputFormat"])
    name = result.outputs[0].name
    return {"id": file_id, "status": "DONE",
            "result": {"downloadUrl": f"{request.base_url}v1/downloads/{file_id}/{name}"}}


@app.get("/v1/downloads/{file_id}/{name}")
def download(file_id: str, name: str) -> FileResponse:
    return FileResponse(WORK / f"{uuid.UUID(file_id).hex}.out" / Path(name).name)


if __name__ == "__main__":
    WORK = Path(sys.argv[2])
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning", access_log=True,
                server_header=False, log_config=None)

"""A bare FastAPI route on uvicorn: the floor that FileKiln's own request costs are measured against.

    python -m bench._bare PORT
"""

from __future__ import annotations

import sys

import uvicorn
from fastapi import FastAPI

app = FastAPI()


@app.get("/v1/ping")
def ping() -> dict[str, str]:
    return {"id": "job_0123456789abcdef0123456789abcdef", "status": "DONE"}


if __name__ == "__main__":
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning", access_log=True,
                server_header=False, log_config=None)

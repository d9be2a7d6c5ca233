"""The conversation between a worker and its conversion child, one JSON line each way.

The child says :class:`Ready` once, when it has started and can take a job. The worker sends a
:class:`JobSpec`; the child answers with :class:`Progress` lines, then one :class:`Done` or
:class:`Failed`. Each side builds and parses them here, and nowhere else.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True)
class InputSpec:
    path: str
    format: str
    name: str


@dataclass(frozen=True)
class JobSpec:
    """One conversion: the tool, its inputs and params, where to write, and the engine's surroundings."""

    tool: str
    inputs: list[InputSpec]
    params: dict[str, Any]
    output_format: str
    out_dir: str  # inside the job's own work dir, whose ``tmp`` the job's temporary files go to (child.job_temp)
    models_dir: str | None = None
    settings: dict[str, Any] = field(default_factory=dict)
    slots: dict[str, str] = field(default_factory=dict)  # resident engine name -> this worker's slot dir
    memory_limit_mb: int = 0

    def encode(self) -> bytes:
        return json.dumps(asdict(self)).encode("utf-8") + b"\n"

    @classmethod
    def decode(cls, line: str | bytes) -> JobSpec:
        data = json.loads(line)
        data["inputs"] = [InputSpec(**item) for item in data["inputs"]]
        return cls(**data)


@dataclass(frozen=True)
class Ready:
    """The child has started (Python and the usual engines imported): a job's clock may run."""


@dataclass(frozen=True)
class Progress:
    fraction: float


@dataclass(frozen=True)
class Done:
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Failed:
    code: str  # a ConversionError code, or canceled / engine_error / out_of_memory / disk_full
    message: str


Reply = Ready | Progress | Done | Failed


def encode_reply(reply: Reply) -> str:
    if isinstance(reply, Ready):
        return json.dumps({"ready": True})
    if isinstance(reply, Progress):
        return json.dumps({"progress": reply.fraction})
    if isinstance(reply, Done):
        return json.dumps({"done": True, "notes": reply.notes})
    return json.dumps({"error": reply.code, "message": reply.message})


def decode_reply(line: str | bytes) -> Reply | None:
    """A reply, or None for a line that is not one (stray output from an engine)."""
    try:
        data = json.loads(line)
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    if "progress" in data:
        return Progress(float(data["progress"]))
    if data.get("ready"):
        return Ready()
    if data.get("done"):
        return Done([str(note) for note in data.get("notes") or []])
    if "error" in data:
        return Failed(str(data["error"]), str(data.get("message")))
    return None

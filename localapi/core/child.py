"""The child process that runs one conversion.

It reads a job spec (JSON) on stdin, runs the tool, and reports on stdout as
JSON lines: ``{"progress": f}`` while working, then ``{"done": true, "notes": [...]}``
or ``{"error": code, "message": text}``. The parent supervises it: cancel and
timeouts kill this process and everything it started.
"""

from __future__ import annotations

import errno
import json
import os
import sys
import threading
import time
import traceback
from pathlib import Path
from typing import Any

import psutil

from converters.base import Cancelled, Context, ConversionError, InputFile, ToolEnv
from converters.catalogue import load_catalogue
from converters.safety import check_input

CHILD_NICENESS = 10  # POSIX: well below the service, still above idle work


def _die_with_parent() -> None:
    """Make sure a killed supervisor (kill -9) does not leave this conversion running."""
    parent = os.getppid()
    if sys.platform.startswith("linux"):
        try:
            import ctypes
            import signal

            libc = ctypes.CDLL(None)
            libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        except OSError:
            pass

    def watch() -> None:
        while True:
            time.sleep(0.5)
            if os.getppid() != parent:
                os._exit(3)

    threading.Thread(target=watch, daemon=True, name="parent-watch").start()


def _limit_memory(megabytes: int) -> None:
    if megabytes <= 0:
        return
    try:
        import resource
    except ImportError:  # Windows: the job object limit is not set here
        return
    limit = megabytes * 1024 * 1024
    try:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    except (ValueError, OSError):
        pass


class Reporter:
    def __init__(self) -> None:
        self._last = -1.0
        self._last_time = 0.0
        self._lock = threading.Lock()

    def send(self, message: dict[str, Any]) -> None:
        with self._lock:
            sys.stdout.write(json.dumps(message) + "\n")
            sys.stdout.flush()

    def progress(self, fraction: float) -> None:
        fraction = min(max(float(fraction), 0.0), 1.0)
        t = time.monotonic()
        if fraction - self._last >= 0.01 or (fraction > self._last and t - self._last_time > 0.5):
            self._last, self._last_time = fraction, t
            self.send({"progress": round(fraction, 4)})


def _looks_like_oom(exc: BaseException) -> bool:
    """Engines written in C report a failed allocation in their own words (MuPDF: "malloc ...")."""
    text = f"{type(exc).__name__} {exc}".lower()
    return any(word in text for word in ("out of memory", "malloc", "cannot allocate", "bad_alloc", "memoryerror"))


def run(spec: dict[str, Any], reporter: Reporter) -> int:
    tool = load_catalogue().get(spec["tool"])
    if tool is None:
        reporter.send({"error": "unknown_tool", "message": f"No tool {spec['tool']!r}."})
        return 0
    env = ToolEnv(models_dir=Path(spec["modelsDir"]) if spec.get("modelsDir") else None,
                  settings=spec.get("settings") or {})
    ctx = Context(
        inputs=[InputFile(path=Path(i["path"]), format=i["format"], name=i["name"]) for i in spec["inputs"]],
        params=tool.params.model_validate(spec.get("params") or {}),
        output_format=spec["outputFormat"],
        out_dir=Path(spec["outDir"]),
        progress=reporter.progress,
        env=env,
    )
    try:
        for item in ctx.inputs:
            check_input(item.path, item.format)
        tool.run(ctx)
    except ConversionError as exc:
        reporter.send({"error": exc.code, "message": exc.message})
        return 0
    except Cancelled:
        reporter.send({"error": "canceled", "message": "The job was canceled."})
        return 0
    except OSError as exc:
        if exc.errno == errno.ENOSPC:
            reporter.send({"error": "disk_full", "message": "The disk is full; free some space and retry."})
            return 0
        traceback.print_exc()
        reporter.send({"error": "engine_error", "message": f"{type(exc).__name__}: {exc}"[:500]})
        return 0
    except MemoryError:
        reporter.send({"error": "out_of_memory", "message": "The conversion needed more memory than allowed."})
        return 0
    except Exception as exc:  # an engine bug, or an engine's own way of saying it ran out of memory
        traceback.print_exc()
        code = "out_of_memory" if _looks_like_oom(exc) else "engine_error"
        reporter.send({"error": code, "message": f"{type(exc).__name__}: {exc}"[:500]})
        return 0
    reporter.send({"done": True, "notes": ctx.notes})
    return 0


def _lower_priority() -> None:
    """Conversions yield the CPU to the API and the desktop window: a status poll or a click never waits for one.

    Everything the conversion starts (LibreOffice, a model server) inherits the priority.
    """
    me = psutil.Process()
    try:
        if sys.platform == "win32":
            me.nice(psutil.BELOW_NORMAL_PRIORITY_CLASS)
        else:
            me.nice(max(me.nice(), CHILD_NICENESS))
    except (OSError, psutil.Error):
        pass  # a sandbox may forbid it; the conversion runs at normal priority


def _warm_up() -> None:
    """Import what most jobs need while waiting for the spec: a warm child starts at once."""
    load_catalogue()
    for module in ("PIL.Image", "pymupdf"):
        try:
            __import__(module)
        except Exception:  # an optional engine may be missing; its tools say so
            pass


def main() -> int:
    """Serve jobs, one JSON line each on stdin, until stdin closes or the supervisor kills us."""
    _die_with_parent()
    _lower_priority()
    _warm_up()
    limited = False
    for line in sys.stdin:
        if not line.strip():
            continue
        spec = json.loads(line)
        if not limited:
            _limit_memory(int(spec.get("memoryLimitMb") or 0))
            limited = True
        run(spec, Reporter())
    return 0


if __name__ == "__main__":
    sys.exit(main())
